"""What the core asks of hooks, and what hooks answer: the seams the tool runtime, the
conversation and the live session call at each event, and the record of one hook run the
journal keeps.

`agentcli.hooks` implements these; the session core (`agentcli.session.build`) plugs its engine
into the conversation, which hands each task's `TaskHooks` to the tool runtime (PreToolUse,
PostToolUse, PostToolUseFailure) and to the loop as a turn observer (what the hooks said for
the model after a batch of calls). `NO_HOOKS` is the engine of a session without hooks.

A leaf of shared words (it imports only the vocabulary and the loop's small step vocabulary), so
the core never imports the hooks package and the journal can store its records.
"""

from __future__ import annotations

from collections.abc import Awaitable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agentcli.call_records import ToolCallRecord
from agentcli.loop_steps import Nudge, Stop, TurnObserver
from agentcli.vocabulary import Decision

STOP_CONTINUATIONS = 8
"""How many times in a row Stop hooks may send the model back before the task ends anyway."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HookRun:
    """One run of one hook, as the journal keeps it."""

    event: str
    source: str
    """Where the hook is configured: `user`, `project` or `local`."""
    command: str
    exit_code: int | None
    """None: it did not exit by itself (timed out and stopped, or could not start)."""
    duration_s: float
    decision: str | None
    """What it decided: `allow`, `ask`, `deny`, `block`, `stop`, or None (nothing)."""
    reason: str = ""
    """Why (its reason, or what went wrong with it)."""
    timed_out: bool = False
    tool_use_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class HookBlock:
    """A hook that blocked or stopped something: the task's result lists them."""

    event: str
    hook: str
    """The hook's command."""
    source: str
    reason: str
    tool: str | None = None
    call_id: str | None = None

    def describe(self) -> str:
        """What the task's error says when this hook ended it."""
        return f"stopped by the {self.event} hook `{self.hook}`: {self.reason}"

    def to_json(self) -> dict[str, Any]:
        return {
            "event": self.event,
            "hook": self.hook,
            "source": self.source,
            "reason": self.reason,
            "tool": self.tool,
            "call_id": self.call_id,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class BeforeCall:
    """What the PreToolUse hooks said of one call (deny > ask > allow)."""

    decision: Decision | None = None
    """None: no hook gave a decision."""
    reason: str = ""
    hook: str = ""
    """The hook whose decision this is (its command)."""
    block: HookBlock | None = None
    """Set when the call must not run (deny, or exit code 2)."""
    updated_input: dict[str, Any] | None = None
    """The input a hook replaced the model's with (validated like the model's)."""
    updated_by: str = ""
    stop: HookBlock | None = None
    """A hook said `continue: false`: the task ends."""


NO_OPINION = BeforeCall()


@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentLabel:
    """Which subagent a child task's hooks fire for (Claude Code's `agent_id`, `agent_type`)."""

    agent_id: str
    """The child task's id."""
    agent_type: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptVerdict:
    """What the UserPromptSubmit hooks (and a session start's hooks) said of a prompt."""

    block: HookBlock | None = None
    """The prompt is not sent: the task ends (exit code 2, `decision: block`, or
    `continue: false`)."""
    context: str = ""
    """What the model is told with the prompt."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StopVerdict:
    """What the Stop hooks said when the model ended its turn."""

    again: HookBlock | None = None
    """A hook sends the model back to work, with its reason."""
    stop: HookBlock | None = None
    """A hook said `continue: false`: the task ends, failed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactVerdict:
    """What the PreCompact hooks said."""

    block: HookBlock | None = None
    """Compaction must not happen now."""


class ToolHooks(Protocol):
    """The tool runtime's seam: called for each call it runs."""

    async def before_call(self, record: ToolCallRecord) -> BeforeCall:
        """PreToolUse, once the input is valid and before permission is decided."""
        ...

    async def after_call(self, record: ToolCallRecord) -> None:
        """PostToolUse (or PostToolUseFailure) of a call that ran; what the hooks say for
        the model goes with the batch's results (`after_tools`)."""
        ...


class TaskHooks(ToolHooks, TurnObserver, Protocol):
    """One task's hooks: its prompt, its calls, its end."""

    async def prompt_submitted(self, prompt: str) -> PromptVerdict: ...

    async def stopping(self, last_message: str | None, *, active: bool) -> StopVerdict:
        """`active`: the model is working again because a Stop hook sent it back."""
        ...

    @property
    def blocks(self) -> Sequence[HookBlock]:
        """Everything the task's hooks blocked or stopped, in order."""
        ...


class SessionHooks(Protocol):
    """A session's hooks (the conversation holds one; the live session fires the session's
    own events through it)."""

    def for_task(self, agent: SubagentLabel | None = None) -> TaskHooks:
        """The hooks of one task; `agent`: of a subagent's child task (its tool events tell
        the hooks `agent_id` and `agent_type`)."""
        ...

    async def session_started(self, source: str) -> None:
        """SessionStart (`startup`, `resume`, `clear`, `compact`): what the hooks add as
        context goes to the model with the next prompt."""

    def end_session(self, reason: str) -> Awaitable[None]:
        """SessionEnd (`clear`, `resume`, `prompt_input_exit`, `other`) of the session as it is
        now: its hooks start at once (when an event loop runs), so a resume or a clear right
        after does not change the session they are told of; await it to wait for them."""
        ...

    async def compacting(self, trigger: str, instructions: str = "") -> CompactVerdict:
        """PreCompact (`manual`, `auto`): call before compacting; a block means do not."""
        ...


class _NoTaskHooks:
    blocks: Sequence[HookBlock] = ()

    async def before_call(self, record: ToolCallRecord) -> BeforeCall:
        return NO_OPINION

    async def after_call(self, record: ToolCallRecord) -> None:
        return None

    async def after_tools(self, records: Sequence[ToolCallRecord]) -> Nudge | Stop | None:
        return None

    async def prompt_submitted(self, prompt: str) -> PromptVerdict:
        return PromptVerdict()

    async def stopping(self, last_message: str | None, *, active: bool) -> StopVerdict:
        return StopVerdict()


class NoHooks:
    """A session without hooks."""

    def for_task(self, agent: SubagentLabel | None = None) -> TaskHooks:
        return _NoTaskHooks()

    async def session_started(self, source: str) -> None:
        return None

    def end_session(self, reason: str) -> Awaitable[None]:
        return _done()

    async def compacting(self, trigger: str, instructions: str = "") -> CompactVerdict:
        return CompactVerdict()


class Done:
    """An awaitable that is already done (made without an event loop; never "not awaited")."""

    def __await__(self) -> Generator[Any, None, None]:
        yield from ()


def _done() -> Awaitable[None]:
    return Done()


NO_HOOKS: SessionHooks = NoHooks()
