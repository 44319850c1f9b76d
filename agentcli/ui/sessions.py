"""Sessions for people: `agentcli sessions list|show|export`, `agentcli undo`, and opening the
journal of a new or resumed session for `run` and the REPL (`/sessions`, `/resume`, `/undo`).

Resuming runs crash recovery first (`agentcli.recovery`) and tells the user what it found. Nothing
here imports the model SDK: these commands must start fast.

A session is used by one live process at a time: opening one (new or resumed) takes its lock
(`store.lock`), kept until the process exits or `leave_session`. Resuming a session that another
live process uses, or undoing one of its tasks, is refused at once (SessionBusyError, exit 2)
and touches nothing. `sessions list/show/export` only read the journal and take no lock.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from agentcli.errors import UsageError
from agentcli.ids import new_id
from agentcli.messages import Message
from agentcli.paths import data_home, resolve_workspace
from agentcli.store import queries
from agentcli.store.db import connect
from agentcli.store.lock import SessionLock
from agentcli.store.sqlite import SqliteJournal
from agentcli.ui.safe import visible

if TYPE_CHECKING:
    from agentcli.checkpoints import Checkpointer, UndoResult
    from agentcli.conversation import ConversationManager
    from agentcli.events import EventSink
    from agentcli.owngit import RepoDecision

SHORT_TEXT = 300


@dataclass(kw_only=True)
class OpenedSession:
    """A session ready for the next task: its journal, where its tasks' undo checkpoints go,
    and its (recovered) history."""

    journal: SqliteJournal
    checkpoints: Checkpointer | None = None
    messages: list[Message] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

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
    conn = connect()
    if resume is not None:
        return _session_or_fail(conn, resume)
    where = (workspace or Path.cwd()).resolve()
    found = queries.list_sessions(conn, str(where), limit=1)
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

    Either way the session's lock is held from here on (`journal.release()` lets it go). `lock`
    is `resumed`'s, if the caller took it already. When another live process uses `resumed`,
    SessionBusyError, and nothing of the session was read or changed. `git` is the session's
    decision whether `workspace` is a git repository (made here when not given)."""
    from agentcli.checkpoints import Checkpointer
    from agentcli.events import Notice  # here: `sessions list/show` and `undo` never need it
    from agentcli.owngit import decide

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
        opened = OpenedSession(journal=journal)
    else:
        lock = lock or SessionLock.acquire(resumed.id)
        opened = _reopen(conn, resumed, lock, model=model, settings=settings, git=git)
    # Its own connection: a checkpoint's transaction (in a worker thread) must not take in the
    # journal's records.
    opened.checkpoints = Checkpointer(connect(), git)
    for line in opened.notices:
        if events is not None:
            events(Notice(level="warning", message=line))
    return opened


def _reopen(
    conn: Any,
    resumed: queries.SessionRow,
    lock: SessionLock,
    *,
    model: str,
    settings: dict[str, Any] | None,
    git: RepoDecision,
) -> OpenedSession:
    """Recover `resumed` under its lock; when that fails, the lock is let go."""
    from agentcli.recovery import RecoveryError, recover

    try:
        journal = SqliteJournal.open(resumed.id, conn=conn, lock=lock)
        try:
            report = recover(journal, lock, git)
        except RecoveryError as exc:
            raise UsageError(str(exc), hint=f"agentcli sessions export {resumed.id}") from exc
        journal.settings(model=model, **(settings or {}))
    except BaseException:
        lock.release()
        raise
    return OpenedSession(journal=journal, messages=report.messages, notices=report.notices())


def leave_session(manager: ConversationManager) -> None:
    """Stop using the manager's session (the REPL's /clear, /resume elsewhere, exit): another
    process may resume it from now on."""
    if isinstance(manager.journal, SqliteJournal):
        manager.journal.release()
    close = getattr(manager.checkpoints, "close", None)
    if close is not None:
        close()


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _session_or_fail(conn: Any, session_id: str) -> queries.SessionRow:
    try:
        row = queries.find_session(conn, session_id)
    except queries.AmbiguousIdError as exc:
        raise UsageError(str(exc), hint="give more characters of the id") from exc
    if row is None:
        raise UsageError(f"no session {session_id!r}", hint="agentcli sessions list --all")
    return row


def _when(stamp: float | None) -> str:
    return "-" if stamp is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp))


def _short(text: str, limit: int = SHORT_TEXT) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def sessions_list(workspace: Path | None, all_: bool, out: TextIO = sys.stdout) -> int:
    """`agentcli sessions list`: this workspace's sessions (all with `all_`), newest first."""
    where = None if all_ else str(resolve_workspace(workspace))
    rows = queries.list_sessions(connect(), where)
    if not rows:
        scope = "" if all_ else f" in {where} (--all lists every workspace)"
        out.write(f"no sessions{scope}\n")
        return 0
    for row in rows:
        prompt = _short(row.last_prompt or "", 60)
        place = f"  {row.workspace}" if all_ else ""
        out.write(
            visible(
                f"{row.id}  {_when(row.updated_at)}  {row.model}  {_count(row.tasks, 'task')}  "
                f"{_count(row.messages, 'message')}{place}  {prompt}",
                keep="",
            )
            + "\n"
        )
    return 0


