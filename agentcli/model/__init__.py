"""The model seam: what the loop needs from a language model, and nothing provider-specific.

`ModelClient` is the Protocol the loop depends on. The Anthropic transports (`model.http`, the
default, and `model.anthropic`, the only module that imports the SDK) and the scripted doubles in
`agentcli.testing` implement it.
This package's `__init__` stays import-light so commands that never call a model start fast.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentcli.catalogue import Effort, ModelSpec
from agentcli.events import EventSink
from agentcli.messages import Message
from agentcli.usage import Usage


class StopReason(enum.StrEnum):
    END_TURN = "end_turn"
    TOOL_USE = "tool_use"
    MAX_TOKENS = "max_tokens"
    STOP_SEQUENCE = "stop_sequence"
    PAUSE_TURN = "pause_turn"
    REFUSAL = "refusal"
    CONTEXT_WINDOW_EXCEEDED = "model_context_window_exceeded"


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model sees it: name, description and a JSON schema for its input."""

    name: str
    description: str
    input_schema: dict[str, Any]

    def to_wire(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }


@dataclass(frozen=True, slots=True)
class ServerCompaction:
    """Ask the Messages API to compact the context itself (`compact_20260112`) once the prompt
    passes `trigger_tokens`, with `instructions` in place of its own summary prompt."""

    trigger_tokens: int
    instructions: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRequest:
    system: str
    messages: Sequence[Message]
    tools: Sequence[ToolSpec] = ()
    max_tokens: int | None = None
    """None: the model's maximum output (from the catalogue)."""
    effort: Effort | None = None
    """The reasoning effort asked for; None: the model's default."""
    spec: ModelSpec | None = None
    """The model's catalogue entry (its limits and request rules), as the caller resolved it
    (with the config's `[models]`); None: the client looks its model up itself."""
    idle_timeout_s: float | None = None
    """Give up on the attempt when the server sends nothing for this long (None: never)."""
    server_compaction: ServerCompaction | None = None
    """The API's own compaction (Anthropic, models that support it); None: agentcli's."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelResponse:
    """One complete assistant response (the stream reached `message_stop`)."""

    message: Message
    stop_reason: str
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    request_id: str | None = None
    usage_known: bool = True
    """False when the server reported no usage: `usage` is zeros, and the cost is unknown."""


class ModelClient(Protocol):
    """Calls a model once. Streams deltas to `on_event`; returns only complete responses.

    Raises `RetryableModelError` for failures worth repeating (rate limits, overload, a broken
    stream) and `ModelError` for failures that end the task.
    """

    @property
    def model(self) -> str: ...

    async def complete(self, request: ModelRequest, on_event: EventSink) -> ModelResponse: ...

    async def aclose(self) -> None:
        """Close the client's connections (the session is done with it)."""
        ...
