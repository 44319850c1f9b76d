"""kill -9 during a compaction, for real: the `agentcli` binary against the fake Messages API is
killed while its summary request is out (from outside), and right after the compaction is
journaled (`AGENTCLI_FAULT=after_record:compaction`). Resumed, the session goes on from before
the compaction or from after it, never from half of one: the journal has the whole record or
none, and what is sent follows it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from agentcli.compaction_record import SUMMARY_HEADER
from agentcli.messages import pairing_problems
from agentcli.store.db import connect
from agentcli.store.queries import list_sessions, load_compactions
from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text
from agentcli.testing.fake_responses import HangResponse, RecordedRequest
from tests.inprocess import decoded, run_in_process
from tests.long.test_long_sessions import TASK, Script, anthropic_answer, files

AGENTCLI = [sys.executable, "-m", "agentcli"]
WINDOW = 12_000


def prepare(workspace: Path) -> None:
    files(workspace, 12)
    (workspace / ".agentcli").mkdir()
    (workspace / ".agentcli" / "config.toml").write_text(
        f"[context]\nwindow_tokens = {WINDOW}\nelide_at = 0.95\nkeep_recent = 2\n"
    )


def start(server: FakeMessagesServer, workspace: Path, fault: str | None) -> subprocess.Popen[str]:
    env = {**os.environ, "ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test"}
    env.pop("AGENTCLI_FAULT", None)
    if fault:
        env["AGENTCLI_FAULT"] = fault
    return subprocess.Popen(
        [*AGENTCLI, "run", "-C", str(workspace), "--permission-mode", "yolo", TASK],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def resume(server: FakeMessagesServer, workspace: Path, session: str) -> dict[str, Any]:
    """`run --resume ID "go on"`, answered `fine`; the request it sent."""
    server.responder = None
    server.push(stream_message([text("fine")], model="claude-opus-5-5"))
    env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test"}
    done = decoded(
        run_in_process(
            *("run", "-C", str(workspace), "--resume", session, "go on"),
            cwd=workspace,
            env={**env, "AGENTCLI_FAULT": None},
        )
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "fine\n"
    body: dict[str, Any] = server.requests[-1].body
    assert pairing_problems(body["messages"]) == []
    return body


def opening(body: dict[str, Any]) -> str:
    first = body["messages"][0]["content"]
    return first if isinstance(first, str) else first[0].get("text", "")


def only_session(workspace: Path) -> str:
    (row,) = list_sessions(connect(), str(workspace.resolve()))
    return row.id


def test_killed_while_the_summary_request_is_out_resumes_from_before(workspace: Path) -> None:
    prepare(workspace)
    script = Script(12, anthropic_answer)

    def hang_on_summaries(request: RecordedRequest) -> Any:
        answer = script(request)
        return HangResponse(30.0) if script.summaries else answer

    with FakeMessagesServer() as server:
        server.responder = hang_on_summaries
        process = start(server, workspace, fault=None)
        deadline = time.monotonic() + 60
        while not script.summaries and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert script.summaries, process.communicate(timeout=5)
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)
        session = only_session(workspace)
        assert load_compactions(connect(), session) == []
        body = resume(server, workspace, session)
    # Before: the history as it was (the task's own prompt first), no summary.
    assert opening(body).startswith(TASK)
    assert SUMMARY_HEADER not in json.dumps(body)


def test_killed_right_after_the_record_resumes_from_after(workspace: Path) -> None:
    prepare(workspace)
    script = Script(12, anthropic_answer)
    with FakeMessagesServer() as server:
        server.responder = script
        process = start(server, workspace, fault="after_record:compaction")
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == -signal.SIGKILL, stderr
        assert len(script.summaries) == 1
        session = only_session(workspace)
        (record,) = load_compactions(connect(), session)
        body = resume(server, workspace, session)
    assert opening(body).startswith(SUMMARY_HEADER)
    assert f"<summary>\n{record.summary}\n</summary>" in opening(body)
