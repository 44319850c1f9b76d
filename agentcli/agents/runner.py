"""Running one subagent: a child task with its own context, to its end.

The child's history starts with the delegation prompt alone (never its parent's history); its
system prompt is the definition's, then the environment and the instruction files. Its loop is
the session's (`ConversationManager.child_loop`) with the child's own tools, permissions,
prompter, journal, events, model and limits: `max_turns` (a definition's `maxTurns` may only
lower it), `max_cost_usd` and `max_wall_s`, each checked before every model call of the child;
what it spends is charged to its parent task as it happens, and the parent's budget stops it
too. Whatever stops it, it ends with a record (`SubagentRecord`) and its last words, which
become the `agent` call's result: a limit is the child's outcome, never an error of the parent.

Its journal is a child task of the parent task (`Journal.child`); its events reach the session's
renderers labelled with the `agent` call and the subagent's type (`SubagentEvent`), between a
`SubagentStarted` and a `SubagentFinished`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentcli.catalogue import Catalogue
from agentcli.child_loop import ChildLoop
from agentcli.events import Event, SubagentEvent, SubagentFinished, SubagentStarted
from agentcli.hook_seams import SessionHooks, SubagentLabel
from agentcli.loop import LoopOutcome, QueryLoop
from agentcli.messages import Message
from agentcli.model import ModelClient
from agentcli.permissions import PermissionPolicy, Prompter
from agentcli.store import Journal
from agentcli.task_scope import SubagentRecord, SubagentStart, TaskScope
from agentcli.tasks import TaskResult, task_state_for
from agentcli.terminal_reason import TerminalReason
from agentcli.tools.base import Tool
from agentcli.usage import Budget, Usage


class SessionHost(Protocol):
    """What a subagent needs of the session it runs in (the `ConversationManager`, read at
    each delegation: a model or mode switched since applies)."""

    @property
    def tools(self) -> Sequence[Tool[Any]]: ...

    @property
    def policy(self) -> PermissionPolicy: ...

    @property
    def prompter(self) -> Prompter: ...

    @property
    def journal(self) -> Journal: ...

    @property
    def model(self) -> ModelClient: ...

    @property
    def hooks(self) -> SessionHooks: ...

    @property
    def catalogue(self) -> Catalogue: ...

    @property
    def budget(self) -> Budget:
        """The user's task limits (`--max-cost`, ...)."""
        ...

    def emit(self, event: Event) -> None: ...

    def child_loop(self, scope: TaskScope, child: ChildLoop) -> QueryLoop: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ChildPlan:
    """One subagent to run: everything decided before it starts."""

    call_id: str
    agent: str
    description: str
    prompt: str
    system: str
    model: ModelClient
    owns_model: bool
    """The client was made for this child (closed when it ends)."""
    tools: Sequence[Tool[Any]]
    policy: PermissionPolicy
    prompter: Prompter
    budget: Budget


@dataclass(kw_only=True)
class Running:
    """A subagent while it runs (what `/agents` lists)."""

    call_id: str
    task_id: str
    agent: str
    description: str
    model: str
    started: float = field(default_factory=time.monotonic)
    loop: QueryLoop | None = None

    def progress(self) -> tuple[int, Usage, float | None]:
        """Its turns, tokens and cost so far."""
        loop = self.loop
        return (0, Usage(), 0.0) if loop is None else (loop.turns, loop.usage, loop.cost_usd)


@dataclass(frozen=True, slots=True)
class ChildReport:
    record: SubagentRecord
    final_text: str | None


