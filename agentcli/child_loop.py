"""The loop of a subagent's child task: what is the child's own (its history, tools,
permissions, prompter, journal, events, model, budget, hooks) and what it shares with the
session it runs in (workspace and sandbox, retries, the catalogue, effort, the convergence
guard), put together.

The child's calls that may change something are bracketed as the user's task's own calls are
(`agentcli.attribution`), under the user's task's id: its undo checkpoint, `changed_files` and
acceptance checks cover them. The child's read-before-write guard starts empty (it has read
nothing). What the child spends is charged to the task that delegated as it happens, and that
task's budget stops the child too (`QueryLoop.upstream`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agentcli.catalogue import Catalogue
from agentcli.context import ContextSettings, ContextView
from agentcli.events import EventSink
from agentcli.hook_seams import TaskHooks
from agentcli.loop import LoopSettings, QueryLoop
from agentcli.loop_steps import TurnObserver
from agentcli.model import ModelClient
from agentcli.model.retry import RetryingModel, RetryPolicy
from agentcli.permissions import PermissionPolicy, Prompter
from agentcli.store import Journal
from agentcli.task_scope import TaskScope
from agentcli.tools.base import Tool, ToolContext
from agentcli.tools.runtime import BeforeChange, ToolRuntime
from agentcli.usage import Budget


@dataclass(frozen=True, kw_only=True)
class ChildLoop:
    """What is a subagent's own in the loop of its child task."""

    task_id: str
    agent: str
    """The subagent's type."""
    tools: Sequence[Tool[Any]]
    policy: PermissionPolicy
    prompter: Prompter
    journal: Journal
    events: EventSink
    system: str
    model: ModelClient
    budget: Budget
    hooks: TaskHooks
    changed: set[str] = field(default_factory=set)
    """Filled in as the child's calls change workspace paths (its own `changed_files`)."""


@dataclass(frozen=True, kw_only=True)
class SessionParts:
    """What a session lends each child loop (`ConversationManager.child_loop`)."""

    tool_context: ToolContext
    changes: Callable[[str, Callable[[set[str]], None]], BeforeChange]
    """The bracket around a call of a task (by id) that may change something, telling what
    each call changed to its second argument (`attribution.around_changes`)."""
    retry_policy: RetryPolicy
    loop_settings: LoopSettings
    context: ContextSettings
    catalogue: Catalogue
    guard: Callable[[], TurnObserver]
    """A fresh convergence guard."""


def build_child_loop(scope: TaskScope, child: ChildLoop, parts: SessionParts) -> QueryLoop:
    """The child's loop, working for the task of `scope` (see the module docstring)."""
    ctx = replace(parts.tool_context, read_hashes={}, confinement=None, call_id="", task=None)
    runtime = ToolRuntime(
        child.tools,
        ctx=ctx,
        policy=child.policy,
        prompter=child.prompter,
        journal=child.journal,
        events=child.events,
        before_change=parts.changes(scope.root_task_id, child.changed.update),
        hooks=child.hooks,
    )
    loop: QueryLoop
    model = RetryingModel(child.model, parts.retry_policy, deadline=lambda: loop.deadline)
    loop = QueryLoop(
        model=model,
        runtime=runtime,
        journal=child.journal,
        system=child.system,
        events=child.events,
        budget=child.budget,
        settings=parts.loop_settings,
        observers=[parts.guard(), child.hooks],
        context=ContextView(parts.context),
        catalogue=parts.catalogue,
        upstream=scope.account,
    )
    runtime.task = TaskScope(
        task_id=child.task_id,
        root_task_id=scope.root_task_id,
        account=loop,
        depth=scope.depth + 1,
        agent=child.agent,
        tools=tuple(tool.name for tool in child.tools),
        policy=child.policy,
        prompter=child.prompter,
        model=child.model,
    )
    return loop
