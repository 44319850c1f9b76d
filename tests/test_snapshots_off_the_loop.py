"""Every artifact version a task takes (at its start, at its end, and the one the convergence
guard asks for after a failed call) is taken by the conversation in a worker thread: while git
or hashing runs, the event loop keeps serving everything else."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from agentcli.conversation import ConversationManager
from agentcli.permissions import NonInteractivePrompter, PermissionMode
from agentcli.permissions.basic import ModePolicy
from agentcli.snapshots import Snapshot
from agentcli.store import MemoryJournal
from agentcli.testing import ScriptedModel, respond, text, tool_use
from agentcli.tools.base import ToolContext
from agentcli.tools.read_file import ReadFile

# A read of a file that does not exist fails: the convergence guard then asks for the version.
FAILING_CALL = tool_use("read_file", {"path": "missing.txt"})


def manager(workspace: Path) -> ConversationManager:
    return ConversationManager(
        model=ScriptedModel([respond(FAILING_CALL), respond(text("done"))]),
        tools=[ReadFile()],
        tool_context=ToolContext(workspace=workspace, data_dir=workspace.parent / "data"),
        policy=ModePolicy(mode=PermissionMode.YOLO),
        prompter=NonInteractivePrompter(),
        journal=MemoryJournal(),
        system="test",
        events=lambda _event: None,
    )


async def test_every_snapshot_of_a_task_is_taken_off_the_event_loop(workspace: Path) -> None:
    conversation = manager(workspace)
    threads: list[int] = []

    def snapshot_now() -> Snapshot:
        threads.append(threading.get_ident())
        return Snapshot(version="files:same")

    conversation.snapshot_now = snapshot_now
    result = await conversation.run_task("read it")
    assert [c["status"] for c in result.tool_calls] == ["failed"]
    assert len(threads) == 3  # start, the guard's after the failed call, end
    assert threading.get_ident() not in threads


async def test_the_loop_serves_others_while_the_guards_snapshot_blocks(workspace: Path) -> None:
    conversation = manager(workspace)
    calls = 0
    guards_snapshot = threading.Event()
    release = threading.Event()
    released: list[bool] = []

    def snapshot_now() -> Snapshot:
        nonlocal calls
        calls += 1
        if calls == 2:  # the guard's: the start snapshot is always taken first
            guards_snapshot.set()
            # Only a coroutine on the event loop lets it go: were this running on the loop,
            # nothing could, and after the time-out it would say so instead of hanging.
            released.append(release.wait(timeout=30))
        return Snapshot(version="files:same")

    conversation.snapshot_now = snapshot_now
    task = asyncio.create_task(conversation.run_task("read it"))
    assert await asyncio.to_thread(guards_snapshot.wait, 30)
    assert not task.done()  # the task waits for the guard's snapshot...
    release.set()  # ...and this coroutine runs on the loop meanwhile
    result = await task
    assert released == [True]
    assert calls == 3 and result.changed_files == []
