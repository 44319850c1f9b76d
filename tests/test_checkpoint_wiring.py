"""Undo checkpoints are taken by the conversation, in worker threads, before a task's first
change starts and when it ends; the journal only records."""

from __future__ import annotations

import threading
from pathlib import Path

from agentcli.call_records import PreState, ToolCallRecord
from agentcli.conversation import ConversationManager
from agentcli.permissions import NonInteractivePrompter, PermissionMode
from agentcli.permissions.basic import ModePolicy
from agentcli.store import MemoryJournal
from agentcli.store.sqlite import SqliteJournal
from agentcli.tasks import TaskResult
from agentcli.testing import ScriptedModel, respond, text, tool_use
from agentcli.tools.base import ToolContext
from agentcli.tools.read_file import ReadFile
from agentcli.tools.shell import Shell
from agentcli.tools.write_file import WriteFile


class Recorder(MemoryJournal):
    """A journal that notes, in one timeline with the checkpoints, what it records."""

    def __init__(self, timeline: list[tuple[str, ...]]) -> None:
        super().__init__()
        self.timeline = timeline

    def call_started(self, record: ToolCallRecord, pre_state: PreState | None) -> None:
        self.timeline.append(("journal: started", record.call_id))
        super().call_started(record, pre_state)

    def task_finished(self, result: TaskResult) -> None:
        self.timeline.append(("journal: task finished",))
        super().task_finished(result)


class Checkpoints:
    def __init__(self, timeline: list[tuple[str, ...]]) -> None:
        self.timeline = timeline
        self.threads: set[int] = set()

    def before_change(self, task_id: str, pre_state: PreState | None) -> None:
        self.threads.add(threading.get_ident())
        self.timeline.append(
            (
                "checkpoint: before change",
                str(pre_state.write.path if pre_state and pre_state.write else None),
            )
        )

    def task_ended(self, task_id: str, end_tree: str | None = None) -> None:
        self.threads.add(threading.get_ident())
        self.timeline.append(("checkpoint: task ended",))

    def record_paths(self, task_id: str, paths: set[str] | None, *, settled: bool) -> None:
        self.threads.add(threading.get_ident())
        self.timeline.append(("checkpoint: paths", *sorted(paths or ()), str(settled)))


async def test_checkpoints_run_in_threads_before_each_change_and_at_the_end(
    workspace: Path,
) -> None:
    (workspace / "a.txt").write_text("a\n")
    timeline: list[tuple[str, ...]] = []
    checkpoints = Checkpoints(timeline)
    model = ScriptedModel(
        [
            respond(tool_use("read_file", {"path": "a.txt"}, id="r1")),
            respond(tool_use("write_file", {"path": "b.txt", "content": "b\n"}, id="w1")),
            respond(tool_use("shell", {"command": "true"}, id="s1")),
            respond(text("done")),
        ]
    )
    manager = ConversationManager(
        model=model,
        tools=[ReadFile(), WriteFile(), Shell()],
        tool_context=ToolContext(workspace=workspace, data_dir=workspace.parent / "data"),
        policy=ModePolicy(mode=PermissionMode.YOLO),
        prompter=NonInteractivePrompter(),
        journal=Recorder(timeline),
        system="test",
        events=lambda _event: None,
        checkpoints=checkpoints,
    )
    result = await manager.run_task("change things")
    assert [c["status"] for c in result.tool_calls] == ["succeeded"] * 3
    written = str(workspace / "b.txt")
    assert timeline == [
        ("journal: started", "r1"),  # a read changes nothing: no checkpoint
        ("checkpoint: before change", written),
        ("checkpoint: paths", "b.txt", "True"),  # a write names its path before it runs
        ("journal: started", "w1"),
        ("checkpoint: before change", "None"),
        ("checkpoint: paths", "False"),  # a command's paths are known only after it ran
        ("journal: started", "s1"),
        ("checkpoint: paths", "True"),  # `true` changed nothing
        ("checkpoint: task ended",),
        ("journal: task finished",),
    ]
    assert threading.get_ident() not in checkpoints.threads  # never on the event loop


def test_the_journal_only_records(workspace: Path) -> None:
    journal = SqliteJournal.create("S-RECORDS", workspace=workspace, model="m")
    assert not hasattr(journal, "checkpoints")
    journal.task_started("T1", "p")
    record = ToolCallRecord(call_id="c1", name="write_file", input={}, risk="write")
    journal.call_proposed(record)
    journal.call_started(record, PreState(data={"path": str(workspace / "x")}))
    rows = journal.conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]
    assert rows == 0
