"""Black-box: a session is used by one live `agentcli` process at a time.

A real `agentcli run` is stopped inside a shell command (its call is journaled `started` and is
really running). `run --continue`, `run --resume ID` and `undo` against that session must fail at
once with exit code 2 and one line naming the session and the holder's pid, and must leave the
journal exactly as it was: crash recovery would otherwise mark the running call
`outcome_unknown` and write a second conversation into the first.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcli.store.db import connect
from agentcli.testing.fake_api import FakeMessagesServer, stream_message, tool_use

AGENTCLI = [sys.executable, "-m", "agentcli"]
SLOW = {"command": "echo $$ > pid.txt; sleep 60"}


def env_for(server: FakeMessagesServer) -> dict[str, str]:
    return {**os.environ, "ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test"}


@pytest.fixture
def busy_run(workspace: Path) -> Iterator[subprocess.Popen[str]]:
    """`agentcli run` in the middle of a shell command, until the test ends."""
    with FakeMessagesServer() as server:
        server.push(stream_message([tool_use("shell", SLOW, id="s1")]))
        process = subprocess.Popen(
            [*AGENTCLI, "run", "-C", str(workspace), "--permission-mode", "yolo", "do the work"],
            env=env_for(server),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 30
            while not (workspace / "pid.txt").is_file() or not (workspace / "pid.txt").read_text():
                assert process.poll() is None and time.monotonic() < deadline
                time.sleep(0.02)
            yield process
        finally:
            process.kill()
            process.communicate(timeout=30)
            try:  # the command's own process group outlives agentcli
                os.killpg(int((workspace / "pid.txt").read_text()), signal.SIGKILL)
            except (ProcessLookupError, ValueError, FileNotFoundError):
                pass


def journal_state() -> dict[str, list[tuple[Any, ...]]]:
    conn = connect()
    return {
        table: [tuple(row) for row in conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2")]
        for table in ("sessions", "messages", "tasks", "tool_calls", "idempotency", "checkpoints")
    }


def test_a_session_in_use_is_refused_and_left_untouched(
    busy_run: subprocess.Popen[str], workspace: Path
) -> None:
    before = journal_state()
    ((session_id, *_),) = before["sessions"]
    assert [(row[1], row[6]) for row in before["tool_calls"]] == [("s1", "started")]
    expected = (
        f"agentcli: error: session {session_id} is in use by another agentcli process "
        f"(pid {busy_run.pid}); wait for it to finish, or start a new session\n"
    )
    attempts = (
        ["run", "--continue", "go on"],
        ["run", "--resume", session_id[:12], "go on"],
        ["undo"],
    )
    with FakeMessagesServer() as server:  # nothing may reach it
        for args in attempts:
            refused = subprocess.run(
                [*AGENTCLI, *args],
                cwd=workspace,
                env=env_for(server),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert (refused.returncode, refused.stderr, refused.stdout) == (2, expected, ""), args
        as_json = subprocess.run(
            [*AGENTCLI, "run", "--continue", "go on", "--output-format", "json"],
            cwd=workspace,
            env=env_for(server),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (as_json.returncode, as_json.stderr) == (2, expected)
        result = json.loads(as_json.stdout)  # the one result object, nothing else
        assert (result["terminal_reason"], result["error"]) == ("usage_error", expected[17:-1])
        assert server.requests == []
    assert journal_state() == before
    assert busy_run.poll() is None  # the holder never noticed
