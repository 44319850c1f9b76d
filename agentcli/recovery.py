"""Crash recovery: make an interrupted session consistent again, before anything else runs.

When a session is resumed, every tool call the journal left unfinished is resolved without
re-executing anything:

- `proposed` (never started; the write-ahead `started` record guarantees it did not run)
  → `not_executed`;
- `started` file write (its pre-state's `FileWrite`: path, hashes before and after) → compare
  the file now:
  the intended content → `succeeded`; the previous content (or still absent) → `not_executed`;
  anything else → `outcome_unknown`;
- `started` read → `not_executed` (a read leaves nothing behind);
- any other `started` call (a shell command, an external call) → `outcome_unknown`; an `agent`
  call whose subagent was working → `outcome_unknown` too, and the model is told that the
  subagent's answer was lost (it is never re-run: its own calls are resolved as every call is).

Then the history is repaired: an assistant message whose `tool_use` blocks have no answer gets a
user message with exactly one `tool_result` per call (the recorded result, or an explicit
statement that the process was interrupted and what is known), and the repaired history is
checked with `pairing_problems`. Tasks left `running` (subagents' child tasks too) become
`aborted`. Recovery is idempotent: running it again after it was itself interrupted finishes
the job.

All of that is only true of a session no live process is using: in one that is, a `started` call
is running, not interrupted. So `recover` takes the session's lock (`store.lock`) and refuses to
run without it; a process gets that lock only while no other live process holds it.
"""

from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

from agentcli.call_records import CallStatus
from agentcli.checkpoints import finish_open_checkpoints
from agentcli.errors import ToolErrorKind
from agentcli.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, pairing_problems
from agentcli.owngit import RepoDecision
from agentcli.snapshots import file_hash
from agentcli.store.db import transaction
from agentcli.store.ledger import OperationState
from agentcli.store.lock import SessionLock
from agentcli.store.queries import (
    CallRow,
    ChildTaskRow,
    load_calls,
    load_child_tasks,
    load_messages,
)
from agentcli.store.sqlite import SqliteJournal

INTERRUPTED = "agentcli was interrupted (the process stopped) while this call was running"


class RecoveryError(RuntimeError):
    """The stored history cannot be made valid without guessing."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Resolution:
    call_id: str
    name: str
    status: CallStatus
    text: str
    """The tool_result text the model sees."""
    note: str
    """One line for the user."""


@dataclass(kw_only=True)
class RecoveryReport:
    messages: list[Message]
    resolutions: list[Resolution] = field(default_factory=list)
    repaired_messages: int = 0
    aborted_tasks: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.resolutions or self.repaired_messages or self.aborted_tasks)

    def notices(self) -> list[str]:
        """What to tell the user, one line each."""
        if not self.changed:
            return []
        lines = ["the previous run of this session was interrupted; recovered it:"]
        lines.extend(f"  {r.name} {r.call_id}: {r.note}" for r in self.resolutions)
        if any(r.status is CallStatus.OUTCOME_UNKNOWN for r in self.resolutions):
            lines.append("  calls with an unknown outcome were NOT re-run: verify before retrying")
        return lines


NEVER_STARTED = (
    f"[{ToolErrorKind.NOT_EXECUTED.value}] not executed: agentcli was interrupted before this "
    "call started. Issue it again if it is still needed."
)


def _resolved(call: CallRow, status: CallStatus, text: str, note: str) -> Resolution:
    return Resolution(call_id=call.call_id, name=call.name, status=status, text=text, note=note)


def resolve_call(call: CallRow, subagent: ChildTaskRow | None = None) -> Resolution:
    """Decide the final status of a call the journal left unfinished. Never runs anything.
    `subagent`: the child task the call (an `agent` call) was running."""
    if call.status is CallStatus.PROPOSED:
        return _resolved(
            call, CallStatus.NOT_EXECUTED, NEVER_STARTED, "never started (not executed)"
        )
    if subagent is not None:
        return _resolved(
            call,
            CallStatus.OUTCOME_UNKNOWN,
            f"[{ToolErrorKind.OUTCOME_UNKNOWN.value}] {INTERRUPTED}: the {subagent.agent_type} "
            f"subagent ({subagent.description!r}) was working. Its answer was lost and it was "
            "NOT re-run; what it changed before it stopped is unknown. Check the workspace "
            "before relying on it, and delegate again if you still need the answer.",
            f"subagent {subagent.agent_type} ({subagent.id}) interrupted: answer lost, not re-run",
        )
    write = call.pre_state.write if call.pre_state is not None else None
    if write is not None:
        return _resolve_write(call, Path(write.path), write.pre_hash, write.post_hash)
    if call.risk == "read":
        return _resolved(
            call,
            CallStatus.NOT_EXECUTED,
            f"[{ToolErrorKind.NOT_EXECUTED.value}] {INTERRUPTED}; it only reads, so nothing "
            "changed. Run it again if you need its result.",
            "read interrupted (nothing changed)",
        )
    return _resolved(
        call,
        CallStatus.OUTCOME_UNKNOWN,
        f"[{ToolErrorKind.OUTCOME_UNKNOWN.value}] {INTERRUPTED}. Its outcome is unknown: it may "
        "have run completely, partly or not at all, and its output was lost. It was NOT re-run. "
        "Verify the current state before retrying it.",
        "outcome unknown (not re-run; verify before retrying)",
    )


NOT_A_FILE = "(not a regular file)"
"""What a write's path holds when it is there but no regular file (a pipe, a link): matches
neither the content before nor after, and is never opened (a pipe would block recovery)."""


def _resolve_write(call: CallRow, path: Path, pre_hash: str | None, post_hash: str) -> Resolution:
    now = file_hash(path)
    if now is None and os.path.lexists(path):
        now = NOT_A_FILE
    shown = str(call.input.get("path", path))
    if now == post_hash:
        return _resolved(
            call,
            CallStatus.SUCCEEDED,
            f"{INTERRUPTED}. Reconciled on resume: {shown} has exactly the content this call "
            "was writing, so the write took effect.",
            f"{shown}: the write took effect (reconciled)",
        )
    if now == pre_hash:
        before = "still does not exist" if pre_hash is None else "still has its previous content"
        return _resolved(
            call,
            CallStatus.NOT_EXECUTED,
            f"[{ToolErrorKind.NOT_EXECUTED.value}] {INTERRUPTED}. Reconciled on resume: "
            f"{shown} {before}, so the write did not take effect. Issue it again if needed.",
            f"{shown}: the write did not take effect (reconciled)",
        )
    return _resolved(
        call,
        CallStatus.OUTCOME_UNKNOWN,
        f"[{ToolErrorKind.OUTCOME_UNKNOWN.value}] {INTERRUPTED}. On resume {shown} has neither "
        "its previous content nor the content this call was writing (it may be partly written, "
        "or changed by someone else). Read it before doing anything else.",
        f"{shown}: outcome unknown (the file matches neither before nor after)",
    )


def recover(
    journal: SqliteJournal, lock: SessionLock, git: RepoDecision | None = None
) -> RecoveryReport:
    """Resolve the session's unfinished calls and repair its history (see module docstring).
    `lock` must be this session's lock, held: nothing is read or changed without it. `git` is
    the resuming session's decision about its workspace (for the interrupted checkpoints)."""
    conn = journal.conn
    session_id = journal.session_id
    if not lock.holds(session_id):
        raise RuntimeError(f"recovery of session {session_id} needs that session's lock, held")
    calls = {c.call_id: c for c in load_calls(conn, session_id)}
    subagents = {child.parent_call_id: child for child in load_child_tasks(conn, session_id)}
    resolutions = [
        resolve_call(c, subagents.get(c.call_id))
        for c in calls.values()
        if c.status in (CallStatus.PROPOSED, CallStatus.STARTED)
    ]
    _store_resolutions(conn, session_id, resolutions)
    resolved = {r.call_id: r for r in resolutions}
    messages = load_messages(conn, session_id)
    report = RecoveryReport(messages=messages, resolutions=resolutions)
    if messages and messages[-1].role == "assistant" and messages[-1].tool_uses:
        repair = _results_for(messages[-1].tool_uses, calls, resolved)
        journal.message_appended(repair)
        messages.append(repair)
        report.repaired_messages = 1
    problems = pairing_problems(messages)
    if problems:
        raise RecoveryError(
            f"session {session_id} has a history that cannot be repaired safely: "
            + "; ".join(problems)
        )
    report.aborted_tasks = _abort_running_tasks(conn, session_id)
    finish_open_checkpoints(conn, report.aborted_tasks, git)
    return report


