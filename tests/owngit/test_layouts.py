"""Repository shapes agentcli's own git must handle, each still running nothing the repository
configures: a `.git` planted during a session that began outside git, a linked worktree, a
workspace below the top of a repository, a SHA-256 repository, a split index, checkpoints kept in
the repository by earlier versions of agentcli, and checkpoint objects that the repository's own
`git gc` (or agentcli's tidying) removed."""

from __future__ import annotations

import os
import time
from pathlib import Path

from agentcli.owngit import decide, find_repo
from agentcli.session import records
from agentcli.session.options import SessionOptions
from agentcli.snapshots import changed_files, take_snapshot
from agentcli.store.db import connect
from agentcli.store.sqlite import SqliteJournal
from agentcli.tasks import TaskState
from agentcli.testing import ScriptedModel, respond, text, tool_use
from agentcli.ui.run import open_run_session
from tests.owngit.hostile import Hostile, arm, marker_script, plain_git, run_one_task, undo

CHANGES = [
    tool_use("read_file", {"path": "a.txt"}),
    tool_use("write_file", {"path": "a.txt", "content": "a2\n"}),
    tool_use("shell", {"command": "echo new > n.txt && rm b.txt"}),
]


def committed(path: Path, *init: str) -> Path:
    path.mkdir(parents=True)
    plain_git(path, "init", "-q", "-b", "main", *init)
    (path / "a.txt").write_text("a1\n")
    (path / "b.txt").write_text("b1\n")
    plain_git(path, "add", "-A")
    plain_git(path, "commit", "-q", "-m", "base")
    return path


def assert_undone(workspace: Path) -> None:
    code, out, err = undo(workspace)
    assert (code, err) == (0, ""), out
    assert (workspace / "a.txt").read_text() == "a1\n"
    assert (workspace / "b.txt").read_text() == "b1\n"
    assert not (workspace / "n.txt").exists()


async def test_a_git_dir_planted_during_the_session_changes_nothing(
    tmp_path: Path, markers: Path, bin_dir: Path
) -> None:
    """The session began outside git. The model then writes a valid-looking `.git` (HEAD,
    objects, refs, a config naming fsmonitor, hooks and a filter): the session's snapshots stay
    file-tree hashes, its checkpoints keep file copies, and nothing planted runs, then or in a
    later session that does take the directory for a repository."""
    workspace = tmp_path / "plain"
    workspace.mkdir()
    (workspace / "a.txt").write_text("a1\n")
    hooks = tmp_path / "planted-hooks"
    hooks.mkdir()
    for hook in ("pre-commit", "post-index-change", "reference-transaction", "post-commit"):
        marker_script(hooks, markers, f"planted-{hook}").rename(hooks / hook)
    fsmonitor = marker_script(bin_dir, markers, "planted-fsmonitor")
    clean = marker_script(bin_dir, markers, "planted-clean", "exec cat\n")
    plant = (
        "mkdir -p .git/objects/info .git/refs/heads .git/hooks"
        " && echo 'ref: refs/heads/main' > .git/HEAD"
        f" && printf '[core]\\n\\tfsmonitor = {fsmonitor}\\n\\thooksPath = {hooks}\\n"
        f'[filter "x"]\\n\\tclean = {clean}\\n\\trequired = true\\n\' > .git/config'
        f" && cp {hooks}/* .git/hooks/"
        " && echo '* filter=x' > .gitattributes && echo b > b.txt"
    )
    model = ScriptedModel(
        [
            respond(tool_use("shell", {"command": plant})),
            respond(text("planted")),
            respond(tool_use("write_file", {"path": "c.txt", "content": "c\n"})),
            respond(text("done")),
        ]
    )
    options = SessionOptions(task=None, cwd=workspace, permission_mode="yolo", accept=["true"])
    manager = open_run_session(options, lambda _e: None, model_factory=lambda _name: model)
    first = await manager.run_task("plant")
    assert (workspace / ".git" / "config").is_file()
    assert decide(workspace).repo is not None  # a new decision would now say "git"...
    second = await manager.run_task("more")  # ...but this session keeps its own
    for result in (first, second):
        assert result.state is TaskState.SUCCEEDED, result.error
        assert result.artifact_version is not None
        assert result.artifact_version.startswith("files:")
        assert result.acceptance[0].artifact_version == result.artifact_version
    assert first.changed_files == [".gitattributes", "b.txt"]  # never .git/*
    assert second.changed_files == ["c.txt"]
    kinds = {row[0] for row in connect().execute("SELECT kind FROM checkpoints")}
    assert kinds == {"files"}
    own = manager.session_id
    for _ in range(2):
        records.undo(workspace, None, own_session=own, git=manager.git)
    assert not (workspace / "b.txt").exists() and not (workspace / "c.txt").exists()
    await manager.close()
    assert sorted(p.name for p in markers.iterdir()) == []
    later = decide(workspace)  # a later session takes it for a repository: still nothing runs
    assert later.repo is not None
    assert take_snapshot(workspace, later.repo).version.startswith("git:")
    assert sorted(p.name for p in markers.iterdir()) == []


