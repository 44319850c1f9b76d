"""MCP calls are external side effects: journaled `started` before they run, and after a crash
their outcome is unknown and they are never re-run by the resume.

The crash is real: the `agentcli` binary (against the fake Messages API, with the demo server)
is killed with SIGKILL at a fault point of the call's life; the session is then resumed
in-process."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

from agentcli.call_records import CallStatus
from agentcli.events import Event
from agentcli.session.options import SessionOptions
from agentcli.store import queries
from agentcli.store.db import connect
from agentcli.testing import ScriptedModel, respond, text
from agentcli.testing.fake_api import FakeMessagesServer, stream_message, tool_use
from agentcli.ui.run import open_run_session
from tests.mcp.conftest import DEMO, stdio, write_servers


def test_an_interrupted_mcp_call_is_never_run_again(workspace: Path) -> None:
    """Killed after the server did the work, before the result was recorded (the kill points
    before that are the same code path for every tool: `tests/recovery`). The workspace is
    trusted, so the server runs in it and its file lands there."""
    touched = "touched\n"
    config = write_servers(workspace.parent / "servers.json", {"demo": stdio(DEMO)})
    made = workspace / "made.txt"
    with FakeMessagesServer() as server:
        server.push(stream_message([tool_use("mcp__demo__touch", {"name": "made.txt"}, id="t1")]))
        env = {
            **os.environ,
            "ANTHROPIC_BASE_URL": server.base_url,
            "ANTHROPIC_API_KEY": "test",
            "AGENTCLI_FAULT": "after_effect:mcp__demo__touch",
        }
        done = subprocess.run(
            [sys.executable, "-m", "agentcli", "run", "-C", str(workspace), "--mcp-config",
             str(config), "--allow", "mcp__demo__*", "--trust-project", "touch it"],
            env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == -signal.SIGKILL, done.stderr
    assert made.read_text() == touched
    (session,) = queries.list_sessions(connect(), str(workspace.resolve()))
    calls = {c.call_id: c for c in queries.load_calls(connect(), session.id)}
    assert calls["t1"].status is CallStatus.STARTED  # journaled before it ran
    assert calls["t1"].risk == "external"

    model = ScriptedModel([respond(text("done"))])
    events: list[Event] = []
    options = SessionOptions(
        task="continue", cwd=workspace, resume=session.id, mcp_config=[config],
        allow=["mcp__demo__*"], trust_project=True,
    )  # fmt: skip
    manager = open_run_session(options, events.append, model_factory=lambda _name: model)
    asyncio.run(manager.run_task("continue"))
    sent = [
        block
        for message in model.requests[0].messages
        for block in message.content
        if getattr(block, "tool_use_id", None) == "t1"
    ]
    (result,) = sent
    assert result.is_error and "outcome is unknown" in result.content
    assert "NOT re-run" in result.content
    assert made.read_text() == touched  # not run again
    status = {c.call_id: c.status for c in queries.load_calls(connect(), session.id)}
    assert status["t1"] is CallStatus.OUTCOME_UNKNOWN
