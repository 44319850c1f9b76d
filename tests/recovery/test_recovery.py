"""Crash recovery in-process: how each unfinished call is resolved, how the history is repaired,
that recovery is idempotent, and that the user is told."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from agentcli.call_records import CallStatus, FileWrite, PreState, ToolCallRecord
from agentcli.errors import SessionBusyError, UsageError
from agentcli.events import Event, Notice
from agentcli.messages import Message, pairing_problems
from agentcli.recovery import RecoveryError, recover, resolve_call
from agentcli.session.opening import find_resumed, open_session
from agentcli.store import queries
from agentcli.store.db import connect
from agentcli.store.ledger import Operation, OperationState
from agentcli.store.lock import SessionLock
from agentcli.store.queries import CallRow
from agentcli.store.sqlite import SqliteJournal
from agentcli.testing import respond, text, tool_use


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def call_row(**overrides: Any) -> CallRow:
    values: dict[str, Any] = {
        "call_id": "c1",
        "task_id": None,
        "name": "write_file",
        "input": {"path": "f.txt"},
        "risk": "write",
        "status": CallStatus.STARTED,
        "pre_state": None,
        "result": None,
        "error_kind": None,
        "result_is_error": False,
        "replayed": False,
        "proposed_at": 0.0,
        "started_at": 1.0,
        "ended_at": None,
        "duration_s": None,
    }
    values.update(overrides)
    return CallRow(**values)


@pytest.mark.parametrize(
    ("before", "intended", "now", "expected", "says"),
    [
        (b"old", b"new", b"new", CallStatus.SUCCEEDED, "the write took effect"),
        (b"old", b"new", b"old", CallStatus.NOT_EXECUTED, "still has its previous content"),
        (None, b"new", None, CallStatus.NOT_EXECUTED, "still does not exist"),
        (None, b"new", b"new", CallStatus.SUCCEEDED, "the write took effect"),
        (b"old", b"new", b"ne", CallStatus.OUTCOME_UNKNOWN, "neither its previous content"),
        (b"old", b"new", None, CallStatus.OUTCOME_UNKNOWN, "neither its previous content"),
    ],
)
def test_a_started_file_write_is_reconciled_by_hash(
    tmp_path: Path,
    before: bytes | None,
    intended: bytes,
    now: bytes | None,
    expected: CallStatus,
    says: str,
) -> None:
    path = tmp_path / "f.txt"
    if now is not None:
        path.write_bytes(now)
    pre = {"path": str(path), "pre_hash": before and sha(before), "post_hash": sha(intended)}
    resolution = resolve_call(call_row(pre_state=PreState.from_json(pre)))
    assert resolution.status is expected
    assert says in resolution.text
    assert "interrupted" in resolution.text


@pytest.mark.parametrize(
    ("overrides", "expected", "says"),
    [
        ({"name": "shell", "risk": "execute"}, CallStatus.OUTCOME_UNKNOWN, "Verify the current"),
        ({"name": "reserve", "risk": "external"}, CallStatus.OUTCOME_UNKNOWN, "NOT re-run"),
        ({"name": "read_file", "risk": "read"}, CallStatus.NOT_EXECUTED, "nothing changed"),
        ({"status": CallStatus.PROPOSED}, CallStatus.NOT_EXECUTED, "before this call started"),
    ],
)
def test_what_cannot_be_checked_is_unknown(
    overrides: dict[str, Any], expected: CallStatus, says: str
) -> None:
    resolution = resolve_call(call_row(**overrides))
    assert resolution.status is expected
    assert says in resolution.text


def crashed_session(workspace: Path) -> tuple[SqliteJournal, Path]:
    """A session killed while running three calls of one response: the first finished (its
    result message was never written), the second (a write) was started and took effect, the
    third was never proposed."""
    journal = SqliteJournal.create("S-CRASH", workspace=workspace, model="m", conn=connect())
    journal.task_started("T-CRASH", "do three things")
    journal.message_appended(Message.user("do three things"))
    calls = [
        tool_use("read_file", {"path": "a.txt"}, id="c1"),
        tool_use("write_file", {"path": "b.txt", "content": "B"}, id="c2"),
        tool_use("shell", {"command": "make"}, id="c3"),
    ]
    journal.message_appended(respond(text("on it"), *calls).message)
    first = ToolCallRecord(call_id="c1", name="read_file", input=calls[0]["input"], risk="read")
    journal.call_proposed(first)
    first.status, first.result_text = CallStatus.SUCCEEDED, "1\thello"
    journal.call_finished(first)
    target = workspace / "b.txt"
    second = ToolCallRecord(call_id="c2", name="write_file", input=calls[1]["input"], risk="write")
    journal.call_proposed(second)
    second.status = CallStatus.STARTED
    written = FileWrite(path=str(target), pre_hash=None, post_hash=sha(b"B"))
    journal.call_started(second, PreState(write=written))
    target.write_bytes(b"B")
    return journal, target


def test_recovery_repairs_the_history_with_one_result_per_call(workspace: Path) -> None:
    journal, _ = crashed_session(workspace)
    report = recover(journal, SessionLock.acquire("S-CRASH"))
    assert pairing_problems(report.messages) == []
    repair = report.messages[-1]
    assert [r.tool_use_id for r in repair.tool_results] == ["c1", "c2", "c3"]
    recorded, reconciled, never = repair.tool_results
    assert (recorded.content, recorded.is_error) == ("1\thello", False)
    assert not reconciled.is_error and "the write took effect" in reconciled.content
    assert never.is_error and never.content.startswith("[not_executed]")
    assert "nothing was re-run" in repair.text
    assert report.aborted_tasks == ["T-CRASH"]
    assert [r.call_id for r in report.resolutions] == ["c2"]
    stored = {c.call_id: c.status for c in queries.load_calls(journal.conn, "S-CRASH")}
    assert stored == {"c1": CallStatus.SUCCEEDED, "c2": CallStatus.SUCCEEDED}
    assert queries.load_messages(journal.conn, "S-CRASH")[-1].to_wire() == repair.to_wire()
    (task,) = queries.load_tasks(journal.conn, "S-CRASH")
    assert (task.state, task.reason) == ("aborted", "interrupted")


def test_recovery_is_idempotent(workspace: Path) -> None:
    journal, _ = crashed_session(workspace)
    lock = SessionLock.acquire("S-CRASH")
    first = recover(journal, lock)
    again = recover(SqliteJournal.open("S-CRASH", conn=connect()), lock)
    assert not again.changed and again.notices() == []
    assert [m.to_wire() for m in again.messages] == [m.to_wire() for m in first.messages]


def test_an_unknown_external_call_keeps_its_operation_key_unknown(workspace: Path) -> None:
    journal = SqliteJournal.create("S-EXT", workspace=workspace, model="m", conn=connect())
    journal.message_appended(Message.user("reserve"))
    call = tool_use("reserve_stock", {"sku": "A1"}, id="x1")
    journal.message_appended(respond(call).message)
    record = ToolCallRecord(
        call_id="x1", name="reserve_stock", input=call["input"], risk="external"
    )
    journal.call_proposed(record)
    record.status = CallStatus.STARTED
    journal.call_started(record, None)
    journal.operations.claim(
        Operation(
            tool="reserve_stock",
            key="k",
            fingerprint="f",
            state=OperationState.STARTED,
            call_id="x1",
        )
    )
    report = recover(journal, SessionLock.acquire("S-EXT"))
    assert report.resolutions[0].status is CallStatus.OUTCOME_UNKNOWN
    assert journal.operations.get("reserve_stock", "k").state is OperationState.OUTCOME_UNKNOWN  # type: ignore[union-attr]
    assert "verify before retrying" in "\n".join(report.notices())


def test_resuming_tells_the_user_before_anything_else(workspace: Path) -> None:
    crashed_session(workspace)
    events: list[Event] = []
    resumed = find_resumed("S-CRASH", False, workspace)
    opened = open_session(resumed, workspace=workspace, model="m", events=events.append)
    notices = [e.message for e in events if isinstance(e, Notice)]
    assert notices[0] == "the previous run of this session was interrupted; recovered it:"
    assert any("b.txt: the write took effect (reconciled)" in line for line in notices)
    assert pairing_problems(opened.messages) == []


def test_a_history_broken_in_the_middle_is_refused_not_guessed(workspace: Path) -> None:
    journal = SqliteJournal.create("S-BROKEN", workspace=workspace, model="m", conn=connect())
    journal.message_appended(Message.user("go"))
    journal.message_appended(respond(tool_use("shell", {"command": "ls"}, id="z1")).message)
    journal.message_appended(Message.user("a message that should have been the result"))
    journal.message_appended(respond(text("hm")).message)
    with SessionLock.acquire("S-BROKEN") as lock, pytest.raises(RecoveryError, match="safely"):
        recover(journal, lock)
    resumed = find_resumed("S-BROKEN", False, workspace)
    with pytest.raises(UsageError, match="cannot be repaired safely"):
        open_session(resumed, workspace=workspace, model="m")
    SessionLock.acquire("S-BROKEN").release()  # the refused resume let go of the lock


def stored_state(session_id: str) -> tuple[list[tuple[str, str]], int, list[str]]:
    """What recovery would change: call statuses, message count, task states."""
    conn = connect()
    calls = [(c.call_id, c.status.value) for c in queries.load_calls(conn, session_id)]
    tasks = [t.state for t in queries.load_tasks(conn, session_id)]
    return calls, len(queries.load_messages(conn, session_id)), tasks


def test_recovery_never_runs_without_the_session_lock(workspace: Path) -> None:
    journal, _ = crashed_session(workspace)
    before = stored_state("S-CRASH")
    released = SessionLock.acquire("S-CRASH")
    released.release()
    with SessionLock.acquire("S-OTHER") as other:
        for wrong in (released, other):
            with pytest.raises(RuntimeError, match="needs that session's lock"):
                recover(journal, wrong)
    assert stored_state("S-CRASH") == before


def test_a_session_another_process_uses_is_not_resumed_nor_recovered(workspace: Path) -> None:
    """The live holder's `started` calls are running, not interrupted: nothing is touched."""
    crashed_session(workspace)
    before = stored_state("S-CRASH")
    resumed = find_resumed("S-CRASH", False, workspace)
    with SessionLock.acquire("S-CRASH"):  # stands for the other, live process
        with pytest.raises(SessionBusyError, match="session S-CRASH is in use by another"):
            open_session(resumed, workspace=workspace, model="m")
        assert stored_state("S-CRASH") == before
        assert ("c2", "started") in before[0]
    opened = open_session(resumed, workspace=workspace, model="m")  # once it has let go
    assert opened.journal.lock is not None and opened.journal.lock.holds("S-CRASH")
    opened.journal.release()
