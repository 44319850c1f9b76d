"""Opening a session for `run` and the REPL: a new one, or a recorded one resumed (its lock
first, then crash recovery, `agentcli.recovery`), and letting go of it.

A session is used by one live process at a time: opening one (new or resumed) takes its lock
(`store.lock`), kept until the process exits or `leave_session`. Resuming a session that
another live process uses is refused at once (SessionBusyError, exit 2) and touches nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentcli.checkpoints import Checkpointer
from agentcli.compaction_record import CompactionRecord
from agentcli.errors import UsageError
from agentcli.events import EventSink, Notice
from agentcli.ids import new_id
from agentcli.messages import Message
from agentcli.owngit import RepoDecision, decide
from agentcli.recovery import RecoveryError, recover
from agentcli.session import records
from agentcli.store import queries
from agentcli.store.db import connect
from agentcli.store.lock import SessionLock
from agentcli.store.sqlite import SqliteJournal
from agentcli.todo import TodoList


@dataclass(kw_only=True)
class OpenedSession:
    """A session ready for the next task: its journal (holding its lock), where its tasks'
    undo checkpoints go, and its (recovered) history."""

    journal: SqliteJournal
    checkpoints: Checkpointer | None = None
    messages: list[Message] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    compacted: CompactionRecord | None = None
    """The compaction in force in what the model is sent (the session's latest)."""
    todos: TodoList = ()
    """The todo list as its latest successful `todo_write` call left it."""

    @property
    def session_id(self) -> str:
        return self.journal.session_id

    def release(self) -> None:
        """Let go of the session (its lock, the checkpointer's connection)."""
        self.journal.release()
        if self.checkpoints is not None:
            self.checkpoints.close()


def find_resumed(
    resume: str | None, continue_: bool, workspace: Path | None
) -> queries.SessionRow | None:
    """The session `--resume ID` / `--continue` names (None for a new session)."""
    if resume is not None and continue_:
        raise UsageError("--resume and --continue cannot be used together")
    if resume is None and not continue_:
        return None
    if resume is not None:
        return records.find(resume)
    where = (workspace or Path.cwd()).resolve()
    found = records.list_sessions(where, limit=1)
    if not found:
        raise UsageError(f"no session to continue in {where}", hint="agentcli sessions list --all")
    return found[0]


def open_session(
    resumed: queries.SessionRow | None,
    *,
    lock: SessionLock | None = None,
    workspace: Path,
    model: str,
    settings: dict[str, Any] | None = None,
    events: EventSink | None = None,
    git: RepoDecision | None = None,
) -> OpenedSession:
    """Create a new session, or reopen `resumed` and recover it before anything else.

    Either way the session's lock is held from here on (`release()` lets it go). `lock` is
    `resumed`'s, if the caller took it already. When another live process uses `resumed`,
    SessionBusyError, and nothing of the session was read or changed. `git` is the session's
    decision whether `workspace` is a git repository (made here when not given)."""
    if git is None:
        git = decide(workspace)
    conn = connect()
    if resumed is None:
        session_id = new_id()
        # Locked before it exists, so no `--continue` can ever pick it up unlocked.
        journal = SqliteJournal.create(
            session_id,
            workspace=workspace,
            model=model,
            settings=settings,
            conn=conn,
            lock=SessionLock.acquire(session_id),
        )
        messages: list[Message] = []
        notices: list[str] = []
    else:
        lock = lock or SessionLock.acquire(resumed.id)
        journal, messages, notices = _reopen(conn, resumed, lock, model, settings, git)
    # Its own connection: a checkpoint's transaction (in a worker thread) must not take in the
    # journal's records.
    compactions = queries.load_compactions(conn, journal.session_id) if resumed else []
    opened = OpenedSession(
        journal=journal,
        checkpoints=Checkpointer(connect(), git),
        messages=messages,
        notices=notices,
        compacted=compactions[-1] if compactions else None,
        todos=queries.latest_todos(conn, journal.session_id) if resumed else (),
    )
    for line in opened.notices:
        if events is not None:
            events(Notice(level="warning", message=line))
    return opened


def _reopen(
    conn: Any,
    resumed: queries.SessionRow,
    lock: SessionLock,
    model: str,
    settings: dict[str, Any] | None,
    git: RepoDecision,
) -> tuple[SqliteJournal, list[Message], list[str]]:
    """Recover `resumed` under its lock; when that fails, the lock is let go."""
    try:
        journal = SqliteJournal.open(resumed.id, conn=conn, lock=lock)
        try:
            report = recover(journal, lock, git)
        except RecoveryError as exc:
            raise UsageError(str(exc), hint=f"agentcli sessions export {resumed.id}") from exc
        journal.record_settings(model=model, **(settings or {}))
    except BaseException:
        lock.release()
        raise
    return journal, report.messages, report.notices()
