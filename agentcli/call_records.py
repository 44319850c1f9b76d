"""The record of one tool call: what was proposed, what ran, and how it ended; and what it
expected before it ran (`PreState`, the write-ahead record).

Shared vocabulary at the bottom (it imports only errors and messages): the journal stores these
records and the runtime fills them in, so neither has to import the other's layer for them.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
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


@dataclass(frozen=True, slots=True, kw_only=True)
class FileWrite:
    """A file write as it was planned before it ran: crash recovery compares the file with
    both hashes to tell whether it took effect; the undo checkpoint saves the file first."""

    path: str
    """The file's absolute path."""
    pre_hash: str | None
    """Its content hash before the write (None: it did not exist)."""
    post_hash: str
    """The content hash the write leaves."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PreState:
    """What a call expects before it runs, recorded by the journal before its side effect
    (write-ahead): the most safety-critical record agentcli keeps, read by the write tools,
    recovery, checkpoints and attribution. Stored as JSON with the file write's fields at the
    top (`{"path", "pre_hash", "post_hash"}`, as journals have always kept them) and a tool's
    own data beside them."""

    write: FileWrite | None = None
    """The file write the call makes, if it makes one."""
    data: Mapping[str, Any] = field(default_factory=dict)
    """Whatever else a tool wants on record (a tool of its own, e.g. an order number)."""

    def to_json(self) -> dict[str, Any]:
        written = (
            {}
            if self.write is None
            else {
                "path": self.write.path,
                "pre_hash": self.write.pre_hash,
                "post_hash": self.write.post_hash,
            }
        )
        return {**self.data, **written}

    @classmethod
    def from_json(cls, stored: Mapping[str, Any]) -> PreState:
        """The record as a journal stored it (any agentcli's: the keys never changed). A
        write is recognised only when its fields have their types (a damaged record is data,
        and recovery then treats the call as one it cannot decide)."""
        path, pre, post = stored.get("path"), stored.get("pre_hash"), stored.get("post_hash")
        data = {k: v for k, v in stored.items() if k not in ("path", "pre_hash", "post_hash")}
        if (
            isinstance(path, str)
            and isinstance(post, str)
            and (pre is None or isinstance(pre, str))
        ):
            return cls(write=FileWrite(path=path, pre_hash=pre, post_hash=post), data=data)
        return cls(data=dict(stored))


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
