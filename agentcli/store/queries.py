"""Reading the journal: sessions, their messages, tasks and tool calls, as typed rows.

Used by `agentcli sessions`, resume and crash recovery, and `agentcli undo`. Nothing here writes.
Workspace paths and prompts come back as the strings they were (`fsnames.from_db`).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, replace
from typing import Any

from agentcli.call_records import CallStatus, PreState
from agentcli.compaction_record import CompactionRecord, Trigger, pinned_from_json
from agentcli.fsnames import from_db, to_db
from agentcli.messages import Message, Producer
from agentcli.todo import TODO_TOOL, TodoList, todos_from_json
from agentcli.usage import USAGE_FIELDS, SessionTotals, Usage, token_count


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionRow:
    id: str
    workspace: str
    model: str
    settings: dict[str, Any]
    created_at: float
    updated_at: float
    messages: int = 0
    tasks: int = 0
    title: str | None = None
    """What the user first asked in it (the first task's prompt, as typed): the one name a
    session goes by in every listing."""
    last_state: str | None = None
    """The state of its latest task (`succeeded`, `failed`, ..., `running` if interrupted)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskRow:
    id: str
    session_id: str
    prompt: str
    criteria: list[str]
    state: str
    reason: str | None
    evidence: list[dict[str, Any]]
    artifact_version: str | None
    started_at: float
    ended_at: float | None
    undone_at: float | None = None
    """When its file changes were undone (`agentcli undo`, `/undo`), if they were."""
    command: dict[str, str] | None = None
    """The custom command the prompt was expanded from (`tasks.CommandOrigin`'s JSON)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CallRow:
    call_id: str
    task_id: str | None
    name: str
    input: dict[str, Any]
    risk: str
    status: CallStatus
    pre_state: PreState | None
    result: str | None
    error_kind: str | None
    result_is_error: bool
    replayed: bool
    proposed_at: float
    started_at: float | None
    ended_at: float | None
    duration_s: float | None

    @property
    def is_error(self) -> bool:
        return self.status is not CallStatus.SUCCEEDED or self.result_is_error


class AmbiguousIdError(LookupError):
    pass


def _session(row: sqlite3.Row) -> SessionRow:
    return SessionRow(
        id=row["id"],
        workspace=from_db(row["workspace"]),
        model=row["model"],
        settings=json.loads(row["settings"] or "{}"),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        messages=row["n_messages"],
        tasks=row["n_tasks"],
        title=None if row["title"] is None else from_db(row["title"]),
        last_state=row["last_state"],
    )


_SESSION_SELECT = """
    SELECT s.*,
        (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS n_messages,
        (SELECT COUNT(*) FROM tasks t WHERE t.session_id = s.id) AS n_tasks,
        (SELECT t.prompt FROM tasks t WHERE t.session_id = s.id
            ORDER BY t.started_at, t.id LIMIT 1) AS title,
        (SELECT t.state FROM tasks t WHERE t.session_id = s.id
            ORDER BY t.started_at DESC, t.id DESC LIMIT 1) AS last_state
    FROM sessions s
"""


def list_sessions(
    conn: sqlite3.Connection, workspace: str | None = None, limit: int | None = None
) -> list[SessionRow]:
    """Sessions with at least one message, most recently updated first; only `workspace`'s
    when given. (A REPL opened and closed without a request leaves an empty session.)"""
    where = "WHERE EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id)"
    params: list[str | bytes] = []
    if workspace:
        where += " AND s.workspace = ?"
        params.append(to_db(workspace))
    tail = " LIMIT ?" if limit is not None else ""
    if limit is not None:
        params.append(str(limit))
    rows = conn.execute(
        f"{_SESSION_SELECT} {where} ORDER BY s.updated_at DESC, s.id DESC{tail}", params
    )
    return [_session(row) for row in rows]


def find_session(conn: sqlite3.Connection, id_or_prefix: str) -> SessionRow | None:
    """The session with this id, or the only one whose id starts with it (case-insensitive)."""
    wanted = id_or_prefix.strip().upper()
    if not wanted:
        return None
    rows = conn.execute(
        f"{_SESSION_SELECT} WHERE s.id = ? OR s.id LIKE ? ORDER BY s.id LIMIT 3",
        (wanted, wanted.replace("%", "").replace("_", "") + "%"),
    ).fetchall()
    exact = [row for row in rows if row["id"] == wanted]
    if exact:
        return _session(exact[0])
    if len(rows) > 1:
        raise AmbiguousIdError(
            f"{id_or_prefix!r} matches several sessions: " + ", ".join(r["id"] for r in rows)
        )
    return _session(rows[0]) if rows else None


def load_messages(conn: sqlite3.Connection, session_id: str) -> list[Message]:
    rows = conn.execute(
        "SELECT role, content, producer FROM messages WHERE session_id = ? ORDER BY seq",
        (session_id,),
    )
    return [_message(r) for r in rows]


def _message(row: sqlite3.Row) -> Message:
    message = Message.from_wire({"role": row["role"], "content": json.loads(row["content"])})
    if row["producer"] is None:
        return message
    return replace(message, producer=Producer.from_json(json.loads(row["producer"])))


def message_rows(conn: sqlite3.Connection, session_id: str) -> list[dict[str, Any]]:
    """Messages in wire form with their sequence number and task (for show and export)."""
    rows = conn.execute(
        "SELECT seq, role, content, task_id, created_at FROM messages WHERE session_id = ? "
        "ORDER BY seq",
        (session_id,),
    )
    return [
        {
            "seq": r["seq"],
            "task_id": r["task_id"],
            "created_at": r["created_at"],
            "role": r["role"],
            "content": json.loads(r["content"]),
        }
        for r in rows
    ]


def _task(row: sqlite3.Row) -> TaskRow:
    return TaskRow(
        id=row["id"],
        session_id=row["session_id"],
        prompt=from_db(row["prompt"]),
        criteria=json.loads(row["criteria"] or "[]"),
        state=row["state"],
        reason=row["reason"],
        evidence=json.loads(row["evidence"] or "[]"),
        artifact_version=row["artifact_version"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        undone_at=row["undone_at"],
        command=json.loads(row["command"]) if row["command"] else None,
    )


def session_totals(conn: sqlite3.Connection, session_id: str) -> SessionTotals:
    """The session's finished tasks: how many, the tokens they used and what they cost (None
    when any one's cost is unknown, as for a task recorded before costs were)."""
    rows = conn.execute(
        "SELECT usage, cost_usd FROM tasks WHERE session_id = ? AND ended_at IS NOT NULL",
        (session_id,),
    ).fetchall()
    usage, cost, known = Usage(), 0.0, True
    for raw, spent in rows:
        counts = json.loads(raw) if raw else {}
        usage = usage + Usage(**{k: int(v) for k, v in counts.items() if k in USAGE_FIELDS})
        known = known and spent is not None
        cost += spent or 0.0
    return SessionTotals(tasks=len(rows), usage=usage, cost_usd=cost if known else None)


def _pre_state(stored: str | None) -> PreState | None:
    """A call's write-ahead record as the journal kept it (None: it had none)."""
    if not stored:
        return None
    data = json.loads(stored)
    return PreState.from_json(data) if isinstance(data, dict) else PreState(data={"raw": data})


def load_tasks(conn: sqlite3.Connection, session_id: str) -> list[TaskRow]:
    rows = conn.execute(
        "SELECT t.*, c.undone_at FROM tasks t LEFT JOIN checkpoints c ON c.task_id = t.id "
        "WHERE t.session_id = ? ORDER BY t.started_at, t.id",
        (session_id,),
    )
    return [_task(row) for row in rows]


def _call(row: sqlite3.Row) -> CallRow:
    return CallRow(
        call_id=row["call_id"],
        task_id=row["task_id"],
        name=row["name"],
        input=json.loads(row["input"]),
        risk=row["risk"],
        status=CallStatus(row["status"]),
        pre_state=_pre_state(row["pre_state"]),
        result=row["result"],
        error_kind=row["error_kind"],
        result_is_error=bool(row["result_is_error"]),
        replayed=bool(row["replayed"]),
        proposed_at=row["proposed_at"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        duration_s=row["duration_s"],
    )


def load_calls(
    conn: sqlite3.Connection, session_id: str, status: CallStatus | None = None
) -> list[CallRow]:
    query = "SELECT * FROM tool_calls WHERE session_id = ?"
    params: list[str] = [session_id]
    if status is not None:
        query += " AND status = ?"
        params.append(status.value)
    rows = conn.execute(query + " ORDER BY proposed_at, rowid", params)
    return [_call(row) for row in rows]


@dataclass(frozen=True, slots=True, kw_only=True)
class ChildTaskRow:
    """A subagent's child task (`store.sqlite.ChildJournal`)."""

    id: str
    parent_task_id: str
    parent_call_id: str
    agent_type: str
    description: str
    prompt: str
    model: str
    state: str
    reason: str | None
    error: str | None
    final_text: str | None
    turns: int
    usage: Usage
    cost_usd: float | None
    started_at: float
    ended_at: float | None


def load_child_tasks(conn: sqlite3.Connection, session_id: str) -> list[ChildTaskRow]:
    """The session's subagent child tasks, oldest first."""
    rows = conn.execute(
        "SELECT * FROM child_tasks WHERE session_id = ? ORDER BY started_at, id", (session_id,)
    )
    return [
        ChildTaskRow(
            id=row["id"],
            parent_task_id=row["parent_task_id"],
            parent_call_id=row["parent_call_id"],
            agent_type=row["agent_type"],
            description=from_db(row["description"]),
            prompt=from_db(row["prompt"]),
            model=row["model"],
            state=row["state"],
            reason=row["reason"],
            error=row["error"],
            final_text=row["final_text"],
            turns=row["turns"],
            usage=_usage(row["usage"]),
            cost_usd=row["cost_usd"],
            started_at=row["started_at"],
            ended_at=row["ended_at"],
        )
        for row in rows
    ]


def child_message_rows(conn: sqlite3.Connection, task_id: str) -> list[dict[str, Any]]:
    """A child task's messages in wire form, in order (for show and export)."""
    rows = conn.execute(
        "SELECT seq, role, content, created_at FROM child_messages WHERE task_id = ? ORDER BY seq",
        (task_id,),
    )
    return [
        {
            "seq": r["seq"],
            "task_id": task_id,
            "created_at": r["created_at"],
            "role": r["role"],
            "content": json.loads(r["content"]),
        }
        for r in rows
    ]


def _usage(raw: str | None) -> Usage:
    counts = json.loads(raw) if raw else {}
    return Usage(**{k: int(v) for k, v in counts.items() if k in USAGE_FIELDS})


def load_compactions(conn: sqlite3.Connection, session_id: str) -> list[CompactionRecord]:
    """The session's compactions, oldest first (the last one is the one in force)."""
    rows = conn.execute(
        "SELECT * FROM compactions WHERE session_id = ? ORDER BY created_at, rowid", (session_id,)
    )
    return [_compaction(row) for row in rows]


def _compaction(row: sqlite3.Row) -> CompactionRecord:
    usage = json.loads(row["usage"] or "{}")
    counts = {key: token_count(usage.get(key)) or 0 for key in Usage.__dataclass_fields__}
    return CompactionRecord(
        id=row["id"],
        point=row["point"],
        summary=row["summary"],
        pinned=pinned_from_json(json.loads(row["pinned"] or "[]")),
        model=row["model"],
        trigger=Trigger(row["trigger"]),
        tokens_before=row["tokens_before"],
        tokens_after=row["tokens_after"],
        usage=Usage(**counts),
        cost_usd=row["cost_usd"],
        instructions=row["instructions"],
        task_id=row["task_id"],
        created_at=row["created_at"],
    )


def latest_todos(conn: sqlite3.Connection, session_id: str) -> TodoList:
    """The todo list as the session's latest successful `todo_write` call saved it (empty when
    there is none)."""
    row = conn.execute(
        "SELECT input FROM tool_calls WHERE session_id = ? AND name = ? AND status = ? "
        "AND result_is_error = 0 ORDER BY proposed_at DESC, rowid DESC LIMIT 1",
        (session_id, TODO_TOOL, CallStatus.SUCCEEDED.value),
    ).fetchone()
    found = todos_from_json(json.loads(row["input"])) if row is not None else None
    return found or ()
