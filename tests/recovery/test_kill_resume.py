"""kill -9 for real: the `agentcli` binary, against the fake Messages API, is killed at each
interesting point of a call's life, then resumed with `run --resume ID "continue"`.

After every resume: no record is lost (every call has a final status in the journal), no side
effect happened twice (files and an append-only log are checked), and every request the model
received had each `tool_use` answered by exactly one `tool_result`.

The precise kill points come from `AGENTCLI_FAULT` (see `agentcli.store.faults`); the mid-command
kill is a real SIGKILL from outside while the shell command runs. The resume runs in-process
(`tests.inprocess`): what it reads is what the killed process left on disk.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agentcli.call_records import CallStatus
from agentcli.store import queries
from agentcli.store.db import connect
from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text, tool_use
from tests.inprocess import decoded, run_in_process

AGENTCLI = [sys.executable, "-m", "agentcli"]
WRITE = {"path": "out.txt", "content": "hello\n"}
APPEND = {"command": "echo ran >> log.txt"}


def start(
    server: FakeMessagesServer, workspace: Path, *args: str, fault: str | None = None
) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "ANTHROPIC_BASE_URL": server.base_url,
        "ANTHROPIC_API_KEY": "test",
    }
    env.pop("AGENTCLI_FAULT", None)
    if fault:
        env["AGENTCLI_FAULT"] = fault
    command = [*AGENTCLI, "run", "-C", str(workspace), "--permission-mode", "yolo", *args]
    return subprocess.Popen(
        command,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def crash(server: FakeMessagesServer, workspace: Path, fault: str) -> str:
    """Run the first task until the fault kills it; return its session id."""
    process = start(server, workspace, "do the work", fault=fault)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL, stderr
    (session,) = queries.list_sessions(connect(), str(workspace.resolve()))
    return session.id


def resume(server: FakeMessagesServer, workspace: Path, session_id: str | None) -> str:
    """`run --resume ID "continue"` (`--continue` without an id), in text mode (notices on
    stderr); return stderr."""
    which = ["--resume", session_id] if session_id else ["--continue"]
    env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test"}
    done = decoded(
        run_in_process(
            *("run", "-C", str(workspace), "--permission-mode", "yolo", *which, "continue"),
            cwd=workspace,
            env={**env, "AGENTCLI_FAULT": None},
        )
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done\n"
    assert "the previous run of this session was interrupted; recovered it:" in done.stderr
    return done.stderr


def repaired_results(server: FakeMessagesServer, request: int) -> dict[str, dict[str, Any]]:
    """The tool_result blocks the model got for the interrupted response."""
    messages = server.requests[request].body["messages"]
    return {
        block["tool_use_id"]: block
        for message in messages
        for block in message["content"]
        if block.get("type") == "tool_result"
    }


def assert_journal_complete(session_id: str) -> dict[str, CallStatus]:
    conn = connect()
    calls = {c.call_id: c.status for c in queries.load_calls(conn, session_id)}
    assert not {CallStatus.PROPOSED, CallStatus.STARTED} & set(calls.values())
    tasks = queries.load_tasks(conn, session_id)
    assert [(t.state, t.reason) for t in tasks] == [
        ("aborted", "interrupted"),
        ("unverified", "completed"),
    ]
    return calls


def test_killed_before_the_start_is_recorded(workspace: Path) -> None:
    with FakeMessagesServer() as server:
        server.push(
            stream_message(
                [tool_use("write_file", WRITE, id="w1"), tool_use("shell", APPEND, id="s1")]
            )
        )
        session = crash(server, workspace, "before_start:shell")
        assert (workspace / "out.txt").read_text() == "hello\n"
        assert not (workspace / "log.txt").exists()
        server.push(
            stream_message([tool_use("shell", APPEND, id="s2")]),
            stream_message([text("done")]),
        )
        told = resume(server, workspace, session)
        assert "s1: never started (not executed)" in told
        results = repaired_results(server, 1)
        assert not results["w1"].get("is_error") and "created out.txt" in results["w1"]["content"]
        assert results["s1"]["is_error"] and "[not_executed]" in results["s1"]["content"]
        assert server.pairing_problems() == []
    assert (workspace / "log.txt").read_text() == "ran\n"  # once: the retry, never the original
    calls = assert_journal_complete(session)
    assert calls == {
        "w1": CallStatus.SUCCEEDED,
        "s1": CallStatus.NOT_EXECUTED,
        "s2": CallStatus.SUCCEEDED,
    }


def test_killed_after_the_start_before_the_effect(workspace: Path) -> None:
    with FakeMessagesServer() as server:
        server.push(stream_message([tool_use("write_file", WRITE, id="w1")]))
        session = crash(server, workspace, "after_start:write_file")
        assert not (workspace / "out.txt").exists()
        server.push(
            stream_message([tool_use("write_file", WRITE, id="w2")]),
            stream_message([text("done")]),
        )
        resume(server, workspace, session)
        reconciled = repaired_results(server, 1)["w1"]
        assert reconciled["is_error"] and "still does not exist" in reconciled["content"]
        assert server.pairing_problems() == []
    assert (workspace / "out.txt").read_text() == "hello\n"
    calls = assert_journal_complete(session)
    assert calls == {"w1": CallStatus.NOT_EXECUTED, "w2": CallStatus.SUCCEEDED}


def test_killed_after_the_effect_before_the_result_is_recorded(workspace: Path) -> None:
    with FakeMessagesServer() as server:
        server.push(
            stream_message(
                [tool_use("write_file", WRITE, id="w1"), tool_use("shell", APPEND, id="s1")]
            )
        )
        session = crash(server, workspace, "after_effect:shell")
        assert (workspace / "log.txt").read_text() == "ran\n"
        server.push(stream_message([text("done")]))
        resume(server, workspace, session)
        results = repaired_results(server, 1)
        assert "created out.txt" in results["w1"]["content"]
        assert results["s1"]["is_error"] and "outcome is unknown" in results["s1"]["content"]
        assert "NOT re-run" in results["s1"]["content"]
        assert server.pairing_problems() == []
    assert (workspace / "log.txt").read_text() == "ran\n"  # recovery did not run it again
    calls = assert_journal_complete(session)
    assert calls == {"w1": CallStatus.SUCCEEDED, "s1": CallStatus.OUTCOME_UNKNOWN}


def test_a_write_that_happened_is_reconciled_as_succeeded(workspace: Path) -> None:
    with FakeMessagesServer() as server:
        server.push(stream_message([tool_use("write_file", WRITE, id="w1")]))
        session = crash(server, workspace, "after_effect:write_file")
        server.push(stream_message([text("done")]))
        resume(server, workspace, session)
        reconciled = repaired_results(server, 1)["w1"]
        assert not reconciled.get("is_error") and "took effect" in reconciled["content"]
        assert server.pairing_problems() == []
    assert_journal_complete(session)


def test_killed_in_the_middle_of_a_shell_command(workspace: Path) -> None:
    slow = {"command": "echo $$ > pid.txt; echo start >> log.txt; sleep 30; echo end >> log.txt"}
    with FakeMessagesServer() as server:
        server.push(stream_message([tool_use("shell", slow, id="s1")]))
        process = start(server, workspace, "do the work")
        deadline = time.monotonic() + 30
        while "start" not in _read(workspace / "log.txt"):
            assert time.monotonic() < deadline, process.stderr.read() if process.stderr else ""
            time.sleep(0.02)
        process.kill()
        process.communicate(timeout=30)
        try:  # the command's own process group outlives agentcli; end it like a reboot would
            os.killpg(int((workspace / "pid.txt").read_text()), signal.SIGKILL)
        except ProcessLookupError:
            pass
        (session,) = queries.list_sessions(connect(), str(workspace.resolve()))
        server.push(stream_message([text("done")]))
        resume(server, workspace, None)  # the latest session in this workspace
        result = repaired_results(server, 1)["s1"]
        assert result["is_error"] and "outcome is unknown" in result["content"]
        assert server.pairing_problems() == []
    assert _read(workspace / "log.txt") == "start\n"
    assert assert_journal_complete(session.id) == {"s1": CallStatus.OUTCOME_UNKNOWN}


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


@pytest.mark.parametrize(("transport", "first_import"), [("http", "httpx2"), ("sdk", "anthropic")])
def test_killed_while_the_client_loads_keeps_the_session_and_the_prompt(
    workspace: Path, tmp_path: Path, transport: str, first_import: str
) -> None:
    """The model client's imports take time (the SDK's, seconds); a kill during them must not
    lose the task. A package that blocks on import stands in for the first one the transport
    makes: once its import has begun, the session and the prompt must already be journaled."""
    package = tmp_path / "slow-sdk" / first_import
    package.mkdir(parents=True)
    began, never = tmp_path / "import-began", tmp_path / "never-written"
    os.mkfifo(never)
    (package / "__init__.py").write_text(
        f"open({str(began)!r}, 'w').close()\nopen({str(never)!r}).read()\n"
    )
    with FakeMessagesServer() as server:
        process = subprocess.Popen(
            [*AGENTCLI, "run", "-C", str(workspace), "remember this prompt"],
            env={
                **os.environ,
                "ANTHROPIC_BASE_URL": server.base_url,
                "ANTHROPIC_API_KEY": "test",
                "AGENTCLI_TRANSPORT": transport,
                # Before this checkout (conftest's PYTHONPATH), so the stand-in is found first.
                "PYTHONPATH": os.pathsep.join((str(package.parent), os.environ["PYTHONPATH"])),
            },
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 60  # a bound on a hang, not a timing assertion
            while not began.exists() and process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
            assert began.exists(), process.communicate(timeout=5)
        finally:
            process.kill()
            process.communicate(timeout=30)
        assert server.requests == []
        (session,) = queries.list_sessions(connect(), str(workspace.resolve()))
        prompts = [m.text for m in queries.load_messages(connect(), session.id)]
        assert prompts == ["remember this prompt"]

        server.push(stream_message([text("done")]))
        resume(server, workspace, session.id)
        sent = server.requests[0].body["messages"]
        assert "remember this prompt" in str(sent[0])
