"""The Journal seam: durable records of sessions, messages, tasks and every tool call's lifecycle.

The runtime calls `call_started` (write-ahead, with the pre-state it expects) *before* a side
effect runs, so a crash never loses the record of what may have happened. The ConversationManager
brackets each user request with `task_started` / `task_finished`. `operations` is the ledger of
business idempotency keys (the runtime's `tools.once` applies them).

`MemoryJournal` keeps everything in memory (tests, embedding); `store.sqlite.SqliteJournal` is
the durable one `agentcli` uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentcli.call_records import PreState, ToolCallRecord
from agentcli.compaction_record import CompactionRecord
from agentcli.hook_seams import HookRun
from agentcli.messages import Message
from agentcli.store.ledger import MemoryLedger, OperationLedger
from agentcli.task_scope import SubagentStart
from agentcli.tasks import CommandOrigin, TaskResult
from agentcli.usage import SessionTotals, Usage


class Journal(Protocol):
    @property
    def operations(self) -> OperationLedger:
        """The idempotency ledger the runtime consults for calls with an operation key."""
        ...

    def call_proposed(self, record: ToolCallRecord) -> None: ...

    def call_started(self, record: ToolCallRecord, pre_state: PreState | None) -> None:
        """Durably record that the call is about to run. Must return only once recorded."""
        ...

    def call_finished(self, record: ToolCallRecord) -> None: ...

    def message_appended(self, message: Message) -> None: ...

    def task_started(
        self,
        task_id: str,
        prompt: str,
        criteria: Sequence[str] = (),
        command: CommandOrigin | None = None,
    ) -> None:
        """A task begins with `prompt` as sent (`command`: the custom command it came from)."""
        ...

    def task_finished(self, result: TaskResult) -> None: ...

    def record_settings(self, **changes: Any) -> None:
        """Record settings of the session (model, mode, ...), merged into what is recorded:
        a resume reads them."""
        ...

    def totals(self) -> SessionTotals:
        """What the session's finished tasks used and cost, as recorded (a resumed session's
        totals are its own, from its first task)."""
        ...

    def hook_ran(self, run: HookRun) -> None:
        """Record one run of one hook (in the task running now, if any)."""
        ...

    def child(self, start: SubagentStart) -> Journal:
        """Record a subagent's child task as started, under its parent task, and return the
        journal of its own history and calls (its `task_finished` records how it ended)."""
        ...

    def compaction_recorded(self, record: CompactionRecord) -> None:
        """Durably record a compaction (all of it or nothing) before the view uses it."""
        ...

    def release(self) -> None:
        """Stop using the session: another process may resume it from now on."""
        ...


@dataclass
class MemoryJournal:
    """A journal that keeps everything in memory (tests, and sessions with no data dir)."""

    events: list[tuple[str, str, str]] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    operations: MemoryLedger = field(default_factory=MemoryLedger)
    settings: dict[str, Any] = field(default_factory=dict)
    hook_runs: list[HookRun] = field(default_factory=list)
    compactions: list[CompactionRecord] = field(default_factory=list)
    children: dict[str, tuple[SubagentStart, MemoryJournal]] = field(default_factory=dict)
    """Each subagent's child task: how it started, and its own journal."""
    released: bool = False

    def call_proposed(self, record: ToolCallRecord) -> None:
        self.events.append(("proposed", record.call_id, record.name))

    def call_started(self, record: ToolCallRecord, pre_state: PreState | None) -> None:
        self.events.append(("started", record.call_id, record.name))

    def call_finished(self, record: ToolCallRecord) -> None:
        self.events.append((record.status.value, record.call_id, record.name))

    def message_appended(self, message: Message) -> None:
        self.messages.append(message)

    def task_started(
        self,
        task_id: str,
        prompt: str,
        criteria: Sequence[str] = (),
        command: CommandOrigin | None = None,
    ) -> None:
        self.tasks[task_id] = {
            "prompt": prompt,
            "criteria": list(criteria),
            "state": "running",
            "command": None if command is None else command.to_json(),
        }

    def task_finished(self, result: TaskResult) -> None:
        task = self.tasks.setdefault(result.task_id, {"prompt": "", "criteria": []})
        task.update(
            state=result.state.value,
            reason=result.reason.value,
            usage=result.usage,
            cost_usd=result.cost_usd,
        )

    def totals(self) -> SessionTotals:
        ended = [task for task in self.tasks.values() if "usage" in task]
        usage = sum((task["usage"] for task in ended), Usage())
        costs = [task["cost_usd"] for task in ended]
        known = all(cost is not None for cost in costs)
        return SessionTotals(tasks=len(ended), usage=usage, cost_usd=sum(costs) if known else None)

    def record_settings(self, **changes: Any) -> None:
        self.settings.update(changes)

    def hook_ran(self, run: HookRun) -> None:
        self.hook_runs.append(run)

    def child(self, start: SubagentStart) -> MemoryJournal:
        journal = MemoryJournal(operations=self.operations)
        journal.task_started(start.task_id, start.prompt)
        self.children[start.task_id] = (start, journal)
        return journal

    def compaction_recorded(self, record: CompactionRecord) -> None:
        self.compactions.append(record)

    def release(self) -> None:
        self.released = True
