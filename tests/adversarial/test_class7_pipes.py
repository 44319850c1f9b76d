"""Class 7b (issue 26, its class 2): a file that is no regular file never blocks agentcli.

`mkfifo pipe.txt` (a sandboxed command can) then `read_file pipe.txt`: opening a pipe to read
blocks until a writer comes, so agentcli never finished, and ignored `--timeout`, SIGTERM and
SIGINT. `read_file`, `write_file`, `edit_file` and a `grep` naming the pipe must get a typed tool
error and the task go on; `glob` lists it as a name. The original report runs on the real binary
(with `AGENTS.md -> /proc/self/environ` too: the API key must not reach the model).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text, tool_use
from tests.adversarial.lab import Lab, call, run_members
from tests.adversarial.own_files import release_fifos
from tests.adversarial.own_runs import cli, one_result, server, ws

__all__ = ["server", "ws"]  # fixtures


FIFO_CALLS = [
    ("read_file", {"path": "pipe.txt"}),
    ("write_file", {"path": "pipe.txt", "content": "x\n"}),
    ("edit_file", {"path": "pipe.txt", "old_string": "a", "new_string": "b"}),
    ("grep", {"pattern": "x", "path": "pipe.txt"}),
    ("glob", {"pattern": "*.txt"}),
]


@pytest.mark.timeout(30, method="signal")
@pytest.mark.parametrize(("tool", "inputs"), FIFO_CALLS, ids=[t for t, _ in FIFO_CALLS])
def test_a_named_pipe_gets_a_tool_error_and_the_task_goes_on(
    server: FakeMessagesServer, ws: Path, tool: str, inputs: dict[str, Any]
) -> None:
    os.mkfifo(ws / "pipe.txt")
    (ws / "a.txt").write_text("x\n")
    server.push(
        stream_message([tool_use(tool, inputs, id="t1")]),
        stream_message([text("done")]),
    )
    proc = cli(
        *("run", "look", "--permission-mode", "accept-edits", "--timeout", "60"),
        *("--output-format", "json"),
        server=server,
        cwd=ws,
    )
    assert proc.returncode == 0, proc.stderr
    result = one_result(proc.stdout)
    assert result["terminal_reason"] == "completed"
    (call_record,) = result["tool_calls"]
    if tool == "glob":  # listing names opens nothing: the pipe is a name like any other
        assert call_record["status"] == "succeeded"
        return
    assert call_record["is_error"], call_record
    seen = server.requests[1].body["messages"][-1]["content"][0]
    assert "pipe.txt" in json.dumps(seen) and "named pipe" in json.dumps(seen), seen


def _environ_and_fifo(root: Path) -> dict[str, Any]:
    lab = Lab(root)
    (lab.ws / "AGENTS.md").symlink_to("/proc/self/environ")
    os.mkfifo(lab.ws / "pipe.txt")
    try:
        return run_members(
            lab,
            "read-only",
            [[call("read-fifo", "read_file", path="pipe.txt")]],
            extra_args=["--timeout", "20"],
        )
    finally:
        release_fifos(lab.ws)


@pytest.mark.timeout(120)
def test_the_real_binary_sends_no_environment_and_ends_after_a_fifo(tmp_path: Path) -> None:
    outcome = _environ_and_fifo(tmp_path)
    (run,) = outcome["runs"]
    assert run["returncode"] == 0, run["stderr"]
    assert outcome["request_leaks"] == [], outcome["request_leaks"]
    assert "AGENTS.md skipped" in run["stderr"]
    member = outcome["members"]["read-fifo"]
    assert member["status"] == "failed" and "named pipe" in member["result"], member
