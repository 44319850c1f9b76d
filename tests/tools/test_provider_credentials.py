"""A provider's key is agentcli's own once a session sends it to a model server: no program
agentcli starts sees it, confined or not (issue 20, as ANTHROPIC_API_KEY always is). On the
Anthropic provider `OPENAI_API_KEY` may be the user's own program's key, and an unconfined
command keeps it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentcli.config import flags_of, load_settings
from agentcli.environment import scrubbed, without_own_credentials
from agentcli.owngit.command import environment as git_environment
from agentcli.session.openai_model import openai_factory
from agentcli.settings import Settings

ECHO = 'echo "openai=${OPENAI_API_KEY:-unset}"'


def openai_settings(tmp_path: Path) -> Settings:
    return load_settings(tmp_path, flags=flags_of(provider="openai", model="local-model"))


async def test_on_the_anthropic_provider_an_unconfined_command_keeps_the_users_key(
    harness: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-users-own")
    record = await harness.call("shell", command=ECHO)
    assert "openai=sk-users-own" in record.result_text


async def test_on_the_openai_provider_no_program_agentcli_starts_sees_the_key(
    harness: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-sent-to-the-server")
    openai_factory(openai_settings(tmp_path), resumed=False)
    record = await harness.call("shell", command=ECHO)  # yolo: unconfined
    assert "openai=unset" in record.result_text
    assert "OPENAI_API_KEY" not in without_own_credentials({"OPENAI_API_KEY": "x"})
    assert "OPENAI_API_KEY" not in git_environment("/tmp/git-dir")
    # Not even when the user's config keeps `*_API_KEY` variables for sandboxed commands.
    assert scrubbed({"OPENAI_API_KEY": "x"}, keep=["OPENAI_API_KEY"]) == {}
