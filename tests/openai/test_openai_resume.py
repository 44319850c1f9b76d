"""Resuming a session on an OpenAI-compatible server goes back to the server it ran at: the
session records the base URL (never the key), and a resume that is not told otherwise uses it.
In-process, against two fake Chat Completions servers."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentcli.session.records import export
from agentcli.testing.fake_openai import FakeChatServer, chat_stream
from tests.inprocess import decoded, run_in_process


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeChatServer, FakeChatServer]]:
    """The server a session starts at (OPENAI_BASE_URL), and another one that stands for every
    other place a resume could send the conversation, the default (OpenAI's) included."""
    with FakeChatServer() as first, FakeChatServer() as elsewhere:
        monkeypatch.setenv("OPENAI_BASE_URL", first.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setattr("agentcli.provider.OPENAI_DEFAULT_BASE_URL", elsewhere.base_url)
        yield first, elsewhere


def start_session(server: FakeChatServer, workspace: Path) -> str:
    server.push(chat_stream("The codeword is noted."))
    done = decoded(
        run_in_process(
            *("run", "--provider", "openai", "-m", "fake-model", "--output-format", "json"),
            "the codeword is PELICAN",
            cwd=workspace,
        )
    )
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["session_id"])


def continue_session(workspace: Path) -> tuple[int, str]:
    """`agentcli run --continue "again"`: no --provider, no -m, no base URL named."""
    done = decoded(
        run_in_process("run", "--continue", "again", "--output-format", "json", cwd=workspace)
    )
    assert json.loads(done.stdout)["final_text"] == "PELICAN.", done.stdout + done.stderr
    return done.returncode, done.stderr


def test_continue_goes_back_to_the_recorded_server_when_none_is_named_now(
    servers: tuple[FakeChatServer, FakeChatServer],
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, elsewhere = servers
    session = start_session(first, workspace)
    monkeypatch.delenv("OPENAI_BASE_URL")
    first.push(chat_stream("PELICAN."))
    code, err = continue_session(workspace)
    assert code == 0
    assert elsewhere.requests == []  # the transcript went nowhere else
    recorded = export(session)["session"]["settings"]
    assert recorded["base_url"] == first.base_url and "test-key" not in json.dumps(recorded)
    assert [m["content"] for m in first.requests[1].body["messages"][1:]] == [
        "the codeword is PELICAN",
        "The codeword is noted.",
        "again",
    ]
    assert "continues at" not in err


def test_a_server_named_now_is_used_and_the_move_is_said(
    servers: tuple[FakeChatServer, FakeChatServer],
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, elsewhere = servers
    session = start_session(first, workspace)
    monkeypatch.setenv("OPENAI_BASE_URL", elsewhere.base_url)
    elsewhere.push(chat_stream("PELICAN."))
    code, err = continue_session(workspace)
    assert code == 0 and len(first.requests) == 1 and len(elsewhere.requests) == 1
    assert (
        f"this session ran at {first.base_url}; it continues at {elsewhere.base_url} "
        "(OPENAI_BASE_URL), which is sent the whole conversation"
    ) in err
    # Where the conversation went last is where the next resume goes.
    assert export(session)["session"]["settings"]["base_url"] == elsewhere.base_url


def test_a_config_file_base_url_does_not_move_a_resumed_session(
    servers: tuple[FakeChatServer, FakeChatServer],
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, elsewhere = servers
    start_session(first, workspace)
    monkeypatch.delenv("OPENAI_BASE_URL")
    config = Path(os.environ["AGENTCLI_CONFIG_DIR"]) / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'base_url = "{elsewhere.base_url}"\n')
    first.push(chat_stream("PELICAN."))
    code, _err = continue_session(workspace)
    assert code == 0 and elsewhere.requests == [] and len(first.requests) == 2


def test_the_recorded_url_holds_no_credential() -> None:
    from agentcli.provider import recordable_url

    assert recordable_url("https://user:secret@models.example:8443/v1/") == (
        "https://models.example:8443/v1"
    )
    assert recordable_url("http://[::1]:9/v1") == "http://[::1]:9/v1"


def test_a_config_url_with_a_password_for_the_recorded_server_is_kept(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentcli.config import load_settings
    from agentcli.session.openai_model import session_base_url

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    config = Path(os.environ["AGENTCLI_CONFIG_DIR"]) / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('provider = "openai"\nbase_url = "https://me:pw@models.example/v1"\n')
    settings = load_settings(workspace)
    # The session recorded the server without the password: it is the same server.
    same = {"provider": "openai", "base_url": "https://models.example/v1"}
    assert session_base_url(settings, same) == (settings, None)
    other = {"provider": "openai", "base_url": "https://other.example/v1"}
    kept, moved = session_base_url(settings, other)
    assert kept.base_url == "https://other.example/v1" and moved is None
