"""A task's checkout and its diff, with GitPython on real repositories."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcli.batch.taskfile import RepoSource
from agentcli.batch.workspace import (
    WorkspaceError,
    discard,
    model_patch,
    prepare,
    resolve_all,
    resolve_base,
)
from tests.batch.helpers import git, make_repo


def test_a_local_repository_gets_a_worktree_at_its_base_and_runs_none_of_its_hooks(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    first = make_repo(repo, {"a.txt": "one\n", "bin.dat": "x"})
    (repo / "a.txt").write_text("two\n")
    git("commit", "-qam", "second", cwd=repo)
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {tmp_path / 'hook-ran'}\n")
    hook.chmod(0o755)
    source = RepoSource(path=repo)
    assert resolve_base(source, None) == git("rev-parse", "HEAD", cwd=repo)
    assert resolve_base(source, first[:8]) == first

    workspace = prepare(source, first, tmp_path / "task" / "workspace", tmp_path / "clones")
    assert (workspace / "a.txt").read_text() == "one\n"
    assert not (tmp_path / "hook-ran").exists()
    assert git("status", "--porcelain", cwd=repo) == ""  # the user's checkout is untouched
    assert prepare(source, first, workspace, tmp_path / "clones") == workspace  # kept

    (workspace / "a.txt").write_text("changed\n")
    (workspace / "new.txt").write_text("new\n")
    (workspace / "bin.dat").write_bytes(b"\x00\x01\xff")
    (workspace / ".gitignore").write_text("*.log\n")
    (workspace / "build.log").write_text("ignored\n")
    git("add", "a.txt", cwd=workspace)  # staged or not, it is in the diff
    patch = model_patch(workspace, first)
    assert "+changed" in patch
    assert "new file mode 100644" in patch and "+new" in patch
    assert "GIT binary patch" in patch
    assert "build.log" not in patch
    assert git("diff", "--cached", "--name-only", cwd=workspace) == "a.txt"  # index kept

    fresh = tmp_path / "fresh"
    git("clone", "-q", str(repo), str(fresh), cwd=tmp_path)
    git("checkout", "-q", first, cwd=fresh)
    (tmp_path / "p.diff").write_text(patch)
    git("apply", str(tmp_path / "p.diff"), cwd=fresh)
    assert (fresh / "bin.dat").read_bytes() == b"\x00\x01\xff"

    discard(workspace)
    assert not workspace.exists()
    assert "task/workspace" not in git("worktree", "list", cwd=repo)


def test_a_url_is_cloned_once_and_each_task_gets_a_worktree_of_it(tmp_path: Path) -> None:
    origin = tmp_path / "origin"
    base = make_repo(origin, {"README": "hi\n"})
    source = RepoSource(url=f"file://{origin}")
    assert resolve_base(source, None) == base
    assert resolve_base(source, "main") == base
    clones = tmp_path / "clones"
    one = prepare(source, base, tmp_path / "t1" / "workspace", clones)
    two = prepare(source, base, tmp_path / "t2" / "workspace", clones)
    assert (one / "README").read_text() == (two / "README").read_text() == "hi\n"
    assert len(list(clones.glob("*.git"))) == 1


def test_what_cannot_be_reached_says_why(tmp_path: Path) -> None:
    make_repo(tmp_path / "repo", {"README": "hi\n"})
    (tmp_path / "plain").mkdir()
    found = resolve_all(
        [
            (RepoSource(path=tmp_path / "missing"), None),
            (RepoSource(path=tmp_path / "plain"), None),
            (RepoSource(path=tmp_path / "repo"), "no-such-branch"),
            (RepoSource(url=f"file://{tmp_path / 'nowhere'}"), None),
            (RepoSource(path=tmp_path / "repo"), None),
        ]
    )
    said = {key[0].rsplit("/", 1)[-1] + f"@{key[1]}": str(value) for key, value in found.items()}
    assert "is not a directory" in said["missing@None"]
    assert "is not a git repository" in said["plain@None"]
    assert "has no commit 'no-such-branch'" in said["repo@no-such-branch"]
    assert "cannot be reached" in said["nowhere@None"]
    assert len(said["repo@None"]) == 40
    with pytest.raises(WorkspaceError):
        resolve_base(RepoSource(path=tmp_path / "missing"), None)


def test_tasks_of_one_repository_check_out_at_the_same_time(tmp_path: Path) -> None:
    """Workers prepare their tasks' worktrees of one repository at once, all named
    `workspace` (as each task's is): git's own bookkeeping of them must not race ("failed to
    read .git/worktrees/workspace/commondir" failed a task under load)."""
    import concurrent.futures

    repo = tmp_path / "repo"
    base = make_repo(repo, {"a.txt": "one\n"})
    source = RepoSource(path=repo)
    for round_ in range(5):  # the race, unguarded, showed in 2 of 3 runs of 3 rounds
        places = [tmp_path / f"r{round_}" / f"t{n}" / "workspace" for n in range(8)]
        with concurrent.futures.ThreadPoolExecutor(len(places)) as pool:
            made = list(pool.map(lambda w: prepare(source, base, w, tmp_path / "clones"), places))
        assert made == places
        assert all((w / "a.txt").read_text() == "one\n" for w in places)
        with concurrent.futures.ThreadPoolExecutor(len(places)) as pool:
            list(pool.map(discard, places))
        assert not any(w.exists() for w in places)
    assert git("worktree", "list", "--porcelain", cwd=repo).count("worktree ") == 1
