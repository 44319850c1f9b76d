"""Cutting text to a budget and saying what was cut: the one implementation of truncation.

Every cut in agentcli is the same operation: keep the start and/or the end of a sequence (text,
bytes or lines) within a budget, and know exactly how much of the middle was dropped, so the
caller can say so. `keep_ends` does the cut; `shorten` and `one_line` are its one-line-label
form (the start and a marker). The statements differ by reader and stay with their callers:
the tool output cap (`tools.output`) names line ranges and the spill file, acceptance feedback
(`acceptance`) counts omitted lines, and the context stub (`context`) names the call it
replaces.

A leaf: it imports nothing of agentcli, so every layer (UI included) may use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

ELLIPSIS = "…"

S = TypeVar("S", str, bytes, list[str])


@dataclass(frozen=True, slots=True)
class Ends(Generic[S]):
    """What `keep_ends` kept of a sequence that did not fit: `head + <omitted> + tail`."""

    head: S
    tail: S
    omitted: int
    """How many items (characters, bytes or lines) between `head` and `tail` were dropped."""


def keep_ends(items: S, head: int, tail: int = 0) -> Ends[S] | None:
    """The first `head` and the last `tail` items of `items`, or None when it fits whole.

    Args:
        items: a str, bytes or list (of lines, say).
        head: how many items to keep from the start (0 or more).
        tail: how many items to keep from the end (0 or more).
    """
    head, tail = max(head, 0), max(tail, 0)
    if len(items) <= head + tail:
        return None
    # items[len(items) - tail :], not items[-tail:]: that is everything when tail is 0.
    return Ends(
        head=items[:head], tail=items[len(items) - tail :], omitted=len(items) - head - tail
    )


def shorten(text: str, limit: int, *, marker: str = ELLIPSIS) -> str:
    """`text` if it has at most `limit` characters, else its start followed by `marker`,
    `limit` characters in all (just the marker when `limit` leaves no room for more)."""
    if len(text) <= limit:
        return text
    return text[: max(limit - len(marker), 0)] + marker


def one_line(text: str, limit: int, *, marker: str = ELLIPSIS) -> str:
    """`text` with every run of whitespace (newlines included) made one space, shortened."""
    return shorten(" ".join(text.split()), limit, marker=marker)
