"""The idempotency ledger: operation key -> request fingerprint, state and recorded result.

Shared by every session and process of the user (it lives in the journal database), so a retry
of the same business operation is recognised even after a crash or in another session. The
rules that use it (run a tool at most once per key) are the runtime's, in `tools.once`: this
layer only stores. It is import-light on purpose (no tool API, no pydantic) so that commands
reading the journal start fast.
"""

from __future__ import annotations

import enum
import hashlib
import sqlite3
import time
from dataclasses import dataclass, replace
from typing import Any, Protocol

from agentcli.messages import canonical_json
from agentcli.store.db import transaction


class OperationState(enum.StrEnum):
    STARTED = "started"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    OUTCOME_UNKNOWN = "outcome_unknown"


@dataclass(frozen=True, slots=True, kw_only=True)
class Operation:
    tool: str
    key: str
    fingerprint: str
    state: OperationState
    result: str | None = None
    session_id: str | None = None
    call_id: str | None = None


class OperationLedger(Protocol):
    def claim(self, operation: Operation) -> Operation | None:
        """Atomically record `operation` as started unless the key is held: return the holder
        (unchanged) when it is, None when the claim succeeded. A failed holder frees the key."""
        ...

    def finish(self, tool: str, key: str, state: OperationState, result: str | None) -> None: ...

    def get(self, tool: str, key: str) -> Operation | None: ...


class MemoryLedger:
    """A ledger that lives as long as the process (tests, sessions with no journal file)."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], Operation] = {}

    def claim(self, operation: Operation) -> Operation | None:
        held = self.rows.get((operation.tool, operation.key))
        if held is not None and held.state is not OperationState.FAILED:
            return held
        self.rows[(operation.tool, operation.key)] = operation
        return None

    def finish(self, tool: str, key: str, state: OperationState, result: str | None) -> None:
        held = self.rows.get((tool, key))
        if held is not None:
            self.rows[(tool, key)] = replace(held, state=state, result=result)

    def get(self, tool: str, key: str) -> Operation | None:
        return self.rows.get((tool, key))


class SqliteLedger:
    """The ledger in the journal database: shared by every session and process of the user."""

    def __init__(self, conn: sqlite3.Connection, session_id: str | None = None) -> None:
        self.conn = conn
        self.session_id = session_id

    def claim(self, operation: Operation) -> Operation | None:
        conn = self.conn
        now = time.time()
        with transaction(conn):  # two processes must not both win the same key
            held = self.get(operation.tool, operation.key)
            if held is not None and held.state is not OperationState.FAILED:
                return held
            conn.execute(
                "INSERT OR REPLACE INTO idempotency (tool, key, fingerprint, state, result, "
                "session_id, call_id, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?)",
                (
                    operation.tool,
                    operation.key,
                    operation.fingerprint,
                    operation.state.value,
                    operation.result,
                    operation.session_id or self.session_id,
                    operation.call_id,
                    now,
                    now,
                ),
            )
        return None

    def finish(self, tool: str, key: str, state: OperationState, result: str | None) -> None:
        self.conn.execute(
            "UPDATE idempotency SET state = ?, result = ?, updated_at = ? "
            "WHERE tool = ? AND key = ?",
            (state.value, result, time.time(), tool, key),
        )

    def get(self, tool: str, key: str) -> Operation | None:
        row = self.conn.execute(
            "SELECT * FROM idempotency WHERE tool = ? AND key = ?", (tool, key)
        ).fetchone()
        if row is None:
            return None
        return Operation(
            tool=row["tool"],
            key=row["key"],
            fingerprint=row["fingerprint"],
            state=OperationState(row["state"]),
            result=row["result"],
            session_id=row["session_id"],
            call_id=row["call_id"],
        )


def fingerprint(tool_input: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(tool_input).encode()).hexdigest()
