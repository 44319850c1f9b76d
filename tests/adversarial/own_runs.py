"""Running agentcli in-process against the fake Messages API for the class 7 and 8 tests
(issue 26): a workspace whose pipes are released at teardown, and what the model was sent."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcli.testing.fake_api import FakeMessagesServer
from tests.adversarial.own_files import release_fifos
from tests.inprocess import decoded, run_in_process


@pytest.fixture
def server() -> Iterator[FakeMessagesServer]:
    with FakeMessagesServer() as fake:
        yield fake


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Path]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    yield workspace
    release_fifos(tmp_path)


def cli(*args: str, server: FakeMessagesServer, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "sk-ant-test-key"}
    return decoded(run_in_process(*args, cwd=cwd, env=env))


def sent(server: FakeMessagesServer) -> str:
    return "\n".join(json.dumps(r.body, ensure_ascii=False) for r in server.requests)


def system_of(server: FakeMessagesServer) -> str:
    return json.dumps(server.requests[0].body["system"], ensure_ascii=False)


def one_result(out: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return data
