"""SqliteJournal: the durable journal of one session, in the user's journal database.

Every method commits before it returns. `call_started` of a call that may change something
(risk write, execute or external) commits with `synchronous=FULL`: the record, and everything
journaled before it, is on disk before the side effect begins, even if the machine loses power.
Other records commit with `synchronous=NORMAL` (they survive a killed process; a power loss can
drop the last few, and then the call just looks `started` and is reconciled on resume). The
journal only records: undo checkpoints are taken by the conversation (`agentcli.conversation`),
off the event loop, before it lets a task's first change start.

A journal opened for use keeps the session's lock (`store.lock`) until `release()`. A workspace
path or prompt that is not valid UTF-8 is stored as its bytes (`fsnames.to_db`).

A subagent's child task gets a `ChildJournal` (`child()`): its row in `child_tasks` (who started
it: the parent task and its `agent` call; what it is; how it ended) and its messages in
`child_messages`, apart from the session's own tasks and messages (the session's history is the
parent's, which a resume continues; the parent task's usage already counts the child's). Its
tool calls go to `tool_calls` like every call, under the child's task id and through the same
write-ahead path, so a crash in one is resolved on resume like any other, never re-run. It
shares the session journal's connection and lock: children run concurrently with each other.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentcli.call_records import PreState, ToolCallRecord
from agentcli.compaction_record import CompactionRecord, pinned_to_json
from agentcli.fsnames import to_db
from agentcli.hook_seams import HookRun
from agentcli.messages import Message
from agentcli.store import queries
from agentcli.store.db import connect, transaction
from agentcli.store.faults import crash_point
from agentcli.store.ledger import SqliteLedger
from agentcli.store.lock import SessionLock
from agentcli.task_scope import SubagentStart
from agentcli.tasks import CommandOrigin, TaskResult
from agentcli.terminal_reason import TerminalReason
from agentcli.usage import SessionTotals


class SessionNotFoundError(LookupError):
    pass


class SqliteJournal:
    def __init__(
        self, conn: sqlite3.Connection, session_id: str, lock: SessionLock | None = None
    ) -> None:
        self.conn = conn
        self.session_id = session_id
        self.lock = lock
        """The session's lock, held for as long as this journal is in use."""
        self.operations = SqliteLedger(conn, session_id)
        self.task_id: str | None = None
        self._lock = threading.Lock()
        row = conn.execute(
            "SELECT COALESCE(MAX(seq), -1) FROM messages WHERE session_id = ?", (session_id,)
        ).fetchone()
        self._next_seq = int(row[0]) + 1

    @classmethod
    def create(
        cls,
        session_id: str,
        *,
        workspace: Path,
        model: str,
        settings: dict[str, Any] | None = None,
        conn: sqlite3.Connection | None = None,
        lock: SessionLock | None = None,
    ) -> SqliteJournal:
        """Start a new session."""
        conn = conn or connect()
        now = time.time()
        conn.execute(
            "INSERT INTO sessions (id, workspace, model, settings, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (session_id, to_db(str(workspace)), model, json.dumps(settings or {}), now, now),
        )
        return cls(conn, session_id, lock)

    @classmethod
    def open(
        cls,
        session_id: str,
        *,
        conn: sqlite3.Connection | None = None,
        lock: SessionLock | None = None,
    ) -> SqliteJournal:
        """Reopen an existing session (to resume it)."""
        conn = conn or connect()
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
            raise SessionNotFoundError(session_id)
        return cls(conn, session_id, lock)

    def release(self) -> None:
        """Stop using the session: release its lock so another process may resume it."""
        if self.lock is not None:
            self.lock.release()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock, transaction(self.conn) as conn:
            yield conn

    def call_proposed(self, record: ToolCallRecord) -> None:
        with self._lock:
            self.conn.execute(
                "INSERT INTO tool_calls (session_id, call_id, task_id, name, input, risk, status, "
                "proposed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (session_id, call_id) DO NOTHING",
                (
                    self.session_id,
                    record.call_id,
                    self.task_id,
                    record.name,
                    json.dumps(record.input),
                    record.risk,
                    record.status.value,
                    time.time(),
                ),
            )

    def call_started(self, record: ToolCallRecord, pre_state: PreState | None) -> None:
        crash_point("before_start", record.name)
        changes = record.risk not in ("", "read")
        with self._lock:
            if changes:
                self.conn.execute("PRAGMA synchronous=FULL")
            try:
                self.conn.execute(
                    "UPDATE tool_calls SET status = ?, pre_state = ?, started_at = ? "
                    "WHERE session_id = ? AND call_id = ?",
                    (
                        record.status.value,
                        None if pre_state is None else json.dumps(pre_state.to_json()),
                        record.started_at or time.time(),
                        self.session_id,
                        record.call_id,
                    ),
                )
            finally:
                if changes:
                    self.conn.execute("PRAGMA synchronous=NORMAL")
        crash_point("after_start", record.name)

    def call_finished(self, record: ToolCallRecord) -> None:
        if record.started_at is not None:  # only a call that ran can have had an effect
            crash_point("after_effect", record.name)
        with self._lock:
            self.conn.execute(
                "INSERT INTO tool_calls (session_id, call_id, task_id, name, input, risk, status, "
                "result, error_kind, result_is_error, replayed, proposed_at, ended_at, duration_s) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (session_id, call_id) DO UPDATE SET status = excluded.status, "
                "result = excluded.result, error_kind = excluded.error_kind, "
                "result_is_error = excluded.result_is_error, "
                "replayed = excluded.replayed, ended_at = excluded.ended_at, "
                "duration_s = excluded.duration_s",
                (
                    self.session_id,
                    record.call_id,
                    self.task_id,
                    record.name,
                    json.dumps(record.input),
                    record.risk,
                    record.status.value,
                    record.result_text,
                    record.error_kind.value if record.error_kind else None,
                    int(record.result_is_error),
                    int(record.replayed),
                    time.time(),
                    time.time(),
                    record.duration_s,
                ),
            )

    def message_appended(self, message: Message) -> None:
        now = time.time()
        with self._transaction() as conn:
            conn.execute(
                "INSERT INTO messages "
                "(session_id, seq, role, content, task_id, created_at, producer) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    self.session_id,
                    self._next_seq,
                    message.role,
                    json.dumps(message.to_wire()["content"]),
                    self.task_id,
                    now,
                    json.dumps(message.producer.to_json()) if message.producer else None,
                ),
            )
            conn.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (now, self.session_id))
            self._next_seq += 1

    def task_started(
        self,
        task_id: str,
        prompt: str,
        criteria: Sequence[str] = (),
        command: CommandOrigin | None = None,
    ) -> None:
        self.task_id = task_id
        origin = None if command is None else json.dumps(command.to_json())
        with self._lock:
            self.conn.execute(
                "INSERT INTO tasks (id, session_id, prompt, criteria, state, started_at, command) "
                "VALUES (?, ?, ?, ?, 'running', ?, ?)",
                (
                    task_id,
                    self.session_id,
                    to_db(prompt),
                    json.dumps(list(criteria)),
                    time.time(),
                    origin,
                ),
            )

    def task_finished(self, result: TaskResult) -> None:
        with self._lock:
            self.conn.execute(
                "UPDATE tasks SET state = ?, reason = ?, evidence = ?, artifact_version = ?, "
                "ended_at = ?, usage = ?, cost_usd = ? WHERE id = ?",
                (
                    result.state.value,
                    result.reason.value,
                    json.dumps([check.to_json() for check in result.acceptance]),
                    result.artifact_version,
                    time.time(),
                    json.dumps(result.usage.as_dict()),
                    result.cost_usd,
                    result.task_id,
                ),
            )
        if self.task_id == result.task_id:
            self.task_id = None

    def totals(self) -> SessionTotals:
        """What the session's finished tasks used and cost, as recorded."""
        with self._lock:
            return queries.session_totals(self.conn, self.session_id)

    def record_settings(self, **changes: Any) -> None:
        """Record settings of the session (model, mode, ...), merged into what is stored."""
        with self._transaction() as conn:
            row = conn.execute(
                "SELECT settings FROM sessions WHERE id = ?", (self.session_id,)
            ).fetchone()
            merged = {**json.loads(row[0] or "{}"), **changes}
            conn.execute(
                "UPDATE sessions SET settings = ? WHERE id = ?",
                (json.dumps(merged), self.session_id),
            )
            if isinstance(changes.get("model"), str):
                conn.execute(
                    "UPDATE sessions SET model = ? WHERE id = ?",
                    (changes["model"], self.session_id),
                )

    def hook_ran(self, run: HookRun) -> None:
        with self._lock:
            self.conn.execute(
                "INSERT INTO hook_runs (session_id, task_id, event, source, command, exit_code, "
                "timed_out, duration_s, decision, reason, tool_use_id, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    self.session_id,
                    self.task_id,
                    run.event,
                    run.source,
                    to_db(run.command),
                    run.exit_code,
                    int(run.timed_out),
                    run.duration_s,
                    run.decision,
                    run.reason,
                    run.tool_use_id,
                    time.time(),
                ),
            )

    def compaction_recorded(self, record: CompactionRecord) -> None:
        """One row, in one transaction: a kill before it leaves the session as it was before
        the compaction, after it as it is after (never half)."""
        crash_point("before_record", "compaction")
        with self._transaction() as conn:
            conn.execute(
                "INSERT INTO compactions (id, session_id, task_id, point, summary, pinned, model, "
                "trigger, instructions, tokens_before, tokens_after, usage, cost_usd, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.id,
                    self.session_id,
                    record.task_id,
                    record.point,
                    record.summary,
                    json.dumps(pinned_to_json(record.pinned)),
                    record.model,
                    record.trigger.value,
                    record.instructions,
                    record.tokens_before,
                    record.tokens_after,
                    json.dumps(record.usage.as_dict()),
                    record.cost_usd,
                    record.created_at or time.time(),
                ),
            )
            conn.execute(
                "UPDATE sessions SET updated_at = ? WHERE id = ?", (time.time(), self.session_id)
            )
        crash_point("after_record", "compaction")

    def child(self, start: SubagentStart) -> ChildJournal:
        return ChildJournal(self, start)


