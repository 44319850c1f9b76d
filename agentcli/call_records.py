"""The record of one tool call: what was proposed, what ran, and how it ended.

Shared vocabulary at the bottom (it imports only errors and messages): the journal stores these
records and the runtime fills them in, so neither has to import the other's layer for them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from agentcli.errors import ToolErrorKind
from agentcli.messages import ToolResultBlock


class CallStatus(enum.StrEnum):
    PROPOSED = "proposed"
    STARTED = "started"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    DENIED = "denied"
    NOT_EXECUTED = "not_executed"
    OUTCOME_UNKNOWN = "outcome_unknown"


@dataclass(slots=True, kw_only=True)
class ToolCallRecord:
    call_id: str
    name: str
    input: dict[str, Any]
    risk: str = ""
    status: CallStatus = CallStatus.PROPOSED
    result_text: str = ""
    error_kind: ToolErrorKind | None = None
    source: dict[str, Any] = field(default_factory=dict)
    started_at: float | None = None
    duration_s: float = 0.0
    replayed: bool = False
    result_is_error: bool = False
    """The call ran, but its result reports a failure (e.g. a command exited non-zero)."""

    @property
    def is_error(self) -> bool:
        return self.status is not CallStatus.SUCCEEDED or self.result_is_error

    def to_result_block(self) -> ToolResultBlock:
        return ToolResultBlock(
            tool_use_id=self.call_id,
            content=self.result_text or "(no output)",
            is_error=self.is_error,
        )

    def summary(self) -> dict[str, Any]:
        """The entry of this call in the JSON result's `tool_calls`."""
        return {
            "id": self.call_id,
            "name": self.name,
            "input": self.input,
            "status": self.status.value,
            "is_error": self.is_error,
        }
