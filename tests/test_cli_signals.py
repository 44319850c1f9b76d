"""A second SIGINT quits `agentcli run` at once, and still leaves no command running."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentcli.testing.fake_api import FakeMessagesServer, HangResponse, stream_message, tool_use
from agentcli.tools.process_group import group_alive
from tests.test_cli_run import cli_env


@pytest.fixture
def server() -> Iterator[FakeMessagesServer]:
    with FakeMessagesServer() as fake:
        yield fake


def wait_for(path: Path, seconds: float = 30) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


def test_a_second_sigint_exits_at_once_and_kills_the_running_command(
    server: FakeMessagesServer, workspace: Path
) -> None:
    # The command ignores SIGTERM (and its sleep inherits that), so only the SIGKILL at the end
    # of the graceful stop would end it: the forced exit must not skip it.
    command = "trap '' TERM INT; echo $$ > pgid; sleep 60"
    server.push(stream_message([tool_use("shell", {"command": command})]), HangResponse(30))
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentcli", "run", "go", "--permission-mode", "yolo", "-q"],
        cwd=workspace,
        env=cli_env(server),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        pgid = int(wait_for(workspace / "pgid"))
        assert group_alive(pgid)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.05)  # well inside the 0.5 s the first signal's graceful stop waits
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)
    finally:
        proc.kill()
        proc.communicate()
    assert proc.returncode == 130
    deadline = time.monotonic() + 30  # bounds a hang; a dead group ends the wait at once
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not group_alive(pgid), "the command's process group outlived agentcli"
