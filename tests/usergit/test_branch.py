"""`create_branch` on real repositories: a new branch from HEAD, switched to, uncommitted work
carried along; each refusal before anything changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcli.errors import GitRefusal
from agentcli.usergit.branch import create_branch, current_branch
from tests.usergit.conftest import git, install_hook


def head_ref(repo: Path) -> str:
    return git(repo, "symbolic-ref", "-q", "HEAD", check=False).strip()


def test_a_new_branch_from_head_carries_uncommitted_work_along(repo: Path) -> None:
    (repo / "a.txt").write_text("work in progress\n")
    (repo / "b.txt").write_text("staged\n")
    git(repo, "add", "b.txt")
    head = git(repo, "rev-parse", "HEAD").strip()
    switched = create_branch(repo, "feat/login", trusted=True)
    assert (switched.branch, switched.start, switched.previous) == ("feat/login", head, "main")
    assert head_ref(repo) == "refs/heads/feat/login"
    assert git(repo, "rev-parse", "feat/login").strip() == head
    assert (repo / "a.txt").read_text() == "work in progress\n"
    assert git(repo, "diff", "--cached", "--name-only").split() == ["b.txt"]
    assert current_branch(repo) == "feat/login"


def test_from_a_detached_head_the_branch_starts_there(repo: Path) -> None:
    git(repo, "checkout", "-q", "--detach")
    assert current_branch(repo) is None
    create_branch(repo, "rescue", trusted=False)
    assert head_ref(repo) == "refs/heads/rescue"


def test_in_a_repository_without_commits(workspace: Path) -> None:
    git(workspace, "init", "-q", "-b", "main")
    switched = create_branch(workspace, "first", trusted=False)
    assert switched.start is None and head_ref(workspace) == "refs/heads/first"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("main", "branch main already exists"),
        ("bad..name", "is not a valid branch name"),
        ("-x", "is not a valid branch name"),
        ("with space", "is not a valid branch name"),
    ],
)
def test_refusals_change_nothing(repo: Path, name: str, message: str) -> None:
    git(repo, "switch", "-q", "-c", "other")
    with pytest.raises(GitRefusal, match=message):
        create_branch(repo, name, trusted=True)
    assert head_ref(repo) == "refs/heads/other"
    assert git(repo, "branch", "--format=%(refname:short)").split() == ["main", "other"]


def test_not_a_repository(workspace: Path) -> None:
    with pytest.raises(GitRefusal, match="is not in a git repository"):
        create_branch(workspace, "x", trusted=True)


def test_a_merge_in_progress(repo: Path) -> None:
    (repo / ".git" / "MERGE_HEAD").write_text(git(repo, "rev-parse", "HEAD"))
    with pytest.raises(GitRefusal, match="a merge is in progress"):
        create_branch(repo, "x", trusted=True)
    assert head_ref(repo) == "refs/heads/main"


def test_from_another_start_dirty_files_the_switch_would_touch_refuse(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "a.txt").write_text("a, later\n")
    git(repo, "commit", "-qam", "later")
    (repo / "a.txt").write_text("uncommitted\n")  # a.txt differs between HEAD and base
    (repo / "b.txt").write_text("uncommitted too\n")  # b.txt does not: it may come along
    with pytest.raises(GitRefusal, match=r"would change: a\.txt$") as refused:
        create_branch(repo, "agentcli/task-1", trusted=True, start=base)
    assert "stash" in (refused.value.hint or "")
    assert head_ref(repo) == "refs/heads/main"
    git(repo, "checkout", "-q", "a.txt")
    switched = create_branch(repo, "agentcli/task-1", trusted=True, start=base)
    assert switched.start == base and (repo / "a.txt").read_text() == "a\n"
    assert (repo / "b.txt").read_text() == "uncommitted too\n"


@pytest.mark.parametrize("trusted", [True, False])
def test_the_post_checkout_hook_runs_only_when_trusted(repo: Path, trusted: bool) -> None:
    marker = repo.parent / "post-checkout-ran"
    install_hook(repo, "post-checkout", f"touch {marker}")
    create_branch(repo, "x", trusted=trusted)
    assert marker.exists() is trusted
