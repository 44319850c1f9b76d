"""Business idempotency keys: a side effect is performed at most once per operation key.

A call id is not a business key: a model retry carries a new id for the same action. A tool with
external side effects may derive an operation key from its input (`Tool.operation_key`). Before
such a call runs, `call_once` claims the key in the ledger (key + request fingerprint, write-ahead,
like the journal's `started` record), and after it records the outcome:

- same key, same request, already succeeded → the recorded result, marked replayed; nothing runs;
- same key, different request → `conflict`;
- same key whose outcome is unknown (the earlier call was interrupted, or is still running in
  another process) → ask the tool's `reconcile` step; if it cannot tell, `outcome_unknown` until
  someone resolves it. A definite failure frees the key for another attempt.
"""

from __future__ import annotations

import enum
import hashlib
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from agentcli.errors import ToolError, ToolErrorKind
from agentcli.messages import canonical_json
from agentcli.tools.base import Tool, ToolContext, ToolInput, ToolOutput
from agentcli.tools.records import ToolCallRecord


class OperationState(enum.StrEnum):
    STARTED = "started"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    OUTCOME_UNKNOWN = "outcome_unknown"


# Tool errors after which the effect may or may not have happened.
_UNCERTAIN_KINDS = frozenset(
    {ToolErrorKind.TIMEOUT, ToolErrorKind.OUTCOME_UNKNOWN, ToolErrorKind.INTERNAL}
)


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
        conn.execute("BEGIN IMMEDIATE")  # two processes must not both win the same key
        try:
            held = self.get(operation.tool, operation.key)
            if held is not None and held.state is not OperationState.FAILED:
                conn.execute("COMMIT")
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
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
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


async def call_once(
    tool: Tool[Any],
    args: ToolInput,
    ctx: ToolContext,
    record: ToolCallRecord,
    ledger: OperationLedger,
) -> ToolOutput:
    """Run `tool.call`, at most once per operation key (see the module docstring)."""
    key = tool.operation_key(args)
    if key is None:
        return await tool.call(args, ctx)
    claim = Operation(
        tool=tool.name,
        key=key,
        fingerprint=fingerprint(record.input),
        state=OperationState.STARTED,
        call_id=record.call_id,
    )
    held = ledger.claim(claim)
    if held is not None:
        replayed = await _settle(held, claim, tool, args, ctx, ledger)
        if replayed is not None:
            record.replayed = True
            return replayed
    finish = _finisher(ledger, tool.name, key)
    try:
        output = await tool.call(args, ctx)
    except ToolError as exc:
        uncertain = exc.kind in _UNCERTAIN_KINDS
        finish(OperationState.OUTCOME_UNKNOWN if uncertain else OperationState.FAILED, exc.message)
        raise
    except BaseException as exc:  # cancelled or crashed mid-call: it may have happened
        finish(OperationState.OUTCOME_UNKNOWN, f"interrupted: {type(exc).__name__}")
        raise
    finish(OperationState.SUCCEEDED, output.text)
    return output


def _finisher(
    ledger: OperationLedger, tool: str, key: str
) -> Callable[[OperationState, str | None], None]:
    return lambda state, result: ledger.finish(tool, key, state, result)


async def _settle(
    held: Operation,
    claim: Operation,
    tool: Tool[Any],
    args: ToolInput,
    ctx: ToolContext,
    ledger: OperationLedger,
) -> ToolOutput | None:
    """Decide a call whose key is already held: the replayed result, or None when the earlier
    attempt turned out not to have happened (the key is then ours), or raise ToolError."""
    if held.fingerprint != claim.fingerprint:
        raise ToolError(
            ToolErrorKind.CONFLICT,
            f"operation key {held.key!r} was already used by call {held.call_id} with different "
            f"input (that attempt is {held.state.value}); one business operation cannot be "
            "repeated with changed parameters. Use a new operation (e.g. a new reference) or "
            "ask the user.",
        )
    if held.state is OperationState.SUCCEEDED:
        return _replay(held, held.result or "")
    try:
        reconciled = await tool.reconcile(args, ctx)
    except ToolError as exc:
        raise ToolError(
            ToolErrorKind.OUTCOME_UNKNOWN,
            f"an earlier call ({held.call_id}) of operation {held.key!r} has an unknown outcome: "
            "it was interrupted (or is still running elsewhere) and may or may not have taken "
            f"effect ({exc.message}). It was not performed again. Verify the real state (e.g. "
            "with a lookup) and tell the user; do not retry it blindly.",
        ) from exc
    if reconciled is None:
        ledger.finish(held.tool, held.key, OperationState.FAILED, "reconciled: did not happen")
        if ledger.claim(claim) is not None:
            raise ToolError(
                ToolErrorKind.CONFLICT,
                f"operation {held.key!r} was claimed by another call while being reconciled",
            )
        return None
    ledger.finish(held.tool, held.key, OperationState.SUCCEEDED, reconciled.text)
    return _replay(held, reconciled.text)


def _replay(held: Operation, result: str) -> ToolOutput:
    return ToolOutput(
        text=(
            f"[replayed] operation {held.key!r} already succeeded (call {held.call_id}); this is "
            f"its recorded result. It was NOT performed again.\n{result}"
        ),
        source={"operation_key": held.key, "replayed_from": held.call_id},
    )
