"""ConversationManager: the session's durable state and the life of each task in it.

It owns the session id, the message history, the tools' shared context and the journal; for each
user request it creates a task, runs a QueryLoop over the history, and turns the loop's outcome
(plus acceptance evidence) into a TaskResult with a task state decided by code.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentcli.events import EventSink, TaskStarted
from agentcli.ids import new_id
from agentcli.loop import LoopOutcome, LoopSettings, QueryLoop, TurnObserver
from agentcli.messages import Message
from agentcli.model import ModelClient
from agentcli.model.retry import RetryingModel, RetryPolicy
from agentcli.permissions import PermissionPolicy, Prompter
from agentcli.store import Journal
from agentcli.tasks import TaskResult, task_state_for
from agentcli.tools.base import Tool, ToolContext
from agentcli.tools.runtime import ToolRuntime
from agentcli.usage import Budget


@dataclass(kw_only=True)
class ConversationManager:
    model: ModelClient
    tools: Sequence[Tool[Any]]
    tool_context: ToolContext
    policy: PermissionPolicy
    prompter: Prompter
    journal: Journal
    system: str
    events: EventSink
    budget: Budget = field(default_factory=Budget)
    loop_settings: LoopSettings = field(default_factory=LoopSettings)
    retry_policy: RetryPolicy = field(default_factory=RetryPolicy)
    session_id: str = field(default_factory=new_id)
    messages: list[Message] = field(default_factory=list)

    def new_loop(self, observers: Sequence[TurnObserver] = ()) -> QueryLoop:
        """A QueryLoop for one task, with its own runtime, counters and deadline."""
        runtime = ToolRuntime(
            self.tools,
            ctx=self.tool_context,
            policy=self.policy,
            prompter=self.prompter,
            journal=self.journal,
            events=self.events,
        )
        loop: QueryLoop
        model = RetryingModel(self.model, self.retry_policy, deadline=lambda: loop.deadline)
        loop = QueryLoop(
            model=model,
            runtime=runtime,
            journal=self.journal,
            system=self.system,
            events=self.events,
            budget=self.budget,
            settings=self.loop_settings,
            observers=observers,
        )
        return loop

    async def run_task(self, prompt: str) -> TaskResult:
        """Run one user request to a terminal state. Never raises for task-ending conditions."""
        task_id = new_id()
        started = time.monotonic()
        self.events(
            TaskStarted(
                session_id=self.session_id, task_id=task_id, prompt=prompt, model=self.model.model
            )
        )
        loop = self.new_loop()
        request = Message.user(prompt)
        self.journal.message_appended(request)
        outcome = await loop.run([*self.messages, request])
        self.messages = outcome.messages
        return self._result(task_id, loop, outcome, time.monotonic() - started)

    def _result(
        self, task_id: str, loop: QueryLoop, outcome: LoopOutcome, duration_s: float
    ) -> TaskResult:
        runtime = loop.runtime
        return TaskResult(
            session_id=self.session_id,
            task_id=task_id,
            state=task_state_for(outcome.reason, None),
            reason=outcome.reason,
            final_text=outcome.final_text,
            turns=loop.turns,
            duration_s=duration_s,
            usage=loop.usage,
            cost_usd=loop.cost_usd,
            tool_calls=[record.summary() for record in runtime.records],
            permission_denials=list(runtime.denials),
            error=outcome.error,
        )
