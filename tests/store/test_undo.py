"""Undo: per-task checkpoints restore what a task changed, through its tools or through shell,
in a git repository and outside one, never touching the user's index, HEAD, branches or
unrelated work, and refusing when a file was changed after the task ended."""

from __future__ import annotations

import io
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentcli import checkpoints
from agentcli.errors import SessionBusyError, UndoError, UsageError
from agentcli.owngit.repo import private_dir_for
from agentcli.permissions import PermissionMode
from agentcli.session import records
from agentcli.session.opening import find_resumed, open_session
from agentcli.store.db import connect
from agentcli.store.lock import SessionLock
from agentcli.testing import ScriptedModel, respond, text, tool_use
from agentcli.tools.read_file import ReadFile
from agentcli.tools.shell import Shell
from agentcli.tools.write_file import WriteFile
from agentcli.ui.sessions import undo_command

SHELL_CHANGES = "echo v2 > edit.txt && rm gone.txt && mkdir -p sub && echo deep > sub/d.txt"


def git(workspace: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=workspace,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def seed(workspace: Path) -> None:
    (workspace / "keep.txt").write_text("keep\n")
    (workspace / "edit.txt").write_text("v1\n")
    (workspace / "gone.txt").write_text("bye\n")
    (workspace / "tool.txt").write_text("before\n")


def git_state(workspace: Path) -> dict[str, str]:
    return {
        "head": git(workspace, "rev-parse", "HEAD"),
        "branches": git(workspace, "branch", "--list", "-v"),
        "index": git(workspace, "ls-files", "--stage"),
        "staged": git(workspace, "diff", "--cached"),
    }


async def run_task(manager_factory: Any, workspace: Path, *calls: dict[str, Any]) -> str:
    session = open_session(None, workspace=workspace, model="scripted")
    model = ScriptedModel([*(respond(call) for call in calls), respond(text("done"))])
    manager = manager_factory(
        model,
        workspace,
        session.journal,
        tools=[ReadFile(), WriteFile(), Shell()],
        mode=PermissionMode.YOLO,
        checkpoints=session.checkpoints,
    )
    result = await manager.run_task("change things")
    assert all(c["status"] == "succeeded" for c in result.tool_calls), result.tool_calls
    session.release()  # the process that ran the task exits
    return result.task_id


def undo(workspace: Path, task: str | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = undo_command(workspace, task, out, err)
    return code, out.getvalue(), err.getvalue()


TASK_CALLS = (
    tool_use("read_file", {"path": "tool.txt"}),
    tool_use("write_file", {"path": "tool.txt", "content": "after\n"}),
    tool_use("write_file", {"path": "new.txt", "content": "created\n"}),
    tool_use("shell", {"command": SHELL_CHANGES}),
)


def assert_task_applied(workspace: Path) -> None:
    assert (workspace / "edit.txt").read_text() == "v2\n"
    assert not (workspace / "gone.txt").exists()
    assert (workspace / "sub" / "d.txt").read_text() == "deep\n"
    assert (workspace / "new.txt").read_text() == "created\n"


def assert_restored(workspace: Path) -> None:
    assert (workspace / "edit.txt").read_text() == "v1\n"
    assert (workspace / "gone.txt").read_text() == "bye\n"
    assert (workspace / "tool.txt").read_text() == "before\n"
    assert not (workspace / "new.txt").exists()
    assert not (workspace / "sub").exists()
    assert (workspace / "keep.txt").read_text() == "keep\n"


async def test_undo_in_git_restores_tool_and_shell_changes_only(
    workspace: Path, manager_factory: Any
) -> None:
    seed(workspace)
    (workspace / "unrelated.txt").write_text("committed\n")
    (workspace / "staged.txt").write_text("committed\n")
    git(workspace, "init", "-q", "-b", "main")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "base")
    (workspace / "unrelated.txt").write_text("the user's uncommitted work\n")
    (workspace / "staged.txt").write_text("staged by the user\n")
    git(workspace, "add", "staged.txt")
    before = git_state(workspace)

    task_id = await run_task(manager_factory, workspace, *TASK_CALLS)
    assert_task_applied(workspace)
    assert git_state(workspace) == before  # checkpoints did not touch index, HEAD or branches
    # The checkpoint commits live in agentcli's private git dir, not in the repository.
    assert git(workspace, "for-each-ref", "refs/agentcli") == ""
    private = ["--git-dir", str(private_dir_for(workspace.resolve()))]
    ref = git(workspace, *private, "rev-parse", f"refs/agentcli/checkpoints/{task_id}").strip()
    assert git(workspace, *private, "rev-parse", f"{ref}^").strip()  # end commit, parent = start

    code, out, err = undo(workspace)
    assert (code, err) == (0, "")
    assert f"undid task {task_id}" in out and "removed new.txt" in out
    assert_restored(workspace)
    assert (workspace / "unrelated.txt").read_text() == "the user's uncommitted work\n"
    assert git_state(workspace) == before
    assert undo(workspace)[0] == 1  # nothing left to undo


async def test_undo_outside_git_restores_shell_changes(
    workspace: Path, manager_factory: Any
) -> None:
    seed(workspace)
    await run_task(manager_factory, workspace, *TASK_CALLS)
    assert_task_applied(workspace)
    code, out, err = undo(workspace)
    assert (code, err) == (0, "")
    assert "restored edit.txt" in out and "restored gone.txt" in out
    assert_restored(workspace)


async def test_undo_in_a_directory_git_ignores_restores_the_changes(
    tmp_path: Path, manager_factory: Any
) -> None:
    """A workspace inside a repository that ignores it (a scratch or build directory): git
    trees never see its files, so checkpoints and artifact versions hash the files instead."""
    repo = tmp_path / "repo"
    workspace = repo / "scratch"
    workspace.mkdir(parents=True)
    (repo / ".gitignore").write_text("scratch/\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    seed(workspace)
    await run_task(manager_factory, workspace, *TASK_CALLS)
    assert_task_applied(workspace)
    code, out, err = undo(workspace)
    assert (code, err) == (0, "")
    assert "restored edit.txt" in out and "removed new.txt" in out
    assert_restored(workspace)


@pytest.mark.parametrize("in_git", [True, False])
async def test_undo_refuses_when_a_file_changed_after_the_task(
    workspace: Path, manager_factory: Any, in_git: bool
) -> None:
    seed(workspace)
    if in_git:
        git(workspace, "init", "-q")
    task_id = await run_task(manager_factory, workspace, *TASK_CALLS)
    (workspace / "edit.txt").write_text("the user's later edit\n")
    code, out, err = undo(workspace, task_id)
    assert code == 1 and out == ""
    assert "refusing to undo task" in err and "changed after the task ended" in err
    assert "  edit.txt\n" in err and "new.txt" not in err
    assert (workspace / "new.txt").exists()  # nothing was restored
    assert (workspace / "edit.txt").read_text() == "the user's later edit\n"


async def test_undo_walks_back_task_by_task(workspace: Path, manager_factory: Any) -> None:
    seed(workspace)
    git(workspace, "init", "-q")
    await run_task(manager_factory, workspace, tool_use("shell", {"command": "echo A > a.txt"}))
    await run_task(manager_factory, workspace, tool_use("shell", {"command": "echo B >> a.txt"}))
    assert (workspace / "a.txt").read_text() == "A\nB\n"
    assert undo(workspace)[0] == 0
    assert (workspace / "a.txt").read_text() == "A\n"
    assert undo(workspace)[0] == 0
    assert not (workspace / "a.txt").exists()


async def test_a_large_tree_outside_git_keeps_tool_pre_images_and_names_the_rest(
    workspace: Path, manager_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoints, "MAX_FILES", 2)
    seed(workspace)
    await run_task(
        manager_factory,
        workspace,
        tool_use("read_file", {"path": "tool.txt"}),
        tool_use("write_file", {"path": "tool.txt", "content": "after\n"}),
    )
    assert undo(workspace)[0] == 0
    assert (workspace / "tool.txt").read_text() == "before\n"

    await run_task(manager_factory, workspace, *TASK_CALLS)
    code, _, err = undo(workspace)
    assert code == 1 and "no saved copy of these files" in err
    assert "  edit.txt\n" in err and "  gone.txt\n" in err and "tool.txt" not in err


async def test_an_interrupted_task_can_be_undone_after_its_session_is_recovered(
    workspace: Path,
) -> None:
    seed(workspace)
    session = open_session(None, workspace=workspace, model="m")
    journal = session.journal
    journal.task_started("T-KILLED", "change")
    assert session.checkpoints is not None
    session.checkpoints.before_change("T-KILLED", None)
    (workspace / "edit.txt").write_text("half done\n")
    # ... and the process dies here: the task never ends.
    journal.release()
    code, _, err = undo(workspace)
    assert code == 1 and "has not ended" in err
    resumed = find_resumed(session.session_id, False, workspace)
    open_session(resumed, workspace=workspace, model="m").journal.release()
    assert undo(workspace)[0] == 0
    assert (workspace / "edit.txt").read_text() == "v1\n"
    assert connect().execute("SELECT undone_at FROM checkpoints").fetchone()[0] is not None


async def test_a_failed_checkpoint_does_not_stop_the_task_and_undo_says_why(
    workspace: Path, manager_factory: Any
) -> None:
    seed(workspace)
    git(workspace, "init", "-q")
    refs = private_dir_for(workspace.resolve()) / "refs"  # where agentcli keeps its refs
    refs.mkdir(parents=True)
    (refs / "agentcli").write_text("in the way\n")  # update-ref fails
    task_id = await run_task(
        manager_factory, workspace, tool_use("write_file", {"path": "new.txt", "content": "x\n"})
    )
    assert (workspace / "new.txt").read_text() == "x\n"
    code, _, err = undo(workspace)
    assert code == 1
    assert f"task {task_id} ('change things', session " in err
    assert "cannot be undone: its checkpoint failed" in err
    assert (workspace / "new.txt").exists()


async def test_undo_is_refused_while_another_process_uses_the_session(
    workspace: Path, manager_factory: Any
) -> None:
    """It may be changing those very files: restoring them under it would mix two histories."""
    seed(workspace)
    task_id = await run_task(manager_factory, workspace, *TASK_CALLS)
    (session_id,) = [row[0] for row in connect().execute("SELECT id FROM sessions")]
    changed = (workspace / "tool.txt").read_text()
    with SessionLock.acquire(session_id):  # stands for a live `run --resume` of that session
        with pytest.raises(SessionBusyError, match=f"session {session_id} is in use"):
            undo(workspace)
        with pytest.raises(SessionBusyError):
            undo(workspace, task_id)
        assert (workspace / "tool.txt").read_text() == changed
        # The REPL holding the session itself undoes its own task.
        result = records.undo(workspace, None, own_session=session_id)
        assert result.task_id == task_id
    assert (workspace / "tool.txt").read_text() == "before\n"
    SessionLock.acquire(session_id).release()  # and nothing is left locked


def named(directory: Path, raw: bytes) -> Path:
    """The path of `raw` (a name that need not be UTF-8) in `directory`."""
    return Path(os.fsdecode(os.fsencode(directory) + b"/" + raw))


NOT_UTF8_CALLS = (
    # The model names these files as it is shown them: each byte that is not UTF-8 as `\xNN`.
    tool_use("shell", {"command": "printf new > $'new-\\xfd.txt'; printf x > $'old-\\xfe.txt'"}),
    tool_use("read_file", {"path": "old-\\xfe.txt"}),
    tool_use("write_file", {"path": "old-\\xfe.txt", "content": "by the tool\n"}),
)


@pytest.mark.parametrize("in_git", [True, False], ids=["git", "plain"])
async def test_undo_restores_names_that_are_not_utf8_in_a_workspace_that_is_not_either(
    tmp_path: Path, manager_factory: Any, in_git: bool
) -> None:
    workspace = named(tmp_path, b"ws-\xff")
    workspace.mkdir()
    seed(workspace)
    named(workspace, b"old-\xfe.txt").write_bytes(b"old\n")
    if in_git:
        git(workspace, "init", "-q")
    await run_task(manager_factory, workspace, *NOT_UTF8_CALLS)
    assert named(workspace, b"old-\xfe.txt").read_bytes() == b"by the tool\n"
    assert named(workspace, b"new-\xfd.txt").read_bytes() == b"new"
    code, out, err = undo(workspace)
    assert (code, err) == (0, "")
    assert "restored old-\\udcfe.txt" in out and "removed new-\\udcfd.txt" in out
    assert named(workspace, b"old-\xfe.txt").read_bytes() == b"old\n"
    assert sorted(os.listdir(os.fsencode(workspace))) == sorted(
        [b"edit.txt", b"gone.txt", b"keep.txt", b"old-\xfe.txt", b"tool.txt"]
        + ([b".git"] if in_git else [])
    )


async def test_a_tool_pre_image_of_a_name_that_is_not_utf8_is_kept(
    tmp_path: Path, manager_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoints, "MAX_FILES", 2)  # only tool pre-images are saved
    workspace = named(tmp_path, b"ws-\xff")
    workspace.mkdir()
    seed(workspace)
    named(workspace, b"old-\xfe.txt").write_bytes(b"old\n")
    await run_task(manager_factory, workspace, *NOT_UTF8_CALLS[1:])
    assert undo(workspace)[0] == 0
    assert named(workspace, b"old-\xfe.txt").read_bytes() == b"old\n"


async def test_an_unknown_task_is_a_usage_error_and_a_task_that_changed_nothing_says_so(
    workspace: Path, manager_factory: Any
) -> None:
    seed(workspace)
    git(workspace, "init", "-q")
    with pytest.raises(UsageError, match="no such task: nope"):
        undo(workspace, "nope")
    nothing = await run_task(
        manager_factory, workspace, tool_use("read_file", {"path": "keep.txt"})
    )
    code, _, err = undo(workspace, nothing)
    assert code == 1
    assert f"task {nothing} ('change things', session " in err and "changed no files" in err


async def test_a_refusal_names_the_task_by_its_prompt_and_session(
    workspace: Path, manager_factory: Any
) -> None:
    seed(workspace)
    git(workspace, "init", "-q")
    task = await run_task(
        manager_factory, workspace, tool_use("shell", {"command": "echo A > a.txt"})
    )
    (workspace / "a.txt").write_text("mine\n")  # the user's own change since
    code, _, err = undo(workspace)
    assert code == 1
    session = connect().execute("SELECT session_id FROM tasks WHERE id = ?", (task,)).fetchone()[0]
    assert f"refusing to undo task {task} ('change things', session {session})" in err


async def test_undo_in_a_session_stays_in_that_session(
    workspace: Path, manager_factory: Any
) -> None:
    """The REPL's /undo walks back its own session's tasks; an older session's are not its
    to reach into without naming one."""
    seed(workspace)
    git(workspace, "init", "-q")
    await run_task(manager_factory, workspace, tool_use("shell", {"command": "echo A > a.txt"}))
    mine = open_session(None, workspace=workspace, model="scripted")
    try:
        with pytest.raises(UndoError, match="nothing left to undo in this session"):
            records.undo(workspace, None, own_session=mine.session_id)
    finally:
        mine.release()
    assert (workspace / "a.txt").read_text() == "A\n"  # the other session's change stays
