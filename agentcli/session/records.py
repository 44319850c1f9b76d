"""Recorded sessions, read: `agentcli sessions list|show|export`, the REPL's `/sessions`, and
undoing a task (`agentcli undo`, `/undo`, `/diff`).

Reading takes no lock. Undoing a task takes the lock of the task's session: while another
live process uses it (and may be changing those very files), undo is refused at once
(SessionBusyError, exit 2) and touches nothing.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentcli.compaction_record import CompactionRecord
from agentcli.errors import UsageError
from agentcli.messages import Message
from agentcli.store import queries
from agentcli.store.db import JOURNAL_FILE, connect, journal_error, journal_path
from agentcli.store.lock import SessionLock
from agentcli.store.queries import CallRow, ChildTaskRow, SessionRow, TaskRow

if TYPE_CHECKING:
    from agentcli.owngit import RepoDecision
    from agentcli.undo import UndoResult

__all__ = [
    "CallRow",
    "ChildTaskRow",
    "SessionRow",
    "TaskRow",
]  # re-exported: what these functions return


def journal_failure(exc: BaseException) -> BaseException:
    """`exc`, or, when it is SQLite's (the journal is agentcli's one database), the JournalError
    that names the journal and says what is wrong with it."""
    if not isinstance(exc, sqlite3.Error):
        return exc
    return journal_error(journal_path(), exc)


def find(session_id: str, conn: Any = None) -> SessionRow:
    """The session `session_id` names (a unique prefix is enough); UsageError otherwise."""
    try:
        row = queries.find_session(conn or connect(), session_id)
    except queries.AmbiguousIdError as exc:
        raise UsageError(str(exc), hint="give more characters of the id") from exc
    if row is None:
        raise UsageError(f"no session {session_id!r}", hint="agentcli sessions list --all")
    return row


def list_sessions(workspace: Path | None, limit: int | None = None) -> list[SessionRow]:
    """Sessions with messages, newest first: `workspace`'s, or every one (None)."""
    return queries.list_sessions(connect(), None if workspace is None else str(workspace), limit)


def latest_session_in(home: Path, workspace: Path) -> str | None:
    """The newest session recorded in `workspace` by the journal of another data directory,
    `home` (a batch task's own `AGENTCLI_HOME`); None when it has none (or no journal yet)."""
    path = home / JOURNAL_FILE
    if not path.exists():
        return None
    conn = connect(path)
    try:
        rows = queries.list_sessions(conn, str(workspace.resolve()), limit=1)
    finally:
        conn.close()
    return rows[0].id if rows else None


def tasks(session_id: str) -> list[TaskRow]:
    """The session's tasks, oldest first, without its messages (a session picker lists many)."""
    return queries.load_tasks(connect(), session_id)


def latest_other_session(workspace: Path, current: str | None) -> str | None:
    """The newest session in `workspace` other than `current`."""
    rows = list_sessions(workspace, limit=2)
    return next((row.id for row in rows if row.id != current), None)


@dataclass(frozen=True, slots=True, kw_only=True)
class Transcript:
    """A session as recorded: its messages in wire form, its tasks and its tool calls."""

    session: SessionRow
    messages: list[dict[str, Any]]
    tasks: list[TaskRow]
    calls: list[CallRow]
    compactions: list[CompactionRecord]
    """Each compaction of what the model was sent (the messages themselves are all above)."""
    subagents: list[ChildTaskRow] = field(default_factory=list)
    """The subagents' child tasks, oldest first."""
    subagent_messages: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Each child task's own history, in wire form, by its id."""


def transcript(session_id: str) -> Transcript:
    conn = connect()
    row = find(session_id, conn)
    children = queries.load_child_tasks(conn, row.id)
    return Transcript(
        session=row,
        messages=queries.message_rows(conn, row.id),
        tasks=queries.load_tasks(conn, row.id),
        calls=queries.load_calls(conn, row.id),
        compactions=queries.load_compactions(conn, row.id),
        subagents=children,
        subagent_messages={c.id: queries.child_message_rows(conn, c.id) for c in children},
    )


def messages_so_far(session_id: str) -> list[dict[str, Any]]:
    """The session's messages as recorded up to now, in wire form (what a hook's transcript
    holds)."""
    conn = connect()
    try:
        return queries.message_rows(conn, session_id)
    finally:
        conn.close()


def subagent_messages(session_id: str, call_id: str) -> list[Message]:
    """The history of the subagent the `agent` call `call_id` ran (empty: none ran)."""
    conn = connect()
    try:
        children = [
            c for c in queries.load_child_tasks(conn, session_id) if c.parent_call_id == call_id
        ]
        return [
            Message.from_wire({"role": row["role"], "content": row["content"]})
            for child in children
            for row in queries.child_message_rows(conn, child.id)
        ]
    finally:
        conn.close()


def export(session_id: str) -> dict[str, Any]:
    """The whole session as one JSON-ready object."""
    recorded = transcript(session_id)
    row = recorded.session
    return {
        "session": {
            "id": row.id,
            "workspace": row.workspace,
            "model": row.model,
            "settings": row.settings,
            "created_at": row.created_at,
            "updated_at": row.updated_at,
        },
        "messages": recorded.messages,
        "tasks": [_fields(t) for t in recorded.tasks],
        "tool_calls": [
            {
                **_fields(c),
                "status": c.status.value,
                "pre_state": None if c.pre_state is None else c.pre_state.to_json(),
            }
            for c in recorded.calls
        ],
        "compactions": [record.to_json() for record in recorded.compactions],
        "subagents": [
            {
                **_fields(child),
                "usage": child.usage.as_dict(),
                "messages": recorded.subagent_messages.get(child.id, []),
            }
            for child in recorded.subagents
        ],
    }


def _fields(row: Any) -> dict[str, Any]:
    return {name: getattr(row, name) for name in row.__slots__}


def undo(
    workspace: Path,
    task_id: str | None,
    *,
    own_session: str | None = None,
    git: RepoDecision | None = None,
) -> UndoResult:
    """Restore the files the task changed, under the lock of its session. Without `task_id`:
    the latest task with changes left of `own_session` (the session this process holds, the
    REPL's: undone as it is) when given, else of the workspace. `git` is the session's decision
    about the workspace (made now, for `agentcli undo`, when not given). UndoError when undo
    must refuse; UsageError for a task id that names no task."""
    from agentcli.undo import undo as undo_task
    from agentcli.undo import undo_target

    conn = connect()
    target = undo_target(conn, workspace, task_id, own_session if task_id is None else None)
    if target.session_id == own_session:
        return undo_task(conn, workspace, target.task_id, git=git)
    with SessionLock.acquire(target.session_id):
        return undo_task(conn, workspace, target.task_id, git=git)


def task_preimages(
    workspace: Path, task_id: str, *, git: RepoDecision | None = None
) -> dict[str, bytes | None]:
    """What each file the task changed held before it (None: it did not exist), from its
    checkpoint; UndoError if the task has no usable checkpoint."""
    from agentcli.undo import task_preimages as preimages

    return preimages(connect(), workspace, task_id, git=git)
