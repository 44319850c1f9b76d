"""agentcli's own git calls run nothing a repository (or the user's git environment) configures:
snapshots, changed_files, a whole task with checkpoints and acceptance checks, and undo (in
process and through the real binary) on a repository whose config names a program for every
key that can run one. The results must still be right."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentcli.owngit import decide, find_repo
from agentcli.snapshots import changed_files, take_snapshot
from agentcli.store.db import connect
from agentcli.tasks import TaskState
from agentcli.testing import tool_use
from tests.owngit.hostile import (
    REAL_GIT,
    Hostile,
    build_hostile,
    git_dir_state,
    plain_git,
    run_one_task,
    undo,
)

TASK_SHELL = "echo shell > made-by-shell.txt && rm gone.txt && echo v2 > edit.txt"


def test_the_fixture_is_armed(tmp_path: Path, markers: Path, bin_dir: Path) -> None:
    """Plain git on the same kind of repository runs the planted programs: what agentcli is
    checked against below is live on this git version."""
    repo = build_hostile(tmp_path / "armed", markers, bin_dir)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e", GIT_COMMITTER_NAME="t")
    env.update(GIT_COMMITTER_EMAIL="t@e")
    for args in (["status"], ["add", "-A"], ["commit", "-qm", "x"], ["diff", "HEAD~1"]):
        subprocess.run([REAL_GIT, *args], cwd=repo, env=env, capture_output=True, check=False)
    fired = {p.name for p in markers.iterdir()}
    assert {"included-fsmonitor", "hookspath-pre-commit", "gpg-program"} <= fired, fired
    assert any(name.endswith("filter-clean") for name in fired), fired


def test_snapshots_and_changed_files_run_nothing_and_match_plain_git(
    hostile: Hostile, tmp_path: Path
) -> None:
    twin = tmp_path / "twin"  # the same files in a harmless repository, for the expected trees
    shutil.copytree(hostile.repo, twin, symlinks=True)
    shutil.rmtree(twin / ".git")
    harmful = ["config", "hooks", "info"]
    shutil.copytree(hostile.repo / ".git", twin / ".git", ignore=lambda *_: harmful)
    plain_git(twin, "init", "-q")
    repo = find_repo(hostile.repo)
    assert repo is not None and repo.work_tree == hostile.repo.resolve()
    before = take_snapshot(hostile.repo, repo)
    assert before.version == f"git:{expected_tree(twin)}"
    for root in (hostile.repo, twin):
        (root / "edit.txt").write_text("changed\n")
        (root / "new file ü.txt").write_text("new\n")
        (root / "more.log").write_text("ignored\n")
    after = take_snapshot(hostile.repo, repo)
    assert after.version == f"git:{expected_tree(twin)}"
    assert changed_files(before, after, hostile.repo) == ["edit.txt", "new file ü.txt"]
    assert changed_files(before, after, hostile.repo / "sub") == [
        "../edit.txt",
        "../new file ü.txt",
    ]
    assert hostile.fired() == []


def expected_tree(root: Path) -> str:
    index = root.parent / "twin-index"
    shutil.copy2(root / ".git" / "index", index)
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    for name in [k for k in env if k.startswith("GIT_") and k != "GIT_INDEX_FILE"]:
        del env[name]
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null")
    run = {"cwd": root, "env": env, "capture_output": True, "text": True, "check": True}
    subprocess.run([REAL_GIT, "-c", "core.attributesFile=/dev/null", "add", "-A"], **run)  # type: ignore[call-overload]
    tree = subprocess.run([REAL_GIT, "write-tree"], **run).stdout.strip()  # type: ignore[call-overload]
    index.unlink()
    return str(tree)


TASK_CALLS = [
    tool_use("read_file", {"path": "tracked.txt"}),
    tool_use("write_file", {"path": "tracked.txt", "content": "tracked v2\n"}),
    tool_use("write_file", {"path": "new.txt", "content": "created\n"}),
    tool_use("shell", {"command": TASK_SHELL}),
]


def assert_task_applied(repo: Path) -> None:
    assert (repo / "tracked.txt").read_text() == "tracked v2\n"
    assert (repo / "new.txt").read_text() == "created\n"
    assert (repo / "made-by-shell.txt").read_text() == "shell\n"
    assert (repo / "edit.txt").read_text() == "v2\n"
    assert not (repo / "gone.txt").exists()


def assert_restored(repo: Path) -> None:
    assert (repo / "tracked.txt").read_text() == "tracked v1\n"
    assert (repo / "edit.txt").read_text() == "v1\n"
    assert (repo / "gone.txt").read_text() == "bye\n"
    assert not (repo / "new.txt").exists()
    assert not (repo / "made-by-shell.txt").exists()
    assert (repo / "untracked.txt").read_text() == "not added\n"


async def test_a_task_with_checkpoints_checks_and_undo_runs_nothing(hostile: Hostile) -> None:
    repo = hostile.repo
    git_before = git_dir_state(repo / ".git")
    result = await run_one_task(repo, TASK_CALLS, accept=["test -f new.txt"])
    assert result.state is TaskState.SUCCEEDED, result.error
    assert result.artifact_version is not None and result.artifact_version.startswith("git:")
    assert result.acceptance[0].artifact_version == result.artifact_version
    expected = ["edit.txt", "gone.txt", "made-by-shell.txt", "new.txt", "tracked.txt"]
    assert result.changed_files == expected
    assert_task_applied(repo)
    kind, end_ref = connect().execute("SELECT kind, end_ref FROM checkpoints").fetchone()
    assert kind == "git" and end_ref
    assert hostile.fired() == []
    # A later change to a file the task changed: undo refuses and touches nothing.
    (repo / "edit.txt").write_text("the user's later edit\n")
    code, out, err = undo(repo)
    assert code == 1 and "refusing to undo" in err and "  edit.txt\n" in err
    assert (repo / "new.txt").exists()
    (repo / "edit.txt").write_text("v2\n")
    code, out, err = undo(repo)
    assert (code, err) == (0, "")
    assert "removed new.txt" in out and "restored tracked.txt" in out
    assert_restored(repo)
    # The repository itself is as it was: index, HEAD, refs, config, objects, byte for byte.
    assert git_dir_state(repo / ".git") == git_before
    assert hostile.fired() == []


async def test_undo_through_the_real_binary_runs_nothing(hostile: Hostile) -> None:
    repo = hostile.repo
    await run_one_task(repo, TASK_CALLS, accept=[])
    assert_task_applied(repo)
    done = subprocess.run(
        [sys.executable, "-m", "agentcli", "undo"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "removed new.txt" in done.stdout
    assert_restored(repo)
    assert hostile.fired() == []


def test_a_git_on_path_inside_the_work_tree_is_not_run(
    hostile: Hostile, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model can write files in the work tree; a `bin/git` there, on PATH (as an activated
    project virtualenv puts itself), is not agentcli's git."""
    planted = hostile.repo / ".venv" / "bin"
    planted.mkdir(parents=True)
    fake = planted / "git"
    fake.write_text(f"#!/bin/sh\ntouch '{hostile.markers / 'planted-git'}'\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{planted}{os.pathsep}.{os.pathsep}{os.environ['PATH']}")
    git = decide(hostile.repo)
    assert git.repo is not None and not Path(git.repo.git).is_relative_to(hostile.repo)
    assert take_snapshot(hostile.repo, git.repo).version.startswith("git:")
    assert hostile.fired() == []
