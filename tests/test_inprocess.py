"""The in-process runner (`tests.inprocess`) stands in for the binary: the same run gives the
same output both ways, and what a run changes in the test process is put back or fails."""

from __future__ import annotations

import gc
import json
import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text, tool_use
from tests.inprocess import process_state
from tests.test_cli_run import agentcli, cli

VARYING = {"session_id", "task_id", "timestamp", "duration_ms", "duration_s", "duration_api_ms"}
VARYING |= {"duration_api_s", "cwd", "id", "elapsed_s"}


@pytest.fixture
def server() -> Iterator[FakeMessagesServer]:
    with FakeMessagesServer() as fake:
        yield fake
        assert fake.pairing_problems() == []


def stable_text(text: str) -> str:
    """`text` with times shown (`0.01s`) made equal."""
    return re.sub(r"\d+\.\d+s\b", "N.NNs", text)


def stable(value: Any) -> Any:
    """`value` without what differs between two runs (ids, times, the workspace's path)."""
    if isinstance(value, dict):
        return {k: stable(v) for k, v in value.items() if k not in VARYING}
    if isinstance(value, list):
        return [stable(v) for v in value]
    return value


def test_a_run_in_process_prints_what_the_binary_prints(
    server: FakeMessagesServer, tmp_path: Path
) -> None:
    outputs = []
    for run in (agentcli, cli):
        workspace = tmp_path / run.__name__
        workspace.mkdir()
        (workspace / "a.py").write_text("print('hi')\n")
        server.push(
            stream_message([text("Reading."), tool_use("read_file", {"path": "a.py"}, id="t1")]),
            stream_message([text("It prints hi.")]),
        )
        done = run(
            "run", "what is a.py", "--output-format", "stream-json", server=server, cwd=workspace
        )
        assert done.returncode == 0, done.stderr
        outputs.append(
            (
                [stable(json.loads(line)) for line in done.stdout.splitlines()],
                stable_text(done.stderr),
            )
        )
    (binary_events, binary_err), (events, err) = outputs
    assert events == binary_events
    assert err == binary_err
    assert events[-1]["type"] == "result" and events[-1]["final_text"] == "It prints hi."


def test_what_a_run_changes_in_the_process_is_put_back(
    server: FakeMessagesServer, workspace: Path
) -> None:
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    environ, cwd = dict(os.environ), Path.cwd()
    server.push(stream_message([text("one")]), stream_message([text("two")]))
    first = cli("run", "hi", "--output-format", "json", server=server, cwd=workspace)
    # `run` leaves SIGINT and SIGTERM ending the process at once, and holds its session's lock
    # until the process exits: a process ends there, the test process goes on as it was.
    assert {sig: signal.getsignal(sig) for sig in handlers} == handlers
    assert dict(os.environ) == environ and Path.cwd() == cwd
    assert gc.isenabled() and gc.get_freeze_count() == 0
    second = cli(
        "run", "--continue", "again", "--output-format", "json", server=server, cwd=workspace
    )
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["session_id"] == json.loads(first.stdout)["session_id"]


def test_a_change_that_cannot_be_put_back_fails_the_test(workspace: Path) -> None:
    umask = os.umask(0o022)
    os.umask(umask)
    try:
        with pytest.raises(AssertionError, match="umask"), process_state(workspace, {}, b""):
            os.umask(0o077 if umask != 0o077 else 0o022)
    finally:
        os.umask(umask)