async def run_child(
    host: SessionHost,
    scope: TaskScope,
    plan: ChildPlan,
    task_id: str,
    running: dict[str, Running],
) -> ChildReport:
    """Run the child of `plan` for the task of `scope` to its end (see the module docstring).
    `running` holds it while it runs."""
    start = SubagentStart(
        task_id=task_id,
        parent_task_id=scope.task_id,
        parent_call_id=plan.call_id,
        agent_type=plan.agent,
        description=plan.description,
        prompt=plan.prompt,
        model=plan.model.model,
    )
    journal = host.journal.child(start)

    def events(event: Event) -> None:
        host.emit(SubagentEvent(event=event, parent_tool_use_id=plan.call_id, agent=plan.agent))

    host.emit(
        SubagentStarted(
            parent_tool_use_id=plan.call_id,
            agent=plan.agent,
            description=plan.description,
            task_id=task_id,
            model=plan.model.model,
        )
    )
    child = ChildLoop(
        task_id=task_id,
        agent=plan.agent,
        tools=plan.tools,
        policy=plan.policy,
        prompter=plan.prompter,
        journal=journal,
        events=events,
        system=plan.system,
        model=plan.model,
        budget=plan.budget,
        hooks=host.hooks.for_task(SubagentLabel(agent_id=task_id, agent_type=plan.agent)),
    )
    now = running[plan.call_id] = Running(
        call_id=plan.call_id,
        task_id=task_id,
        agent=plan.agent,
        description=plan.description,
        model=plan.model.model,
    )
    try:
        loop = now.loop = host.child_loop(scope, child)
        first = Message.user(plan.prompt)
        journal.message_appended(first)
        outcome = await loop.run([first])
    finally:
        running.pop(plan.call_id, None)
        if plan.owns_model:
            with contextlib.suppress(Exception):
                await plan.model.aclose()
    record = _record(plan, task_id, loop, outcome, child)
    journal.task_finished(_journal_result(task_id, loop, outcome))
    host.emit(
        SubagentFinished(
            parent_tool_use_id=plan.call_id,
            agent=plan.agent,
            description=plan.description,
            task_id=task_id,
            state=record.state,
            reason=record.reason,
            turns=record.turns,
            tool_calls=record.tool_calls,
            usage=record.usage,
            cost_usd=record.cost_usd,
            changed_files=list(record.changed_files),
            error=record.error,
        )
    )
    return ChildReport(record=record, final_text=outcome.final_text)


def _state(reason: TerminalReason) -> str:
    """A child task's state: it has no checks of its own (its parent's verify its work)."""
    if reason is TerminalReason.COMPLETED:
        return "completed"
    return task_state_for(reason, None).value


def _record(
    plan: ChildPlan, task_id: str, loop: QueryLoop, outcome: LoopOutcome, child: ChildLoop
) -> SubagentRecord:
    runtime = loop.runtime
    scope = runtime.task
    # What its own subagents changed, and what was denied or blocked of theirs, is its too.
    changed = child.changed
    files = set(changed).union(*(r.changed_files for r in scope.subagents)) if scope else changed
    own = [{**denial, "agent": plan.agent} for denial in runtime.denials]
    denials = [*own, *(scope.denials() if scope else ())]
    blocks = [{**block.to_json(), "agent": plan.agent} for block in child.hooks.blocks]
    blocks += scope.hook_blocks() if scope else []
    return SubagentRecord(
        task_id=task_id,
        tool_use_id=plan.call_id,
        agent_type=plan.agent,
        description=plan.description,
        model=plan.model.model,
        state=_state(outcome.reason),
        reason=outcome.reason.value,
        error=_why(plan.budget, loop, outcome),
        turns=loop.turns,
        tool_calls=len(runtime.records),
        usage=loop.usage,
        cost_usd=loop.cost_usd,
        changed_files=tuple(sorted(files)),
        denials=tuple(denials),
        hook_blocks=tuple(blocks),
    )


def _why(budget: Budget, loop: QueryLoop, outcome: LoopOutcome) -> str | None:
    """Why the child stopped, naming its own limit when that is what stopped it (the loop's
    words name the task's flags, which stop a child too)."""
    reason, cost = outcome.reason, loop.cost_usd
    if reason is TerminalReason.MAX_TURNS and budget.max_turns and loop.turns >= budget.max_turns:
        return f"reached its limit of {budget.max_turns} turns"
    limit = budget.max_cost_usd
    if reason is TerminalReason.BUDGET_EXCEEDED and limit and cost is not None and cost >= limit:
        return f"spent ${cost:.4f} of its limit of ${limit:g}"
    if reason is TerminalReason.TIMEOUT:  # the task's own time limit cancels it instead
        return f"its time limit of {budget.timeout_s:g}s ran out"
    return outcome.error


def _journal_result(task_id: str, loop: QueryLoop, outcome: LoopOutcome) -> TaskResult:
    """What the child task's journal records of its end."""
    return TaskResult(
        session_id="",
        task_id=task_id,
        state=task_state_for(outcome.reason, None),
        reason=outcome.reason,
        final_text=outcome.final_text,
        turns=loop.turns,
        duration_s=0.0,
        usage=loop.usage,
        cost_usd=loop.cost_usd,
        error=outcome.error,
        model=loop.model.model,
    )