def sessions_show(session_id: str, out: TextIO = sys.stdout) -> int:
    """`agentcli sessions show ID`: the conversation, readable, with every call's status."""
    conn = connect()
    row = _session_or_fail(conn, session_id)
    calls = {c.call_id: c for c in queries.load_calls(conn, row.id)}
    tasks = {t.id: t for t in queries.load_tasks(conn, row.id)}
    out.write(
        visible(
            f"session {row.id}\n  workspace {row.workspace}\n  model {row.model}\n"
            f"  created {_when(row.created_at)}, updated {_when(row.updated_at)}\n"
        )
    )
    current_task = None
    for message in queries.message_rows(conn, row.id):
        task = tasks.get(message["task_id"] or "")
        if task is not None and task.id != current_task:
            current_task = task.id
            verdict = f"{task.state}" + (f" ({task.reason})" if task.reason else "")
            out.write(f"\n== task {task.id} [{verdict}]\n")
        for line in _message_lines(message["role"], message["content"], calls):
            out.write(visible(line) + "\n")  # the model's words, tool inputs and outputs
    return 0


def _message_lines(role: str, blocks: Sequence[Any], calls: dict[str, Any]) -> list[str]:
    lines = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text" and block.get("text", "").strip():
            lines.append(f"{role}: {_short(block['text'])}")
        elif kind == "tool_use":
            call = calls.get(block.get("id"))
            status = call.status.value if call is not None else "no record"
            if call is not None and call.replayed:
                status += ", replayed"
            arguments = _short(json.dumps(block.get("input", {}), ensure_ascii=False), 160)
            lines.append(f"  -> {block.get('name')} {arguments} [{status}]")
        elif kind == "tool_result":
            content = block.get("content")
            text = content if isinstance(content, str) else json.dumps(content)
            mark = "error" if block.get("is_error") else "ok"
            lines.append(f"  <- {mark}: {_short(text, 160)}")
        elif kind in ("thinking", "redacted_thinking"):
            lines.append(f"{role}: ({kind})")
        elif kind not in ("text",):
            lines.append(f"{role}: ({kind} block)")
    return lines


def sessions_export(session_id: str, out: TextIO = sys.stdout) -> int:
    """`agentcli sessions export ID`: the whole session as one JSON object."""
    conn = connect()
    row = _session_or_fail(conn, session_id)
    data = {
        "session": {
            "id": row.id,
            "workspace": row.workspace,
            "model": row.model,
            "settings": row.settings,
            "created_at": row.created_at,
            "updated_at": row.updated_at,
        },
        "messages": queries.message_rows(conn, row.id),
        "tasks": [vars_of(t) for t in queries.load_tasks(conn, row.id)],
        "tool_calls": [
            {**vars_of(c), "status": c.status.value} for c in queries.load_calls(conn, row.id)
        ],
    }
    out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return 0


def vars_of(row: Any) -> dict[str, Any]:
    return {name: getattr(row, name) for name in row.__slots__}


def undo_command(
    workspace: Path | None,
    task_id: str | None,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    """`agentcli undo [--task ID]`: 0 when restored, 1 when refused (with the reason);
    SessionBusyError (exit 2, as for `run --resume`) while another process uses its session."""
    from agentcli.checkpoints import UndoError

    where = resolve_workspace(workspace)
    try:
        result = undo_locked(connect(), where, task_id)
    except UndoError as exc:
        err.write(f"agentcli: undo: {visible(exc.message)}\n")
        for name in exc.files:
            err.write(f"  {visible(name, keep='')}\n")
        return 1
    if not result.restored and not result.removed:
        out.write(f"task {result.task_id} left no file changes; nothing to undo\n")
        return 0
    out.write(f"undid task {result.task_id}:\n")
    for name in result.restored:
        out.write(f"  restored {visible(name, keep='')}\n")
    for name in result.removed:
        out.write(f"  removed {visible(name, keep='')}\n")
    return 0


def undo_locked(
    conn: Any,
    workspace: Path,
    task_id: str | None,
    *,
    own_session: str | None = None,
    git: RepoDecision | None = None,
) -> UndoResult:
    """`checkpoints.undo` under the lock of the task's session: refused (SessionBusyError)
    while another live process uses that session, which may be changing those very files.
    `own_session` is the session this process holds already (the REPL's), undone as it is;
    `git` its decision about the workspace (made now, for `agentcli undo`, when not given)."""
    from agentcli.checkpoints import undo, undo_target

    target = undo_target(conn, workspace, task_id)
    if target.session_id == own_session:
        return undo(conn, workspace, target.task_id, git=git)
    with SessionLock.acquire(target.session_id):
        return undo(conn, workspace, target.task_id, git=git)


def resume_into(
    manager: ConversationManager, session_id: str | None, events: EventSink | None = None
) -> OpenedSession:
    """Switch a live session (the REPL's `/resume [ID]`; no id: the latest in the workspace)
    to a recorded one: lock it, recover it, then continue from its history, letting go of the
    current one. When that one is busy (SessionBusyError) or broken, the current one stays."""
    workspace = manager.tool_context.workspace
    resumed = find_resumed(session_id, session_id is None, workspace)
    if resumed is None:  # cannot happen: an id or --continue names one, or raises
        raise UsageError("no session to resume")
    current = manager.journal
    if resumed.id == manager.session_id and isinstance(current, SqliteJournal):
        # Already this process's session, locked and consistent: nothing to reopen or recover.
        return OpenedSession(journal=current, messages=manager.messages)
    opened = open_session(
        resumed,
        workspace=workspace,
        model=resumed.model,
        events=events,
        git=manager.repo_decision(),
    )
    leave_session(manager)
    manager.session_id = opened.session_id
    manager.journal = opened.journal
    manager.checkpoints = opened.checkpoints
    manager.messages = opened.messages
    manager.tool_context.data_dir = data_home() / "sessions" / opened.session_id
    # The stale-read guard is per conversation: what the old one read, this one has not seen.
    manager.tool_context.read_hashes.clear()
    return opened
