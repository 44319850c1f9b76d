"""`agent`: the model hands a self-contained job to a subagent and gets its answer back.

Claude Code's `Agent` tool (formerly `Task`; both names work in permission rules and hook
matchers): `{description, prompt, subagent_type?, model?}`. The call's risk is `delegate`: it
does nothing itself and is allowed in every mode unless a rule denies or asks (`agent(TYPE)`);
each call the subagent makes is decided on its own (`agentcli.agents.boundaries`).

Limits (`[agents]`): at most `max_concurrent` subagents of one task run at a time (more `agent`
calls in one response wait for a slot); a subagent at `max_depth` gets no `agent` tool; each
child's own turns, cost and time (`agentcli.agents.runner`). Cancelling the task cancels every
subagent, which closes its calls and stops its commands (and its own subagents'), before the
call ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from agentcli.agents.boundaries import child_policy, child_prompter, child_tools
from agentcli.agents.definitions import SUBAGENT_NOTE, AgentDefinition
from agentcli.agents.discovery import AgentCatalog, described
from agentcli.agents.report import result_text
from agentcli.errors import ToolError, ToolErrorKind
from agentcli.ids import new_id
from agentcli.model import ModelClient, ToolSpec
from agentcli.settings import AgentsSection
from agentcli.task_scope import TaskScope
from agentcli.tools.base import (
    PermissionTarget,
    Resources,
    Risk,
    Tool,
    ToolContext,
    ToolInput,
    ToolOutput,
    compact_schema,
    tree_resource,
)
from agentcli.usage import Budget

if TYPE_CHECKING:  # the runner (the child's loop) is imported when a subagent starts
    from agentcli.agents.runner import ChildPlan, ChildReport, Running, SessionHost

ModelFactory = Callable[[str], ModelClient]


class AgentInput(ToolInput):
    description: str = Field(
        min_length=1,
        max_length=200,
        description="A short (3-5 word) description of the job, shown to the user.",
    )
    prompt: str = Field(
        min_length=1,
        description="The job, complete in itself: the agent sees none of this conversation, "
        "only this text and the repository's instruction files. Say what to do, what you "
        "already know, and what to report back.",
    )
    subagent_type: str | None = Field(
        default=None, description="The type of agent (default `general`); see the list above."
    )
    model: str | None = Field(
        default=None,
        description="The model for this agent (opus, sonnet, haiku, fable, or a model id); "
        "default: the agent type's own, else yours.",
    )


DESCRIPTION = """\
Hand a self-contained job to a subagent. It works in a fresh context (none of this \
conversation: only your prompt and the repository's instructions) with its own tools, then \
returns one final answer as this call's result, followed by one line with its turns, tool \
calls, tokens, cost and the files it changed. Use it to keep your own context small (explore a \
large codebase, review a change) and to run independent jobs in parallel: several `agent` calls \
in one response run at the same time (up to {concurrent}). Give each a prompt that stands on \
its own. A subagent never has more permissions than you; agentcli limits each to {turns} turns \
and {wall:g} seconds{cost}, and what it spends counts in this task's budget. {depth}

Agent types:
{types}"""


class AgentTool(Tool[AgentInput]):
    name = "agent"
    description = "Hand a self-contained job to a subagent (the types are listed when bound)."
    input_model = AgentInput
    risk = Risk.DELEGATE

    def __init__(
        self,
        *,
        catalog: AgentCatalog,
        limits: AgentsSection,
        models: ModelFactory,
        system: Callable[[str], str],
    ) -> None:
        """`models`: makes a client for a model a subagent asks for; `system`: the system prompt
        for a subagent's own role (the environment and the instruction files added)."""
        self.catalog = catalog
        self.limits = limits
        self._models = models
        self._system = system
        self._host: SessionHost | None = None
        self._slots: dict[str, tuple[asyncio.Semaphore, int]] = {}
        self._asking = asyncio.Lock()
        """One question at a time, across every subagent of the session."""
        self.running: dict[str, Running] = {}
        """The subagents running now, by their `agent` call."""

    def bind(self, host: SessionHost) -> None:
        """Run subagents in `host`'s session (the composition root binds it once built)."""
        self._host = host

    def spec(self) -> ToolSpec:
        limits = self.limits
        depth = (
            "A subagent cannot start subagents of its own."
            if limits.max_depth <= 1
            else f"Subagents may delegate {limits.max_depth - 1} level(s) further."
        )
        text = DESCRIPTION.format(
            concurrent=limits.max_concurrent,
            turns=limits.max_turns,
            wall=limits.max_wall_s,
            cost="" if limits.max_cost_usd is None else f" and ${limits.max_cost_usd:g}",
            depth=depth,
            types=described(self.catalog.definitions),
        )
        from agentcli.tools.input_schema import input_schema

        schema = compact_schema(input_schema(self.input_model))
        return ToolSpec(name=self.name, description=text, input_schema=schema)

    # -- before it runs ----------------------------------------------------------------------
    def definition(self, args: AgentInput) -> AgentDefinition:
        wanted = args.subagent_type or "general"
        found = self.catalog.get(wanted)
        if found is None:
            raise ToolError(
                ToolErrorKind.INVALID_ARGUMENTS,
                f"there is no agent type {wanted!r}; the types are: "
                + ", ".join(self.catalog.names),
            )
        return found

    def validate(self, args: AgentInput, ctx: ToolContext) -> None:
        self.definition(args)

    def permission_target(self, args: AgentInput, ctx: ToolContext) -> PermissionTarget:
        name = self.definition(args).name
        return PermissionTarget(
            rule_class="agent", subject=name, summary=f"start the {name} agent: {args.description}"
        )

    def preview(self, args: AgentInput, ctx: ToolContext) -> str:
        return args.prompt

    def resources(self, args: AgentInput, ctx: ToolContext) -> Resources:
        # Subagents run alongside each other and the parent's reads, never alongside its
        # writes or commands (which wait for them, and they for those).
        workspace = Path(os.path.realpath(ctx.workspace))
        return Resources(reads=frozenset({tree_resource(workspace)}))

    # -- running it --------------------------------------------------------------------------
    async def call(self, args: AgentInput, ctx: ToolContext) -> ToolOutput:
        host, scope = self._host, ctx.task
        if host is None or scope is None:
            raise ToolError(ToolErrorKind.INTERNAL, "the agent tool runs only inside a task")
        if scope.depth >= self.limits.max_depth:
            raise ToolError(
                ToolErrorKind.PERMISSION_DENIED,
                f"a subagent may not start another here: delegation goes "
                f"{self.limits.max_depth} level(s) deep at most ([agents] max_depth)",
            )
        plan = self._plan(host, scope, args, ctx.call_id)
        async with self._slot(scope.task_id):
            report = await self._run(host, scope, plan)
        return ToolOutput(
            text=result_text(report.record, report.final_text),
            source={
                "agent": report.record.agent_type,
                "task_id": report.record.task_id,
                "state": report.record.state,
                "reason": report.record.reason,
            },
            is_error=report.record.reason != "completed",
        )

    async def _run(self, host: SessionHost, scope: TaskScope, plan: ChildPlan) -> ChildReport:
        """The child runs as a task of its own, so a cancel of this call reaches it as one:
        it closes its calls and stops its commands, and this call ends only after it has."""
        from agentcli.agents.runner import run_child

        task_id = new_id()
        child = asyncio.create_task(run_child(host, scope, plan, task_id, self.running))
        try:
            report = await asyncio.shield(child)
        except asyncio.CancelledError:
            child.cancel()
            while not child.done():
                # A cancel repeated meanwhile (the runtime cancels every call it stops) must not
                # end this call before the child has closed its calls and stopped its commands.
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait({child})
            if not child.cancelled() and child.exception() is None:
                scope.subagents.append(child.result().record)
            raise
        scope.subagents.append(report.record)
        return report

    @contextlib.asynccontextmanager
    async def _slot(self, task_id: str) -> AsyncIterator[None]:
        """One of the `max_concurrent` places for subagents of the task `task_id`."""
        semaphore, users = self._slots.get(task_id) or (
            asyncio.Semaphore(self.limits.max_concurrent),
            0,
        )
        self._slots[task_id] = (semaphore, users + 1)
        try:
            async with semaphore:
                yield
        finally:
            semaphore, users = self._slots[task_id]
            if users <= 1:
                del self._slots[task_id]
            else:
                self._slots[task_id] = (semaphore, users - 1)

    def _plan(
        self, host: SessionHost, scope: TaskScope, args: AgentInput, call_id: str
    ) -> ChildPlan:
        definition = self.definition(args)
        # What the delegating task has (the user's task: the session's; a subagent: its own).
        parent_tools = [t for t in host.tools if scope.tools is None or t.name in scope.tools]
        model, owns = self._model(host, scope.model or host.model, args.model or definition.model)
        label = definition.name
        limits = self.limits
        turns = min(definition.max_turns or limits.max_turns, limits.max_turns)
        prompter = child_prompter(
            scope.prompter or host.prompter,
            label,
            self._asking,
            never_asks=definition.never_asks,
        )
        role = f"{definition.prompt}\n\n{SUBAGENT_NOTE.format(name=label)}"
        from agentcli.agents.runner import ChildPlan

        return ChildPlan(
            call_id=call_id,
            agent=label,
            description=args.description,
            prompt=args.prompt,
            system=self._system(role),
            model=model,
            owns_model=owns,
            tools=child_tools(
                parent_tools, definition, may_delegate=scope.depth + 1 < limits.max_depth
            ),
            policy=child_policy(scope.policy or host.policy, definition.mode),
            prompter=prompter,
            budget=Budget(
                max_turns=turns, max_cost_usd=limits.max_cost_usd, timeout_s=limits.max_wall_s
            ),
        )

    def _model(
        self, host: SessionHost, parent: ModelClient, name: str | None
    ) -> tuple[ModelClient, bool]:
        """The client for the model a subagent asked for (`parent`'s when None), and whether
        it was made for the subagent."""
        if name is None:
            return parent, False
        catalogue = host.catalogue
        model_id = catalogue.resolve(name)
        if model_id == parent.model:
            return parent, False
        limited = host.budget.max_cost_usd is not None or self.limits.max_cost_usd is not None
        if limited and catalogue.lookup(model_id).price is None:
            raise ToolError(
                ToolErrorKind.INVALID_ARGUMENTS,
                f"the price of model {model_id!r} is unknown, so the cost limits cannot be "
                "enforced on a subagent using it: leave `model` out, or name a model with a "
                "known price",
            )
        return self._models(model_id), True

    def lines(self) -> list[str]:
        """The subagents running now, one line each (`/agents`)."""
        lines = []
        for now in self.running.values():
            turns, usage, cost = now.progress()
            spent = "cost unknown" if cost is None else f"${cost:.4f}"
            lines.append(
                f"{now.agent}: {now.description} · {turns} turns · {usage.total_tokens} tokens · "
                f"{spent} · {now.model}"
            )
        return lines


def agent_tool_of(tools: Any) -> AgentTool | None:
    """The `agent` tool among a session's `tools`, if it has one."""
    return next((tool for tool in tools if isinstance(tool, AgentTool)), None)
