"""What a finished task reports: its `TaskResult`, from where the loop and the acceptance
checks left it. The verdict is evidence-based: checks decide where they are set; without them a
task whose calls were denied and that changed nothing did not do what it set out to do."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from agentcli.acceptance import AcceptanceReport
from agentcli.loop import LoopOutcome, QueryLoop
from agentcli.snapshots import Snapshot
from agentcli.tasks import CheckEvidence, TaskResult, TaskState, task_state_for
from agentcli.terminal_reason import TerminalReason


@dataclass(kw_only=True)
class Verified:
    """Where the acceptance checks left the task."""

    outcome: LoopOutcome
    report: AcceptanceReport | None = None
    """The last checks' report (None: no checks ran)."""
    end_snapshot: Snapshot | None = None
    """The workspace as the last checks left it, when they were the last thing that ran."""
    history: list[CheckEvidence] = field(default_factory=list)
    """Every check of the task, run or reused, in order."""
    rounds: int = 0
    """Repair rounds the model was given."""


def stamped(
    evidence: Sequence[CheckEvidence], round_number: int, reused: bool = False
) -> tuple[CheckEvidence, ...]:
    """`evidence` marked with the repair round it belongs to (and whether it was reused)."""
    return tuple(replace(check, round=round_number, reused=reused) for check in evidence)


def task_result(
    *,
    session_id: str,
    task_id: str,
    model: str,
    loop: QueryLoop,
    verified: Verified,
    duration_s: float,
    retries: int | None,
) -> TaskResult:
    """The result of a task (`retries`: the repair rounds allowed, None without checks)."""
    runtime = loop.runtime
    scope = runtime.task
    outcome, report = verified.outcome, verified.report
    reason, error = outcome.reason, outcome.error
    if loop.stopped is not None:
        reason, error = loop.stopped.reason, loop.stopped.error
    passed: bool | None = None
    if retries is not None and reason is TerminalReason.COMPLETED:
        passed = report is not None and report.passed
        if report is not None and not report.passed:
            error = f"acceptance failed after {retries} repair rounds: {report.summary()}"
    return TaskResult(
        session_id=session_id,
        task_id=task_id,
        state=task_state_for(reason, passed),
        reason=reason,
        final_text=outcome.final_text,
        turns=loop.turns,
        duration_s=duration_s,
        usage=loop.usage,
        cost_usd=loop.cost_usd,
        acceptance=verified.history,
        repair_rounds=verified.rounds,
        model=model,
        stop_reason=loop.stop_reason,
        duration_api_s=loop.api_s,
        tool_calls=[record.summary() for record in runtime.records],
        # A subagent's denials are the task's too: it asked with the task's permissions.
        permission_denials=[*runtime.denials, *(scope.denials() if scope else ())],
        subagents=[record.to_json() for record in scope.subagents] if scope else [],
        error=error,
    )


def blocked_by_denials(result: TaskResult) -> None:
    """A task the model calls done without a check, after which the workspace is unchanged and
    some of its calls were denied, did not do what it set out to: it ends `permission_denied`
    (exit 4) rather than as an unverified success. Checks, where set, decide instead."""
    if result.state is not TaskState.UNVERIFIED or not result.permission_denials:
        return
    if result.changed_files:
        return
    denied = result.permission_denials
    result.reason = TerminalReason.PERMISSION_DENIED
    result.state = task_state_for(result.reason, None)
    what = "; ".join(f"{d['tool']}: {d['reason']}" for d in denied[:3])
    more = f" (and {len(denied) - 3} more)" if len(denied) > 3 else ""
    calls = "1 call was" if len(denied) == 1 else f"{len(denied)} calls were"
    result.error = f"the task changed nothing and {calls} denied: {what}{more}"