async def test_a_linked_worktree(tmp_path: Path, markers: Path, bin_dir: Path) -> None:
    main = committed(tmp_path / "main")
    worktree = tmp_path / "wt"
    plain_git(main, "worktree", "add", "-q", str(worktree), "-b", "side")
    arm(worktree, main / ".git", bin_dir, markers)  # the shared config, hooks and includes
    git = decide(worktree)
    assert git.repo is not None
    assert git.repo.work_tree == worktree.resolve()
    assert git.repo.layout.git_dir == (main / ".git" / "worktrees" / "wt").resolve()
    assert git.repo.layout.common_dir == (main / ".git").resolve()
    result = await run_one_task(worktree, CHANGES, accept=["test -f n.txt"])
    assert result.state is TaskState.SUCCEEDED, result.error
    assert result.artifact_version is not None and result.artifact_version.startswith("git:")
    assert result.changed_files == ["a.txt", "b.txt", "n.txt"]
    assert_undone(worktree)
    assert sorted(p.name for p in markers.iterdir()) == []


async def test_a_workspace_below_the_top_of_a_hostile_repository(hostile: Hostile) -> None:
    workspace = hostile.repo / "sub"
    (workspace / "a.txt").write_text("a1\n")
    (workspace / "b.txt").write_text("b1\n")
    git = decide(workspace)
    assert git.repo is not None and git.repo.work_tree == hostile.repo.resolve()
    result = await run_one_task(workspace, CHANGES, accept=[])
    assert result.artifact_version is not None and result.artifact_version.startswith("git:")
    assert result.changed_files == ["a.txt", "b.txt", "n.txt"]
    assert_undone(workspace)
    assert hostile.fired() == []


async def test_a_sha256_repository(tmp_path: Path) -> None:
    repo = committed(tmp_path / "sha256", "--object-format=sha256")
    result = await run_one_task(repo, CHANGES, accept=[])
    assert result.artifact_version is not None
    assert len(result.artifact_version.removeprefix("git:")) == 64
    assert result.changed_files == ["a.txt", "b.txt", "n.txt"]
    assert_undone(repo)


def test_a_split_index_keeps_its_stat_cache(tmp_path: Path) -> None:
    repo = committed(tmp_path / "split")
    plain_git(repo, "update-index", "--split-index")
    (repo / "a.txt").write_text("changed\n")
    snapshot = take_snapshot(repo, find_repo(repo))
    assert snapshot.note is None
    plain_git(repo, "add", "-A")
    assert snapshot.version == f"git:{plain_git(repo, 'write-tree').strip()}"


async def test_checkpoints_kept_in_the_repository_by_earlier_versions_can_be_undone(
    tmp_path: Path,
) -> None:
    """Earlier versions wrote checkpoint commits into the repository, under
    `refs/agentcli/checkpoints/<task>`; the journal names those commits."""
    repo = committed(tmp_path / "old")
    journal = SqliteJournal.create("S-OLD", workspace=repo, model="m")
    journal.task_started("T-OLD", "change")
    start = old_style_checkpoint(repo, "T-OLD", None)
    (repo / "a.txt").write_text("a2\n")
    (repo / "n.txt").write_text("new\n")
    (repo / "b.txt").unlink()
    end = old_style_checkpoint(repo, "T-OLD", start)
    now = time.time()
    journal.conn.execute(
        "INSERT INTO checkpoints (task_id, workspace, kind, start_ref, end_ref, created_at, "
        "ended_at) VALUES ('T-OLD', ?, 'git', ?, ?, ?, ?)",
        (str(repo.resolve()), start, end, now, now),
    )
    journal.release()
    assert_undone(repo)


