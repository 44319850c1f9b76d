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

from collections.abc import Callable
from typing import Any

from agentcli.call_records import ToolCallRecord
from agentcli.errors import ToolError, ToolErrorKind
from agentcli.store.ledger import Operation, OperationLedger, OperationState, fingerprint
from agentcli.tools.base import Tool, ToolContext, ToolInput, ToolOutput

# Tool errors after which the effect may or may not have happened.
_UNCERTAIN_KINDS = frozenset(
    {ToolErrorKind.TIMEOUT, ToolErrorKind.OUTCOME_UNKNOWN, ToolErrorKind.INTERNAL}
)


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
