"""`agentcli sessions list|show|export` and their start-up promise (no model SDK import)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentcli.call_records import CallStatus, ToolCallRecord
from agentcli.errors import UsageError
from agentcli.messages import Message
from agentcli.session.opening import find_resumed
from agentcli.store.sqlite import SqliteJournal
from agentcli.testing import respond, text, tool_use
from agentcli.ui.cli import run_app
from agentcli.ui.sessions import sessions_export, sessions_list, sessions_show


def make_session(conn: Any, session_id: str, workspace: Path) -> None:
    journal = SqliteJournal.create(session_id, workspace=workspace, model="m-1", conn=conn)
    journal.task_started(f"T{session_id}", "fix the bug")
    journal.message_appended(Message.user("fix the bug"))
    call = tool_use("write_file", {"path": "a.py", "content": "x"}, id=f"c-{session_id}")
    journal.message_appended(respond(text("writing"), call).message)
    record = ToolCallRecord(
        call_id=call["id"], name="write_file", input=call["input"], risk="write"
    )
    journal.call_proposed(record)
    record.status = CallStatus.STARTED
    journal.call_started(record, None)
    record.status, record.result_text = CallStatus.SUCCEEDED, "wrote a.py"
    journal.call_finished(record)
    journal.message_appended(Message(role="user", content=(record.to_result_block(),)))


def test_list_shows_this_workspace_unless_all(conn: Any, workspace: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    make_session(conn, "01AAA", workspace)
    make_session(conn, "01BBB", other)
    SqliteJournal.create("01EMPTY", workspace=workspace, model="m", conn=conn)
    out = io.StringIO()
    sessions_list(workspace, False, out)
    assert "01AAA" in out.getvalue() and "01BBB" not in out.getvalue()
    assert "01EMPTY" not in out.getvalue()  # a REPL opened and closed without a request
    assert "fix the bug" in out.getvalue() and "m-1" in out.getvalue()
    assert "  1 task  " in out.getvalue()  # not "1 tasks"
    everything = io.StringIO()
    sessions_list(workspace, True, everything)
    assert "01AAA" in everything.getvalue() and str(other) in everything.getvalue()
    empty = io.StringIO()
    sessions_list(tmp_path, False, empty)
    assert "no sessions" in empty.getvalue()


def test_show_is_readable_with_call_statuses(conn: Any, workspace: Path) -> None:
    make_session(conn, "01SHOW", workspace)
    out = io.StringIO()
    assert sessions_show("01SH", out) == 0  # a unique prefix is enough
    shown = out.getvalue()
    assert "session 01SHOW" in shown
    assert "== task T01SHOW [running]" in shown
    assert "user: fix the bug" in shown
    assert 'write_file {"path": "a.py", "content": "x"} [succeeded]' in shown
    assert "<- ok: wrote a.py" in shown


def test_export_is_the_whole_session_as_json(conn: Any, workspace: Path) -> None:
    make_session(conn, "01EXP", workspace)
    out = io.StringIO()
    sessions_export("01EXP", out)
    data = json.loads(out.getvalue())
    assert data["session"]["id"] == "01EXP"
    assert [m["role"] for m in data["messages"]] == ["user", "assistant", "user"]
    assert data["messages"][1]["content"][1]["input"] == {"path": "a.py", "content": "x"}
    assert data["tool_calls"][0]["status"] == "succeeded"
    assert data["tasks"][0]["prompt"] == "fix the bug"


def test_unknown_and_ambiguous_ids_are_usage_errors(conn: Any, workspace: Path) -> None:
    make_session(conn, "01DUP1", workspace)
    make_session(conn, "01DUP2", workspace)
    with pytest.raises(UsageError, match="no session 'ZZZ'"):
        sessions_show("ZZZ")
    with pytest.raises(UsageError, match="matches several sessions"):
        sessions_export("01DUP")
    with pytest.raises(UsageError, match="cannot be used together"):
        find_resumed("01DUP1", True, workspace)
    with pytest.raises(UsageError, match="no session to continue"):
        find_resumed(None, True, workspace / "nowhere")
    assert run_app(["sessions", "show", "ZZZ"]) == 2


def test_session_commands_never_import_the_model_sdk(conn: Any, workspace: Path) -> None:
    make_session(conn, "01FAST", workspace)
    commands = [
        ["sessions", "list", "-C", str(workspace)],
        ["sessions", "list", "--all"],
        ["sessions", "show", "01FAST"],
        ["sessions", "export", "01FAST"],
        ["undo", "-C", str(workspace)],
        ["trust", str(workspace)],
        ["trust", "--list"],
        ["trust", "--revoke", str(workspace)],
    ]
    script = (
        "import contextlib, io, json, sys\n"
        "from agentcli.ui.cli import run_app\n"
        "out, err = io.StringIO(), io.StringIO()\n"
        "with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):\n"
        f"    codes = [run_app(args) for args in json.loads({json.dumps(commands)!r})]\n"
        "print(codes, 'anthropic' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=60,
        check=True,
    )
    # undo has nothing to undo here (exit 1); every command ran in-process.
    assert done.stdout.strip() == "[0, 0, 0, 0, 1, 0, 0, 0] False"


def test_a_journal_path_that_is_not_a_directory_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    monkeypatch.setenv("AGENTCLI_HOME", str(not_a_dir))
    assert run_app(["sessions", "list", "--all"]) == 2
    err = capsys.readouterr().err
    assert f"the data directory {not_a_dir} cannot be used: Not a directory" in err
    assert "AGENTCLI_HOME" in err and "Traceback" not in err


def test_an_internal_error_is_one_line_and_a_log_not_a_traceback(
    conn: Any, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_session(conn, "01BAD", workspace)
    conn.execute("UPDATE sessions SET settings = 'not json' WHERE id = '01BAD'")
    assert run_app(["sessions", "list", "--all"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("agentcli: internal error: JSONDecodeError")
    assert len(err.strip().splitlines()) == 1
    log = Path(os.environ["AGENTCLI_HOME"]) / "errors.log"
    assert "Traceback" in log.read_text() and str(log) in err