class ChildJournal(SqliteJournal):
    """The journal a subagent's loop and tool runtime write to (see the module docstring)."""

    def __init__(self, parent: SqliteJournal, start: SubagentStart) -> None:
        super().__init__(parent.conn, parent.session_id)
        self._lock = parent._lock
        self.operations = parent.operations
        self.task_id = start.task_id
        self._start = start
        self._next_seq = 0
        with self._lock:
            self.conn.execute(
                "INSERT INTO child_tasks (id, session_id, parent_task_id, parent_call_id, "
                "agent_type, description, prompt, model, state, started_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running', ?)",
                (
                    start.task_id,
                    self.session_id,
                    start.parent_task_id,
                    start.parent_call_id,
                    start.agent_type,
                    to_db(start.description),
                    to_db(start.prompt),
                    start.model,
                    time.time(),
                ),
            )

    def message_appended(self, message: Message) -> None:
        with self._transaction() as conn:
            conn.execute(
                "INSERT INTO child_messages (task_id, seq, role, content, producer, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    self._start.task_id,
                    self._next_seq,
                    message.role,
                    json.dumps(message.to_wire()["content"]),
                    json.dumps(message.producer.to_json()) if message.producer else None,
                    time.time(),
                ),
            )
            self._next_seq += 1

    def task_started(
        self,
        task_id: str,
        prompt: str,
        criteria: Sequence[str] = (),
        command: CommandOrigin | None = None,
    ) -> None:
        """Recorded when the journal was made (a child task has no acceptance criteria)."""

    def task_finished(self, result: TaskResult) -> None:
        # A child task has no checks of its own (its parent's verify its work): one that ran
        # to its end is `completed`, not `unverified`.
        done = result.reason is TerminalReason.COMPLETED
        with self._lock:
            self.conn.execute(
                "UPDATE child_tasks SET state = ?, reason = ?, error = ?, final_text = ?, "
                "turns = ?, usage = ?, cost_usd = ?, ended_at = ? WHERE id = ?",
                (
                    "completed" if done else result.state.value,
                    result.reason.value,
                    result.error,
                    result.final_text,
                    result.turns,
                    json.dumps(result.usage.as_dict()),
                    result.cost_usd,
                    time.time(),
                    self._start.task_id,
                ),
            )

    def record_settings(self, **changes: Any) -> None:
        """A child task has no settings of its own: the session's are its parent's."""

    def release(self) -> None:
        """The session's lock is the session journal's to release."""
