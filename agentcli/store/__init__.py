"""The Journal seam: durable records of sessions, messages and every tool call's lifecycle.

The runtime calls `call_started` (write-ahead, with the pre-state it expects) *before* a side
effect runs, so a crash never loses the record of what may have happened.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from agentcli.messages import Message
from agentcli.tools.records import ToolCallRecord


class Journal(Protocol):
    def call_proposed(self, record: ToolCallRecord) -> None: ...

    def call_started(self, record: ToolCallRecord, pre_state: dict[str, Any] | None) -> None: ...

    def call_finished(self, record: ToolCallRecord) -> None: ...

    def message_appended(self, message: Message) -> None: ...


@dataclass
class MemoryJournal:
    """A journal that keeps everything in memory (tests, and sessions with no data dir)."""

    events: list[tuple[str, str, str]] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)

    def call_proposed(self, record: ToolCallRecord) -> None:
        self.events.append(("proposed", record.call_id, record.name))

    def call_started(self, record: ToolCallRecord, pre_state: dict[str, Any] | None) -> None:
        self.events.append(("started", record.call_id, record.name))

    def call_finished(self, record: ToolCallRecord) -> None:
        self.events.append((record.status.value, record.call_id, record.name))

    def message_appended(self, message: Message) -> None:
        self.messages.append(message)
