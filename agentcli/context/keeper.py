"""The long-session side of one conversation: its compactor, what a compaction pins (the
standard items and any other part's), the todo list, and what `/context` shows.

The conversation (`agentcli.conversation`) holds one `ContextKeeper` and tells it when a task
starts and ends and when checks fail; the keeper keeps what the pinned items are made of.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentcli.catalogue import Catalogue
from agentcli.compaction_record import CompactionRecord, PinnedItem, Trigger
from agentcli.context.compaction import (
    CompactionObserver,
    CompactionOutcome,
    CompactionSettings,
    Compactor,
    Turn,
)
from agentcli.context.pins import (
    Pins,
    PinSource,
    acceptance_item,
    failing_check_item,
    task_item,
    todo_item,
)
from agentcli.context.report import ContextReport, context_report
from agentcli.context.view import ContextView
from agentcli.events import EventSink, Notice, TodoUpdated
from agentcli.messages import Message
from agentcli.model import ModelClient
from agentcli.todo import TodoBoard, TodoItem, TodoList


@dataclass(kw_only=True)
class LongSession:
    """What a conversation is given for long sessions."""

    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    summarizer: ModelClient | None = None
    """Writes compaction summaries (`[context] compact_model`); None: the session's model."""
    reread_system: Callable[[], str] | None = None
    """Builds the system prompt again with the instruction files as they are on disk now (a
    compaction re-reads them); None: the system prompt stays as it is."""
    compacted: CompactionRecord | None = None
    """A resumed session's compaction in force."""
    todos: TodoBoard | None = None
    """The todo list (`todo_write` writes it; a resumed session's is loaded into it); None:
    the board of the `todo_write` among the conversation's tools, if any, else a new one."""


class ContextKeeper:
    """Compaction, pins and the todo list of one conversation."""

    def __init__(
        self,
        given: LongSession,
        *,
        view: ContextView,
        history: Sequence[Message],
        record: Callable[[CompactionRecord], None],
        events: EventSink,
        catalogue: Catalogue,
        acceptance: Callable[[], Sequence[str]],
        tools_board: TodoBoard | None = None,
    ) -> None:
        """`record` journals a compaction; `acceptance` says which checks are set now;
        `tools_board` is the board of the conversation's `todo_write`, if it has one."""
        self.todos = given.todos or tools_board or TodoBoard()
        self.todos.listen(lambda items: events(TodoUpdated(todos=todo_json(items))))
        self._acceptance = acceptance
        self._task: str | None = None
        self._failing: str | None = None
        self._running = False
        self.summarizer = given.summarizer
        self.compactor = Compactor(
            view=view,
            settings=given.compaction,
            pins=Pins([self._standard_pins]),
            record=record,
            events=events,
            catalogue=catalogue,
            summarizer=given.summarizer,
            reread_system=given.reread_system,
        )
        self._events = events
        self._use(history, given.compacted)

    def _use(self, history: Sequence[Message], compacted: CompactionRecord | None) -> None:
        """Send what a recorded compaction says (one that does not fit the history, as only a
        damaged journal could hold, is said and left out: the whole history is sent)."""
        if compacted is None:
            return
        try:
            self.view.compact(history, compacted)
        except ValueError as exc:
            self._events(
                Notice(level="warning", message=f"the recorded compaction is not used: {exc}")
            )

    @property
    def view(self) -> ContextView:
        return self.compactor.view

    def add_pins(self, source: PinSource) -> None:
        self.compactor.pins.add(source)

    def observe(self, observer: CompactionObserver) -> None:
        self.compactor.observe(observer)

    # -- the life of a task ----------------------------------------------------------------
    def task_started(self, task_id: str, prompt: str) -> None:
        self.compactor.begin_task(task_id)
        self._task, self._failing, self._running = prompt, None, True

    def checks_failed(self, feedback: str) -> None:
        """The checks failed and `feedback` went to the model (pinned from now on)."""
        self._failing = feedback

    def task_ended(self) -> tuple[int, list[dict[str, str]]]:
        """How often the task's context was compacted, and the todo list it ends with."""
        self._running = False
        return self.compactor.count, todo_json(self.todos.items)

    def resumed(
        self, history: Sequence[Message], compacted: CompactionRecord | None, todos: TodoList
    ) -> None:
        """Another recorded session goes on: its compaction and todo list."""
        self._task = self._failing = None
        self._use(history, compacted)
        self.todos.replace(todos)

    def _standard_pins(self) -> list[PinnedItem]:
        return [
            *task_item(self._task, running=self._running),
            *acceptance_item(self._acceptance()),
            *failing_check_item(self._failing),
            *todo_item(self.todos.items),
        ]

    # -- on demand ---------------------------------------------------------------------------
    async def compact(
        self,
        history: Sequence[Message],
        turn: Turn,
        *,
        window: int,
        instructions: str | None = None,
    ) -> CompactionOutcome:
        """Compact now (`/compact`), for a model with this context `window`."""
        self.view.model_window = window
        return await self.compactor.compact(
            history, turn, trigger=Trigger.MANUAL, instructions=instructions
        )

    def report(
        self,
        history: Sequence[Message],
        *,
        window: int,
        system: str,
        instruction_files: Sequence[Path],
        tools: Sequence[Any],
    ) -> ContextReport:
        """What the model is sent now, part by part (`/context`)."""
        self.view.model_window = window
        return context_report(
            view=self.view,
            history=history,
            system=system,
            instruction_files=instruction_files,
            tools=tools,
            compactions_this_task=self.compactor.count,
        )


def todo_json(items: Sequence[TodoItem]) -> list[dict[str, str]]:
    return [item.to_json() for item in items]
