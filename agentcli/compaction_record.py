"""What a compaction leaves behind: its typed record and the items it re-sends verbatim.

A leaf below the context view (`agentcli.context`), the journal (`agentcli.store`) and the
session core, which all read it: the view sends `CompactionRecord.message()` in place of the
history before `point`; the journal stores the record (and `sessions show`/`export` mark it);
a resumed session rebuilds the same view from it, so what the model is sent after a resume is
byte for byte what it was sent before.

`PinnedItem` is what is never summarized away: the current task's prompt, the acceptance
criteria, the latest failing check's output, the todo list — and whatever else a part of
agentcli pins (invoked skills, say), through the session's pin sources. Items are taken when
the compaction happens and kept in the record: what changes later is in the turns after the
point, which are sent as they are.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentcli.messages import Message, TextBlock
from agentcli.usage import Usage

SUMMARY_HEADER = (
    "[agentcli compacted the conversation here to save context: the summary below stands for "
    "the earlier messages, which the session's journal keeps in full. The items after it are "
    "re-sent exactly as they were.]"
)


class Trigger(enum.StrEnum):
    """Why a compaction happened."""

    AUTO = "auto"
    """A response reported a context above `[context] auto_compact_at` of the window."""
    MANUAL = "manual"
    """The user asked (`/compact`)."""


@dataclass(frozen=True, slots=True)
class PinnedItem:
    """Something re-sent verbatim after a compaction's summary."""

    kind: str
    """What it is: `task`, `acceptance`, `failing_check`, `todo`, or another part's own
    (`skill`)."""
    title: str
    """One line saying what it is, for the model and for `/context`."""
    text: str

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "title": self.title, "text": self.text}

    @classmethod
    def from_json(cls, raw: Any) -> PinnedItem | None:
        if not isinstance(raw, Mapping):
            return None
        kind, title, text = raw.get("kind"), raw.get("title"), raw.get("text")
        if not (isinstance(kind, str) and isinstance(title, str) and isinstance(text, str)):
            return None
        return cls(kind=kind, title=title, text=text)

    def block_text(self) -> str:
        return f'<pinned kind="{self.kind}" title="{self.title}">\n{self.text}\n</pinned>'


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionRecord:
    """One compaction of what the model is sent: `history[:point]` replaced by `summary`
    followed by the pinned items."""

    id: str
    point: int
    """Index in the session's history of the first message still sent as it is (always an
    assistant message, so no tool call is ever separated from its result)."""
    summary: str
    pinned: tuple[PinnedItem, ...] = ()
    model: str
    """The model that wrote the summary."""
    trigger: Trigger
    tokens_before: int
    """The context the model was sent before (as the last response reported it)."""
    tokens_after: int
    """An estimate of what it is sent right after."""
    usage: Usage = field(default_factory=Usage)
    """The summary request's usage (counted in the task's)."""
    cost_usd: float | None = None
    instructions: str | None = None
    """What the user asked the summary to focus on (`/compact INSTRUCTIONS`)."""
    task_id: str | None = None
    created_at: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """The record as `sessions export` writes it."""
        return {
            "id": self.id,
            "point": self.point,
            "trigger": self.trigger.value,
            "model": self.model,
            "summary": self.summary,
            "pinned": pinned_to_json(self.pinned),
            "instructions": self.instructions,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "usage": self.usage.as_dict(),
            "cost_usd": self.cost_usd,
            "task_id": self.task_id,
            "created_at": self.created_at,
        }

    def message(self) -> Message:
        """The user message sent in place of `history[:point]`."""
        blocks = [TextBlock(text=f"{SUMMARY_HEADER}\n\n<summary>\n{self.summary}\n</summary>")]
        blocks.extend(TextBlock(text=item.block_text()) for item in self.pinned)
        return Message(role="user", content=tuple(blocks))


def pinned_from_json(raw: Any) -> tuple[PinnedItem, ...]:
    items = raw if isinstance(raw, list) else []
    found = (PinnedItem.from_json(item) for item in items)
    return tuple(item for item in found if item is not None)


def pinned_to_json(items: Sequence[PinnedItem]) -> list[dict[str, str]]:
    return [item.to_json() for item in items]
