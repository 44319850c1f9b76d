"""kill -9 while a subagent runs a command, then resume: the child's unfinished call is
`outcome_unknown` and never re-run, the child task ends aborted, and the parent gets the
child's answer as lost (never replayed: no subagent runs again on resume)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from agentcli.call_records import CallStatus
from agentcli.store import queries
from agentcli.store.db import connect
from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text, tool_use
from tests.agents.conftest import agent_of_body
from tests.inprocess import decoded, run_in_process

APPEND = {"command": "echo ran >> log.txt"}
AGENTCLI = [sys.executable, "-m", "agentcli"]


def test_killed_during_a_subagents_command_then_resumed(workspace: Path) -> None:
    with FakeMessagesServer() as server:
        server.push(
            stream_message(
                [tool_use("agent", {"description": "append", "prompt": "append a line"}, id="p1")]
            ),
            stream_message([tool_use("shell", APPEND, id="c1")]),
        )
        env = {
            **os.environ,
            "ANTHROPIC_BASE_URL": server.base_url,
            "ANTHROPIC_API_KEY": "test",
            "AGENTCLI_FAULT": "after_effect:shell",
        }
        process = subprocess.run(
            [*AGENTCLI, "run", "-C", str(workspace), "--permission-mode", "yolo", "do the work"],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert process.returncode == -signal.SIGKILL, process.stderr
        assert (workspace / "log.txt").read_text() == "ran\n"
        (session,) = queries.list_sessions(connect(), str(workspace.resolve()))
        child_request = server.requests[1].body
        assert agent_of_body(child_request) == "general"
        # The child's request: the delegation prompt alone.
        (only,) = child_request["messages"]
        assert [block["text"] for block in only["content"]] == ["append a line"]

        server.push(stream_message([text("done")]))
        resumed = decoded(
            run_in_process(
                *("run", "-C", str(workspace), "--permission-mode", "yolo"),
                *("--resume", session.id, "continue"),
                cwd=workspace,
                env={"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test"},
            )
        )
        assert resumed.returncode == 0, resumed.stderr
        assert server.pairing_problems() == []
        assert len(server.requests) == 3  # no subagent ran again
        repaired = {
            block["tool_use_id"]: block
            for message in server.requests[2].body["messages"]
            for block in message["content"]
            if isinstance(block, dict) and block.get("type") == "tool_result"
        }
    assert "subagent interrupted" in resumed.stderr or "answer lost" in resumed.stderr
    assert (workspace / "log.txt").read_text() == "ran\n"  # never re-run
    lost = repaired["p1"]
    assert lost["is_error"] and "Its answer was lost and it was NOT re-run" in lost["content"]
    conn = connect()
    calls = {c.call_id: c for c in queries.load_calls(conn, session.id)}
    assert calls["c1"].status is CallStatus.OUTCOME_UNKNOWN
    assert calls["p1"].status is CallStatus.OUTCOME_UNKNOWN
    (child,) = queries.load_child_tasks(conn, session.id)
    assert (child.state, child.reason, child.parent_call_id) == ("aborted", "interrupted", "p1")
    assert calls["c1"].task_id == child.id