def _store_resolutions(
    conn: sqlite3.Connection, session_id: str, resolutions: list[Resolution]
) -> None:
    now = time.time()
    with transaction(conn):
        for r in resolutions:
            kind = None if r.status is CallStatus.SUCCEEDED else r.status.value
            conn.execute(
                "UPDATE tool_calls SET status = ?, result = ?, error_kind = ?, ended_at = ? "
                "WHERE session_id = ? AND call_id = ?",
                (r.status.value, r.text, kind, now, session_id, r.call_id),
            )
            if r.status is CallStatus.OUTCOME_UNKNOWN:
                conn.execute(
                    "UPDATE idempotency SET state = ?, updated_at = ? WHERE session_id = ? "
                    "AND call_id = ? AND state = ?",
                    (
                        OperationState.OUTCOME_UNKNOWN.value,
                        now,
                        session_id,
                        r.call_id,
                        OperationState.STARTED.value,
                    ),
                )


def _results_for(
    uses: list[ToolUseBlock], calls: dict[str, CallRow], resolved: dict[str, Resolution]
) -> Message:
    blocks: list[ToolResultBlock | TextBlock] = []
    for use in uses:
        if use.id in resolved:
            r = resolved[use.id]
            blocks.append(
                ToolResultBlock(
                    tool_use_id=use.id,
                    content=r.text,
                    is_error=r.status is not CallStatus.SUCCEEDED,
                )
            )
        elif use.id in calls:  # finished, but the result message was never written
            call = calls[use.id]
            blocks.append(
                ToolResultBlock(
                    tool_use_id=use.id,
                    content=call.result or "(no output)",
                    is_error=call.is_error,
                )
            )
        else:  # the process stopped before the call was even proposed: it never ran
            blocks.append(ToolResultBlock(tool_use_id=use.id, content=NEVER_STARTED, is_error=True))
    blocks.append(
        TextBlock(
            text="(agentcli: the previous run was interrupted here and the session was resumed. "
            "The results above were reconstructed from the journal; nothing was re-run.)"
        )
    )
    return Message(role="user", content=tuple(blocks))


def _abort_running_tasks(conn: sqlite3.Connection, session_id: str) -> list[str]:
    # A subagent's child task left running ended with the process, as its parent did.
    conn.execute(
        "UPDATE child_tasks SET state = 'aborted', reason = 'interrupted', ended_at = ? "
        "WHERE session_id = ? AND state = 'running'",
        (time.time(), session_id),
    )
    rows = conn.execute(
        "SELECT id FROM tasks WHERE session_id = ? AND state = 'running'", (session_id,)
    ).fetchall()
    ids = [row[0] for row in rows]
    if ids:
        conn.execute(
            "UPDATE tasks SET state = 'aborted', reason = 'interrupted', ended_at = ? "
            "WHERE session_id = ? AND state = 'running'",
            (time.time(), session_id),
        )
    return ids
