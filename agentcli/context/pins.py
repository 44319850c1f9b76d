"""What a compaction never summarizes away: the pin sources, and the standard items.

A pin source is a function that returns the items it wants re-sent after the summary, as they
are at the moment of the compaction. The conversation registers the standard ones (the current
task's prompt, the acceptance criteria, the latest failing check's output, the todo list); any
other part of agentcli adds its own through the session (`LiveSession.add_pins`; invoked skills,
for one, with their own size limits). Instruction files (AGENTS.md / CLAUDE.md) are not items:
they are part of the system prompt, which a compaction re-reads from disk and never summarizes.

An item is sent as it is, up to `MAX_ITEM_CHARS` (its start and end kept, with a line saying
what was cut and that the journal keeps it whole): a task piped from a large file must not
make every request after a compaction as large as the conversation it replaced.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agentcli.compaction_record import PinnedItem
from agentcli.todo import TodoItem
from agentcli.truncation import keep_ends

PinSource = Callable[[], Sequence[PinnedItem]]
"""Returns the items to re-send verbatim after a compaction's summary, as they are now."""

MAX_ITEM_CHARS = 20_000


class Pins:
    """The pin sources of one conversation, in the order their items are sent."""

    def __init__(self, sources: Sequence[PinSource] = ()) -> None:
        self._sources: list[PinSource] = list(sources)

    def add(self, source: PinSource) -> None:
        self._sources.append(source)

    def collect(self) -> tuple[PinnedItem, ...]:
        """Every source's items now, each capped at `MAX_ITEM_CHARS`."""
        return tuple(capped(item) for source in self._sources for item in source())


def capped(item: PinnedItem, limit: int = MAX_ITEM_CHARS) -> PinnedItem:
    """`item`, with its text cut to `limit` characters (start and end kept) if longer."""
    ends = keep_ends(item.text, limit * 3 // 4, limit // 4)
    if ends is None:
        return item
    text = (
        f"{ends.head}\n[... {ends.omitted:,} characters cut here; the session's journal keeps "
        f"them ...]\n{ends.tail}"
    )
    return PinnedItem(kind=item.kind, title=item.title, text=text)


def task_item(prompt: str | None, *, running: bool) -> list[PinnedItem]:
    if not prompt:
        return []
    title = "The current task, as the user gave it" if running else "The latest task"
    return [PinnedItem(kind="task", title=title, text=prompt)]


def acceptance_item(commands: Sequence[str]) -> list[PinnedItem]:
    if not commands:
        return []
    return [
        PinnedItem(
            kind="acceptance",
            title="The acceptance checks agentcli runs when you finish (the task succeeds only "
            "if they pass)",
            text="\n".join(f"$ {command}" for command in commands),
        )
    ]


def failing_check_item(feedback: str | None) -> list[PinnedItem]:
    if not feedback:
        return []
    return [
        PinnedItem(kind="failing_check", title="The latest failing acceptance check", text=feedback)
    ]


def todo_item(items: Sequence[TodoItem]) -> list[PinnedItem]:
    if not items:
        return []
    lines = [f"{n}. [{item.status.value}] {item.content}" for n, item in enumerate(items, 1)]
    return [
        PinnedItem(
            kind="todo", title="Your todo list, as todo_write last saved it", text="\n".join(lines)
        )
    ]
