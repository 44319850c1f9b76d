"""The task's todo list: what `todo_write` last saved, as typed records, and the board that holds
it for a session.

A leaf (it imports nothing of agentcli): the tool (`agentcli.tools.todo_write`), the
conversation (which journals nothing of its own for it: the list is the input of the latest
successful `todo_write` call, which the journal keeps with its task), the context's pinned
items (the list is re-sent after a compaction) and the front ends (the REPL's checklist,
`run`'s progress line, stream-json's `todo_updated`, the result's `todos`) all read these.

The shape is Claude Code's `TodoWrite` input, exactly: `{"content", "status", "activeForm"}`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

TODO_TOOL = "todo_write"
"""The tool's name (model-facing API: keep it stable)."""


class TodoStatus(enum.StrEnum):
    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"


_MARKS = {TodoStatus.PENDING: "☐", TodoStatus.IN_PROGRESS: "▶", TodoStatus.COMPLETED: "☒"}


@dataclass(frozen=True, slots=True)
class TodoItem:
    """One step of the plan."""

    content: str
    """What to do, in the imperative ("Run the tests")."""
    status: TodoStatus
    active_form: str
    """The same in the present continuous ("Running the tests"), shown while it is done."""

    def to_json(self) -> dict[str, str]:
        return {
            "content": self.content,
            "status": self.status.value,
            "activeForm": self.active_form,
        }

    @classmethod
    def from_json(cls, raw: Any) -> TodoItem | None:
        """The item `raw` (a `todo_write` entry) holds, or None when it is not one."""
        if not isinstance(raw, Mapping):
            return None
        content, status, active = raw.get("content"), raw.get("status"), raw.get("activeForm")
        if not isinstance(content, str) or not isinstance(active, str):
            return None
        if status not in tuple(TodoStatus):
            return None
        return cls(content=content, status=TodoStatus(status), active_form=active)

    def line(self) -> str:
        """`☐ Run the tests` (pending), `▶ Running the tests` (in progress), `☒ …` (done)."""
        shown = self.active_form if self.status is TodoStatus.IN_PROGRESS else self.content
        return f"{_MARKS[self.status]} {shown}"


TodoList = tuple[TodoItem, ...]


def todos_from_json(raw: Any) -> TodoList | None:
    """The list a `todo_write` input (`{"todos": [...]}`) holds, or None when it is not one."""
    entries = raw.get("todos") if isinstance(raw, Mapping) else None
    if not isinstance(entries, list):
        return None
    items = [TodoItem.from_json(entry) for entry in entries]
    if any(item is None for item in items):
        return None
    return tuple(item for item in items if item is not None)


def list_problem(items: Sequence[TodoItem]) -> str | None:
    """What makes `items` not a valid list (beyond each item's own shape), or None."""
    doing = [i + 1 for i, item in enumerate(items) if item.status is TodoStatus.IN_PROGRESS]
    if len(doing) > 1:
        where = ", ".join(str(n) for n in doing)
        return (
            f"{len(doing)} items are in_progress (items {where}); at most one may be: mark the "
            "others pending or completed"
        )
    return None


def checklist(items: Sequence[TodoItem]) -> str:
    """The list as lines, one per item (empty for an empty list)."""
    return "\n".join(item.line() for item in items)


def progress(items: Sequence[TodoItem]) -> str:
    """`2/5 done · now: Running the tests`."""
    done = sum(1 for item in items if item.status is TodoStatus.COMPLETED)
    now = next((i.active_form for i in items if i.status is TodoStatus.IN_PROGRESS), None)
    return f"{done}/{len(items)} done" + (f" · now: {now}" if now else "")


TodoListener = Callable[[TodoList], None]


class TodoBoard:
    """The session's current todo list. `todo_write` replaces it whole; each change is told to
    the listener (the conversation turns it into a `todo_updated` event)."""

    def __init__(self, items: Sequence[TodoItem] = ()) -> None:
        self._items: TodoList = tuple(items)
        self._listener: TodoListener | None = None

    @property
    def items(self) -> TodoList:
        return self._items

    def listen(self, listener: TodoListener | None) -> None:
        self._listener = listener

    def replace(self, items: Sequence[TodoItem]) -> None:
        """Save `items` as the list (the caller checked it: `list_problem`)."""
        self._items = tuple(items)
        if self._listener is not None:
            self._listener(self._items)

    def to_json(self) -> list[dict[str, str]]:
        return [item.to_json() for item in self._items]