def old_style_checkpoint(repo: Path, task: str, parent: str | None) -> str:
    """What earlier versions did: a commit of the work tree through a temporary index, and a
    ref to it in the repository."""
    index = {"GIT_INDEX_FILE": str(repo / ".git" / "agentcli-test-index")}
    plain_git(repo, "add", "--all", "--", ":/", env=index)
    tree = plain_git(repo, "write-tree", env=index).strip()
    Path(index["GIT_INDEX_FILE"]).unlink()
    commit = plain_git(repo, "commit-tree", tree, "-m", "old", *(["-p", parent] if parent else []))
    plain_git(repo, "update-ref", f"refs/agentcli/checkpoints/{task}", commit.strip())
    return commit.strip()


async def test_undo_survives_gc_in_the_repository_and_tidying(tmp_path: Path) -> None:
    """The content a file had before the task was only in the repository's object store (staged,
    never committed). The user unstages it and runs `git gc --prune=now`, and agentcli's tidying
    drops its old scratch objects: undo still has what it needs."""
    repo = committed(tmp_path / "gc")
    (repo / "staged.txt").write_text("staged v1\n")
    plain_git(repo, "add", "staged.txt")
    blob = plain_git(repo, "rev-parse", ":staged.txt").strip()
    await run_one_task(repo, [tool_use("shell", {"command": "echo v2 > staged.txt"})], accept=[])
    plain_git(repo, "rm", "-q", "--cached", "-f", "staged.txt")
    plain_git(repo, "gc", "-q", "--prune=now")
    assert "missing" in plain_git(repo, "cat-file", "--batch-check", stdin=f"{blob}\n")
    own = find_repo(repo)
    assert own is not None
    old = time.time() - 30 * 24 * 3600
    for loose in (own.private_dir / "objects").glob("??/*"):
        os.utime(loose, (old, old))
    (own.private_dir / "tidied").touch()
    os.utime(own.private_dir / "tidied", (old, old))
    own.tidy()
    assert list((own.private_dir / "objects").glob("??/*")) == []
    code, out, err = undo(repo)
    assert (code, err) == (0, ""), out
    assert (repo / "staged.txt").read_text() == "staged v1\n"


def test_ignored_files_stay_out_as_the_repository_and_the_user_ignore_them(
    tmp_path: Path,
) -> None:
    """`.gitignore`, the repository's `info/exclude` and the user's global `core.excludesFile`
    (read as data) keep files out of snapshots, as git would; an excludes file the repository's
    config names that is no regular file (a FIFO would block git) is left unread."""
    repo = committed(tmp_path / "ignores")
    (repo / ".git" / "info" / "exclude").write_text("excluded-by-info.txt\n")
    user_ignore = tmp_path / "user-ignore"
    user_ignore.write_text("excluded-by-user.txt\n")
    with Path(os.environ["GIT_CONFIG_GLOBAL"]).open("a") as config:
        config.write(f"[core]\n\texcludesFile = {user_ignore}\n")
    own = find_repo(repo)
    assert own is not None
    before = take_snapshot(repo, own)
    for name in ("excluded-by-info.txt", "excluded-by-user.txt", "kept.txt"):
        (repo / name).write_text("x\n")
    assert changed_files(before, take_snapshot(repo, own), repo) == ["kept.txt"]
    fifo = repo / "pipe"
    os.mkfifo(fifo)
    plain_git(repo, "config", "core.excludesFile", str(fifo))
    own = find_repo(repo)
    assert own is not None
    assert take_snapshot(repo, own).version.startswith("git:")  # returns: nothing opened it
