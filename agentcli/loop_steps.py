"""What one step of the query loop can end in, and what may watch its tool results: the loop's
small vocabulary, shared with its observers (the convergence guard) without importing the loop."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from agentcli.call_records import ToolCallRecord
from agentcli.terminal_reason import TerminalReason


@dataclass(frozen=True, slots=True)
class Continue:
    pass


@dataclass(frozen=True, slots=True)
class Finished:
    reason: TerminalReason
    error: str | None = None


Step = Continue | Finished


@dataclass(frozen=True, slots=True)
class Nudge:
    """Tell the model something specific alongside the tool results."""

    text: str


@dataclass(frozen=True, slots=True)
class Stop:
    reason: TerminalReason
    message: str


class TurnObserver(Protocol):
    """Watches each batch of tool results (e.g. the convergence guard). Awaited, so that what
    is slow to learn (the artifact version: git, hashing) comes from a worker thread, never from
    work done on the event loop."""

    async def after_tools(self, records: Sequence[ToolCallRecord]) -> Nudge | Stop | None: ...
