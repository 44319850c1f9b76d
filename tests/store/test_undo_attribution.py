"""Two sessions in one workspace at once (issue 15): a task's `changed_files` and its undo are
what the task's own calls changed — writes, edits and commands — never what another session did
while it ran; and undo refuses, naming the file and the session, where another session changed a
file of the task after it ended. In a git repository and outside one."""

from __future__ import annotations

import io
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from agentcli.model import ModelRequest, ModelResponse
from agentcli.permissions import PermissionMode
from agentcli.session.opening import find_resumed, open_session
from agentcli.tasks import TaskResult
from agentcli.testing import FunctionModel, ScriptedModel, respond, text, tool_use
from agentcli.tools.edit_file import EditFile
from agentcli.tools.read_file import ReadFile
from agentcli.tools.shell import Shell
from agentcli.tools.write_file import WriteFile
from agentcli.ui.sessions import undo_command

TOOLS = (ReadFile, WriteFile, EditFile, Shell)


@pytest.fixture(params=["git", "files"])
def shared(request: pytest.FixtureRequest, workspace: Path) -> Path:
    (workspace / "a.txt").write_text("a1\n")
    (workspace / "b.txt").write_text("b1\n")
    (workspace / "keep.txt").write_text("keep\n")
    if request.param == "git":
        subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    return workspace


async def run_session(manager_factory: Any, workspace: Path, model: Any) -> tuple[TaskResult, str]:
    """One task in a session of its own; its result and the session's id."""
    session = open_session(None, workspace=workspace, model="scripted")
    manager = manager_factory(
        model,
        workspace,
        session.journal,
        tools=[tool() for tool in TOOLS],
        mode=PermissionMode.YOLO,
        checkpoints=session.checkpoints,
    )
    try:
        result = await manager.run_task("change things")
    finally:
        session.release()
    assert all(c["status"] == "succeeded" for c in result.tool_calls), result.tool_calls
    return result, session.session_id


def pausing(
    calls: list[dict[str, Any]], pause_before: int, meanwhile: Callable[[], Awaitable[Any]]
) -> FunctionModel:
    """A model making `calls` in turn, then ending; before answering with call number
    `pause_before` it waits for `meanwhile` (the other session's whole task) to finish."""
    steps = [*(respond(call) for call in calls), respond(text("done"))]

    async def answer(request: ModelRequest) -> ModelResponse:
        turn = sum(1 for m in request.messages if m.role == "assistant")
        if turn == pause_before:
            await meanwhile()
        return steps[turn]

    return FunctionModel(answer)


def undo(workspace: Path, task: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = undo_command(workspace, task, out, err)
    return code, out.getvalue(), err.getvalue()


A_CALLS = [
    tool_use("read_file", {"path": "a.txt"}),
    tool_use("edit_file", {"path": "a.txt", "old_string": "a1", "new_string": "a2"}),
    tool_use("shell", {"command": "echo made > by_a.txt && rm keep.txt"}),
]
B_CALLS = (
    tool_use("write_file", {"path": "from_b.txt", "content": "b's new file\n"}),
    tool_use("shell", {"command": "echo b2 > b.txt"}),
)


async def test_another_sessions_changes_during_a_task_are_not_the_tasks(
    shared: Path, manager_factory: Any
) -> None:
    async def session_b() -> None:
        await run_session(
            manager_factory, shared, ScriptedModel([*map(respond, B_CALLS), respond(text("ok"))])
        )

    # B's whole task runs between A's edit and A's command.
    a_model = pausing(A_CALLS, pause_before=2, meanwhile=session_b)
    result, _ = await run_session(manager_factory, shared, a_model)
    assert result.changed_files == ["a.txt", "by_a.txt", "keep.txt"]

    code, out, err = undo(shared, result.task_id)
    assert (code, err) == (0, "")
    assert (shared / "a.txt").read_text() == "a1\n"  # A's edit undone
    assert not (shared / "by_a.txt").exists()  # A's command undone
    assert (shared / "keep.txt").read_text() == "keep\n"
    assert (shared / "from_b.txt").read_text() == "b's new file\n"  # B's file stays
    assert (shared / "b.txt").read_text() == "b2\n"  # B's edit stays
    assert "from_b" not in out and "b.txt" not in out.replace("by_a.txt", "")


async def test_a_change_after_the_tasks_last_command_is_not_the_tasks(
    shared: Path, manager_factory: Any
) -> None:
    """B changes a file after A's command ran, before A ends: the end state has it, A does not."""

    async def session_b() -> None:
        await run_session(
            manager_factory,
            shared,
            ScriptedModel(
                [respond(tool_use("shell", {"command": "echo b2 > b.txt"})), respond(text("ok"))]
            ),
        )

    calls = [tool_use("shell", {"command": "echo made > by_a.txt"})]
    result, _ = await run_session(manager_factory, shared, pausing(calls, 1, session_b))
    assert result.changed_files == ["by_a.txt"]
    assert undo(shared, result.task_id)[0] == 0
    assert not (shared / "by_a.txt").exists()
    assert (shared / "b.txt").read_text() == "b2\n"


async def test_undo_refuses_naming_the_session_that_changed_the_tasks_file_later(
    shared: Path, manager_factory: Any
) -> None:
    first, _ = await run_session(manager_factory, shared, pausing(A_CALLS, -1, _nothing))
    later, b_session = await run_session(
        manager_factory,
        shared,
        ScriptedModel(
            [
                respond(tool_use("shell", {"command": "echo b-was-here >> a.txt"})),
                respond(text("ok")),
            ]
        ),
    )
    code, out, err = undo(shared, first.task_id)
    assert code == 1 and out == ""
    assert "refusing to undo task" in err
    assert f"  a.txt (changed by session {b_session}, task {later.task_id})\n" in err
    assert "by_a.txt" not in err  # only the file changed since is named
    assert (shared / "a.txt").read_text() == "a2\nb-was-here\n"  # nothing was restored
    assert (shared / "by_a.txt").exists()


async def _nothing() -> None:
    return None


async def test_a_command_cut_short_by_a_crash_leaves_the_task_judged_by_start_and_end(
    shared: Path,
) -> None:
    """The process dies while a command runs: which paths the command changed was never
    recorded, so undo falls back to everything that differs between the task's start and end
    rather than miss the command's changes."""
    session = open_session(None, workspace=shared, model="m")
    session.journal.task_started("T-KILLED", "change")
    assert session.checkpoints is not None
    session.checkpoints.before_change("T-KILLED", {"path": str(shared / "a.txt")})
    session.checkpoints.record_paths("T-KILLED", {"a.txt"}, settled=True)
    (shared / "a.txt").write_text("a2\n")
    session.checkpoints.before_change("T-KILLED", None)
    session.checkpoints.record_paths("T-KILLED", set(), settled=False)
    (shared / "b.txt").write_text("half done\n")  # ... and the process dies here.
    session.journal.release()
    resumed = find_resumed(session.session_id, False, shared)
    open_session(resumed, workspace=shared, model="m").journal.release()
    code, _, err = undo(shared, "T-KILLED")
    assert (code, err) == (0, "")
    assert (shared / "a.txt").read_text() == "a1\n"
    assert (shared / "b.txt").read_text() == "b1\n"
