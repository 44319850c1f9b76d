"""SqliteJournal: migrations, exact message round trip, the call lifecycle, write-ahead `started`,
task records, and resuming a session's conversation."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agentcli.call_records import CallStatus, PreState
from agentcli.errors import SessionBusyError
from agentcli.messages import Message, pairing_problems
from agentcli.permissions import PermissionMode
from agentcli.session.live import LiveSession
from agentcli.session.opening import find_resumed, open_session
from agentcli.session.options import SessionOptions
from agentcli.store import db, queries, schema
from agentcli.store.db import connect, migrate
from agentcli.store.lock import SessionLock
from agentcli.store.sqlite import SessionNotFoundError, SqliteJournal
from agentcli.testing import ScriptedModel, respond, text, thinking, tool_use
from agentcli.tools.base import Risk, Tool, ToolContext, ToolInput, ToolOutput


def test_migrations_are_numbered_recorded_and_applied_once(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    conn = connect(path)
    rows = conn.execute("SELECT id, name FROM migrations ORDER BY id").fetchall()
    assert [r[0] for r in rows] == list(range(1, len(db.MIGRATIONS) + 1))
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert migrate(conn) == []
    assert migrate(connect(path)) == []


def test_an_older_journal_is_upgraded_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.sqlite3"
    monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:1])
    old = connect(path)
    old.execute(
        "INSERT INTO sessions (id, workspace, model, created_at, updated_at) "
        "VALUES ('S1', '/w', 'm', 1, 1)"
    )
    assert (
        old.execute("SELECT name FROM sqlite_master WHERE name = 'checkpoints'").fetchone() is None
    )
    monkeypatch.undo()
    conn = sqlite3.connect(path)
    assert migrate(conn) == list(range(2, len(db.MIGRATIONS) + 1))
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'checkpoints'").fetchone()
    assert conn.execute("SELECT id FROM sessions").fetchall() == [("S1",)]


async def test_a_task_is_journaled_exactly(
    workspace: Path, conn: sqlite3.Connection, manager_factory: Any, journal_factory: Any
) -> None:
    (workspace / "a.txt").write_text("old\n")
    journal = journal_factory(workspace, "S-EXACT")
    redacted = {"type": "redacted_thinking", "data": "opaque-bytes=="}
    model = ScriptedModel(
        [
            respond(
                thinking("let me look", signature="sig-1"),
                redacted,
                text("reading"),
                tool_use("read_file", {"path": "a.txt"}, id="t1"),
            ),
            respond(tool_use("write_file", {"path": "a.txt", "content": "new\n"}, id="t2")),
            respond(text("done")),
        ]
    )
    manager = manager_factory(model, workspace, journal)
    result = await manager.run_task("update a.txt")
    assert result.final_text == "done"

    stored = queries.load_messages(conn, "S-EXACT")
    assert [m.to_wire() for m in stored] == [m.to_wire() for m in manager.messages]
    assert stored[1].to_wire()["content"][1] == redacted
    # Who produced each response survives a resume (thinking goes back only to that model).
    assert [m.producer for m in stored] == [m.producer for m in manager.messages]
    assert stored[1].producer is not None and stored[1].producer.model == "scripted"
    assert stored[0].producer is None  # the user's
    calls = {c.call_id: c for c in queries.load_calls(conn, "S-EXACT")}
    assert calls["t1"].status is CallStatus.SUCCEEDED and calls["t1"].risk == "read"
    write = calls["t2"]
    assert write.status is CallStatus.SUCCEEDED
    assert write.pre_state is not None and write.pre_state.to_json() == {
        "path": str((workspace / "a.txt").resolve()),
        "pre_hash": hashlib.sha256(b"old\n").hexdigest(),
        "post_hash": hashlib.sha256(b"new\n").hexdigest(),
    }
    assert write.started_at is not None and write.ended_at is not None
    assert write.task_id == result.task_id
    (task,) = queries.load_tasks(conn, "S-EXACT")
    assert (task.id, task.prompt, task.state, task.reason) == (
        result.task_id,
        "update a.txt",
        "unverified",
        "completed",
    )
    assert task.ended_at is not None
    assert all(r["task_id"] == result.task_id for r in queries.message_rows(conn, "S-EXACT"))


class ProbeInput(ToolInput):
    order: str


class ProbeJournal(Tool[ProbeInput]):
    """An external tool that looks at the journal from another connection while it runs."""

    name = "probe"
    description = "test"
    input_model = ProbeInput
    risk = Risk.EXTERNAL

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seen: list[tuple[str, str | None]] = []

    def pre_state(self, args: ProbeInput, ctx: ToolContext) -> PreState | None:
        return PreState(data={"order": args.order})

    async def call(self, args: ProbeInput, ctx: ToolContext) -> ToolOutput:
        other = sqlite3.connect(self.path)
        row = other.execute("SELECT status, pre_state FROM tool_calls WHERE call_id = 'p1'")
        self.seen.append(row.fetchone())
        other.close()
        return ToolOutput(text="ok")


async def test_started_is_committed_before_the_side_effect_runs(
    workspace: Path, conn: sqlite3.Connection, manager_factory: Any, journal_factory: Any
) -> None:
    probe = ProbeJournal(db.journal_path())
    model = ScriptedModel(
        [respond(tool_use("probe", {"order": "o-1"}, id="p1")), respond(text("ok"))]
    )
    manager = manager_factory(
        model,
        workspace,
        journal_factory(workspace, "S-WAL"),
        tools=[probe],
        mode=PermissionMode.YOLO,
    )
    await manager.run_task("probe")
    assert probe.seen == [("started", json.dumps({"order": "o-1"}))]


async def test_calls_that_never_ran_are_recorded_with_their_reason(
    workspace: Path, conn: sqlite3.Connection, manager_factory: Any, journal_factory: Any
) -> None:
    model = ScriptedModel(
        [
            respond(
                tool_use("write_file", {"path": "b.txt", "content": "x"}, id="w1"),
                tool_use("no_such_tool", {}, id="u1"),
            ),
            respond(text("ok")),
        ]
    )
    manager = manager_factory(
        model, workspace, journal_factory(workspace, "S-DENY"), mode=PermissionMode.READ_ONLY
    )
    await manager.run_task("try")
    calls = {c.call_id: c for c in queries.load_calls(conn, "S-DENY")}
    assert calls["w1"].status is CallStatus.DENIED and calls["w1"].started_at is None
    assert calls["w1"].error_kind == "permission_denied"
    assert calls["u1"].status is CallStatus.FAILED and calls["u1"].error_kind == "unknown_tool"
    assert not (workspace / "b.txt").exists()


async def test_resume_restores_the_conversation_for_the_next_task(
    workspace: Path, conn: sqlite3.Connection, manager_factory: Any
) -> None:
    first = open_session(None, workspace=workspace, model="scripted")
    model = ScriptedModel([respond(text("the answer is 42"))])
    await manager_factory(model, workspace, first.journal).run_task("what is the answer?")

    resumed = find_resumed(first.session_id, False, workspace)
    assert resumed is not None and resumed.id == first.session_id
    assert find_resumed(None, True, workspace) == resumed
    with pytest.raises(SessionBusyError):  # while its first user holds it
        open_session(resumed, workspace=workspace, model="other-model")
    first.journal.release()  # the first run's process exits
    reopened = open_session(resumed, workspace=workspace, model="other-model")
    assert reopened.notices == []
    assert [m.text for m in reopened.messages] == ["what is the answer?", "the answer is 42"]

    model2 = ScriptedModel([respond(text("still 42"))])
    manager = manager_factory(model2, workspace, reopened.journal, messages=reopened.messages)
    await manager.run_task("and now?")
    sent = model2.requests[0].messages
    assert [m.text for m in sent] == ["what is the answer?", "the answer is 42", "and now?"]
    assert pairing_problems(sent) == []
    assert len(queries.load_messages(conn, first.session_id)) == 4
    assert len(queries.load_tasks(conn, first.session_id)) == 2
    assert queries.find_session(conn, first.session_id).model == "other-model"  # type: ignore[union-attr]


def test_opening_an_unknown_session_fails_clearly(conn: sqlite3.Connection) -> None:
    with pytest.raises(SessionNotFoundError):
        SqliteJournal.open("NOPE", conn=conn)


def test_messages_keep_their_order_across_reopen(workspace: Path, conn: sqlite3.Connection) -> None:
    journal = SqliteJournal.create("S-ORDER", workspace=workspace, model="m", conn=conn)
    journal.message_appended(Message.user("one"))
    again = SqliteJournal.open("S-ORDER", conn=connect())
    again.message_appended(Message.user("two"))
    assert [m.text for m in queries.load_messages(conn, "S-ORDER")] == ["one", "two"]


async def test_a_live_session_can_switch_to_a_recorded_one(
    workspace: Path, conn: sqlite3.Connection, manager_factory: Any
) -> None:
    earlier = open_session(None, workspace=workspace, model="scripted")
    model = ScriptedModel([respond(text("first answer")), respond(text("second answer"))])
    await manager_factory(model, workspace, earlier.journal).run_task("first question")
    earlier.journal.release()
    manager = manager_factory(
        model, workspace, open_session(None, workspace=workspace, model="m").journal
    )
    live = LiveSession(manager, options=SessionOptions(cwd=workspace), models=lambda _n: model)
    left = live.session_id
    live.resume(None)  # no id: the latest session with messages here
    assert live.session_id == earlier.session_id
    assert [m.text for m in live.messages] == ["first question", "first answer"]
    await live.run_task("second question")
    assert len(queries.load_messages(conn, earlier.session_id)) == 4
    SessionLock.acquire(left).release()  # the session it left is free for others
    with pytest.raises(SessionBusyError):  # the one it resumed is its own
        SessionLock.acquire(earlier.session_id)


async def test_resuming_a_busy_session_leaves_the_live_one_as_it_was(
    workspace: Path, manager_factory: Any
) -> None:
    busy = open_session(None, workspace=workspace, model="m")  # used by "another process"
    manager = manager_factory(
        ScriptedModel([]), workspace, open_session(None, workspace=workspace, model="m").journal
    )
    live = LiveSession(
        manager, options=SessionOptions(cwd=workspace), models=lambda _n: ScriptedModel([])
    )
    journal, session_id = manager.journal, live.session_id
    with pytest.raises(SessionBusyError, match=f"session {busy.session_id} is in use"):
        live.resume(busy.session_id)
    assert (manager.journal, live.session_id) == (journal, session_id)
    with pytest.raises(SessionBusyError):  # and it still holds its own
        SessionLock.acquire(session_id)
    live.resume(session_id)  # its own: nothing to reopen
    assert manager.journal is journal


def test_a_workspace_and_prompt_that_are_not_utf8_are_kept_exactly(
    tmp_path: Path, conn: sqlite3.Connection
) -> None:
    workspace = Path(os.fsdecode(os.fsencode(tmp_path) + b"/ws-\xff"))
    prompt = os.fsdecode(b"fix caf\xe9.txt")  # from argv, decoded as Python decodes it
    journal = SqliteJournal.create("S-BYTES", workspace=workspace, model="m", conn=conn)
    journal.task_started("T-BYTES", prompt)
    journal.message_appended(Message.user(prompt))
    SqliteJournal.create("S-OTHER", workspace=tmp_path, model="m", conn=conn).message_appended(
        Message.user("elsewhere")
    )
    (row,) = queries.list_sessions(conn, str(workspace))
    assert (row.id, row.workspace, row.title) == ("S-BYTES", str(workspace), prompt)
    assert os.fsencode(row.workspace).endswith(b"/ws-\xff")
    assert queries.load_tasks(conn, "S-BYTES")[0].prompt == prompt
    # The conversation holds what the model was sent: the byte spelled `\xe9`.
    assert queries.load_messages(conn, "S-BYTES")[0].text == "fix caf\\xe9.txt"
    assert {r.id for r in queries.list_sessions(conn)} == {"S-BYTES", "S-OTHER"}
