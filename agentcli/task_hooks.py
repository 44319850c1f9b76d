"""What hooks do to a task (the hooks themselves are `agentcli.hook_seams.TaskHooks`):

- a prompt a UserPromptSubmit hook blocked is never sent: the task ends (`prompt_blocked`);
  what the hooks add as context goes with the prompt, apart from it (`prompt_message`);
- when the model ends its turn the Stop hooks run first, before any acceptance check
  (`settle`). A Stop hook that blocks sends the model back to work with its reason (the checks
  then run only once the model ends again), at most `STOP_CONTINUATIONS` times in a row; after
  that the task ends as it would have. A Stop hook that says `continue: false` ends the task,
  failed (`hook_stopped`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from dataclasses import replace
from typing import Protocol, TypeVar

from agentcli.events import EventSink, Notice
from agentcli.hook_seams import STOP_CONTINUATIONS, HookBlock, TaskHooks
from agentcli.loop import LoopOutcome, QueryLoop
from agentcli.messages import Message, TextBlock
from agentcli.store import Journal
from agentcli.tasks import TaskResult, task_state_for
from agentcli.terminal_reason import TerminalReason
from agentcli.usage import Usage

T = TypeVar("T")


class Finishing(Protocol):
    """Awaits a step outside the loop; a cancel meanwhile marks the task aborted (None)."""

    async def __call__(self, loop: QueryLoop, work: Awaitable[T]) -> T | None: ...


def prompt_message(prompt: str, context: str) -> Message:
    """The user message of a task's prompt, with what the hooks add after it."""
    message = Message.user(prompt)
    if not context:
        return message
    return Message(
        role="user", content=(*message.content, TextBlock(f"Context from hooks:\n{context}"))
    )


def prompt_blocked(
    session_id: str, task_id: str, model: str, block: HookBlock, started: float
) -> TaskResult:
    """The result of a task (started at `started`, `time.monotonic`) whose prompt a
    UserPromptSubmit hook kept from the model."""
    return TaskResult(
        session_id=session_id,
        task_id=task_id,
        state=task_state_for(TerminalReason.HOOK_STOPPED, None),
        reason=TerminalReason.HOOK_STOPPED,
        final_text=None,
        turns=0,
        duration_s=time.monotonic() - started,
        usage=Usage(),
        cost_usd=0.0,
        model=model,
        hook_blocks=[block.to_json()],
        error=f"the prompt was not sent: blocked by the {block.event} hook `{block.hook}`: "
        f"{block.reason}",
    )


async def settle(
    loop: QueryLoop,
    outcome: LoopOutcome,
    hooks: TaskHooks,
    journal: Journal,
    events: EventSink,
    finishing: Finishing,
) -> LoopOutcome:
    """`outcome` once the Stop hooks let the model stop (see the module docstring)."""
    streak = 0
    while outcome.reason is TerminalReason.COMPLETED and loop.stopped is None:
        verdict = await finishing(loop, hooks.stopping(outcome.final_text, active=streak > 0))
        if verdict is None:  # cancelled meanwhile: the loop says so
            return outcome
        if verdict.stop is not None:
            return replace(
                outcome, reason=TerminalReason.HOOK_STOPPED, error=verdict.stop.describe()
            )
        if verdict.again is None:
            return outcome
        if streak >= STOP_CONTINUATIONS:
            events(
                Notice(
                    level="warning",
                    message=f"Stop hooks sent the model back {streak} times in a row; the task "
                    "ends as it would have without them",
                )
            )
            return outcome
        streak += 1
        feedback = Message.user(
            f"A Stop hook (`{verdict.again.hook}`) sent you back to work:\n{verdict.again.reason}"
        )
        journal.message_appended(feedback)
        outcome = await loop.run([*outcome.messages, feedback])
    return outcome
