"""Typed events the loop and the task runner emit while they work.

Renderers (rich text, JSON lines, the REPL) subscribe to these; the loop never prints. Each event
serializes itself for `--output-format stream-json` with a `type` field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from agentcli.usage import Usage


@dataclass(frozen=True, slots=True)
class Event:
    type: ClassVar[str] = "event"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": self.type}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            data[f.name] = value.as_dict() if isinstance(value, Usage) else value
        return data


@dataclass(frozen=True, slots=True)
class TaskStarted(Event):
    type: ClassVar[str] = "task_started"
    session_id: str
    task_id: str
    prompt: str
    model: str


@dataclass(frozen=True, slots=True)
class TurnStarted(Event):
    type: ClassVar[str] = "turn_started"
    turn: int


@dataclass(frozen=True, slots=True)
class TextDelta(Event):
    type: ClassVar[str] = "text_delta"
    text: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta(Event):
    type: ClassVar[str] = "thinking_delta"
    text: str


@dataclass(frozen=True, slots=True)
class ModelRetrying(Event):
    """A model request failed in a retryable way; anything streamed from it is void."""

    type: ClassVar[str] = "model_retrying"
    attempt: int
    delay_s: float
    reason: str


@dataclass(frozen=True, slots=True)
class ModelResponded(Event):
    type: ClassVar[str] = "model_responded"
    turn: int
    stop_reason: str
    usage: Usage
    text: str
    tool_calls: int


@dataclass(frozen=True, slots=True)
class ToolCallProposed(Event):
    type: ClassVar[str] = "tool_call_proposed"
    call_id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True, slots=True)
class PermissionAsked(Event):
    type: ClassVar[str] = "permission_asked"
    call_id: str
    name: str
    summary: str


@dataclass(frozen=True, slots=True)
class PermissionDecided(Event):
    type: ClassVar[str] = "permission_decided"
    call_id: str
    name: str
    decision: str
    reason: str
    rule: str | None = None
    """The narrowest allow rule that would have allowed a denied call (None: none would, as
    under a deny rule, or it was allowed)."""


@dataclass(frozen=True, slots=True)
class ToolCallStarted(Event):
    type: ClassVar[str] = "tool_call_started"
    call_id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolCallFinished(Event):
    type: ClassVar[str] = "tool_call_finished"
    call_id: str
    name: str
    status: str
    is_error: bool
    summary: str
    duration_s: float


@dataclass(frozen=True, slots=True)
class UsageUpdated(Event):
    type: ClassVar[str] = "usage"
    usage: Usage
    cost_usd: float | None


@dataclass(frozen=True, slots=True)
class Notice(Event):
    """Something the user should know that is not an error of the task itself."""

    type: ClassVar[str] = "notice"
    level: str
    message: str


@dataclass(frozen=True, slots=True)
class McpServerFailed(Event):
    """An MCP server did not start, or stopped while the session used it: the run goes on
    without its tools (text progress leaves it to the line said on stderr)."""

    type: ClassVar[str] = "mcp_server_failed"
    server: str
    source: str
    """Where it was configured (a file's path, or `--mcp-config FILE`)."""
    error: str
    stderr_tail: str


@dataclass(frozen=True, slots=True)
class AcceptanceStarted(Event):
    type: ClassVar[str] = "acceptance_started"
    command: str
    artifact_version: str | None


@dataclass(frozen=True, slots=True)
class AcceptanceFinished(Event):
    type: ClassVar[str] = "acceptance_finished"
    command: str
    passed: bool
    exit_code: int | None
    duration_s: float
    artifact_version: str | None


@dataclass(frozen=True, slots=True)
class RepairRound(Event):
    """The checks failed and the model gets their evidence for another round."""

    type: ClassVar[str] = "repair_round"
    round: int
    of: int
    failed: list[str]
    """The commands that failed."""
    unchanged: bool
    """The workspace had not changed since these checks last ran: their evidence was reused."""


@dataclass(frozen=True, slots=True)
class HookStarted(Event):
    """A hook (`agentcli.hooks`) started for an event."""

    type: ClassVar[str] = "hook_started"
    event: str
    source: str
    """Where it is configured: `user`, `project` or `local`."""
    command: str
    tool_use_id: str | None


@dataclass(frozen=True, slots=True)
class HookFinished(Event):
    """A hook ended: how, and what it decided (`allow`, `ask`, `deny`, `block`, `stop`, or
    None). `blocked`: it blocked or stopped something (text progress prints a line for it)."""

    type: ClassVar[str] = "hook_finished"
    event: str
    source: str
    command: str
    tool_use_id: str | None
    exit_code: int | None
    duration_s: float
    decision: str | None
    blocked: bool
    reason: str


# -- long sessions: the todo list and compaction (`agentcli.todo`, `agentcli.context`) ------
@dataclass(frozen=True, slots=True)
class TodoUpdated(Event):
    """`todo_write` saved a new list: the whole list, in order."""

    type: ClassVar[str] = "todo_updated"
    todos: list[dict[str, str]]
    """Each item as `{"content", "status", "activeForm"}`."""


@dataclass(frozen=True, slots=True)
class ContextFilling(Event):
    """A response reported a context above `[context] warn_at` of the window (said once until
    a compaction makes room)."""

    type: ClassVar[str] = "context_filling"
    tokens: int
    window: int
    compact_at: int | None
    """The context size at which older turns are compacted (None: auto-compaction is off)."""


@dataclass(frozen=True, slots=True)
class CompactionStarted(Event):
    type: ClassVar[str] = "compaction_started"
    trigger: str
    """`auto` (the context passed `auto_compact_at`) or `manual` (`/compact`)."""
    tokens_before: int


@dataclass(frozen=True, slots=True)
class CompactionFinished(Event):
    """A compaction ended: its summary now stands for the older turns in what the model is
    sent; or it failed (`error`), and what is sent is unchanged."""

    type: ClassVar[str] = "compaction_finished"
    trigger: str
    tokens_before: int
    tokens_after: int
    """An estimate of what the model is sent from now on."""
    summary_length: int
    messages_compacted: int
    """Messages of the history no longer sent as they are (the journal keeps them)."""
    error: str | None = None


EventSink = Callable[[Event], None]


def discard(_event: Event) -> None:
    """An event sink that ignores everything."""


@dataclass(frozen=True, slots=True)
class SubagentStarted(Event):
    """An `agent` call started a subagent: a child task with its own context."""

    type: ClassVar[str] = "subagent_started"
    parent_tool_use_id: str
    """The `agent` call (its result will be the subagent's answer)."""
    agent: str
    """The subagent's type (`explore`, `general`, or a definition's name)."""
    description: str
    task_id: str
    """The child task's id (in the journal, under the parent task)."""
    model: str


@dataclass(frozen=True, slots=True)
class SubagentFinished(Event):
    """A subagent ended: how, and what it spent (counted in its parent task's usage)."""

    type: ClassVar[str] = "subagent_finished"
    parent_tool_use_id: str
    agent: str
    description: str
    task_id: str
    state: str
    reason: str
    turns: int
    tool_calls: int
    usage: Usage
    cost_usd: float | None
    changed_files: list[str]
    error: str | None


@dataclass(frozen=True, slots=True)
class SubagentEvent(Event):
    """An event of a subagent's child task, as its parent's sink receives it: the event itself
    plus which `agent` call and type of subagent it belongs to (stream-json: the event's own
    fields with `parent_tool_use_id` and `agent`)."""

    type: ClassVar[str] = "subagent_event"
    event: Event
    parent_tool_use_id: str
    agent: str

    def to_json(self) -> dict[str, Any]:
        data = self.event.to_json()
        # A nested subagent's event keeps its own `agent` call and type (the inner ones).
        data.setdefault("parent_tool_use_id", self.parent_tool_use_id)
        data.setdefault("agent", self.agent)
        return data

    @property
    def innermost(self) -> Event:
        """The event itself, under every level of nesting (a subagent's subagent)."""
        inner = self.event
        while isinstance(inner, SubagentEvent):
            inner = inner.event
        return inner
