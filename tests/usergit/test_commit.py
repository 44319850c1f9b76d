"""`commit_files` on real repositories: exactly the files asked for, as the work tree has them;
everything else the user had staged or changed stays as it was; each state in which git cannot
commit is one clear refusal that leaves the index untouched, byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcli.errors import GitRefusal
from agentcli.usergit.commit import Committed, NothingToCommit, commit_files
from agentcli.usergit.message import MessageParts
from tests.usergit.conftest import committed, git, install_hook, staged

PARTS = MessageParts(summary="Change c", session_id="S1", task_id="T1")


def commit(workspace: Path, paths: list[str], *, trusted: bool = True) -> Committed:
    done = commit_files(workspace, paths, PARTS, trusted=trusted)
    assert isinstance(done, Committed), done
    return done


def test_only_the_given_files_are_committed_and_the_rest_stays_as_it_was(repo: Path) -> None:
    (repo / "a.txt").write_text("a staged by the user\n")
    git(repo, "add", "a.txt")
    (repo / "a.txt").write_text("a staged, then changed again\n")  # staged and unstaged
    (repo / "b.txt").write_text("b unstaged\n")
    (repo / "mine.txt").write_text("the user's untracked file\n")
    (repo / "new.txt").write_text("made by the task\n")
    git(repo, "rm", "-q", "--cached", "b.txt")  # a staged deletion the task must not commit
    (repo / "b.txt").write_text("b unstaged\n")
    before_staged = git(repo, "diff", "--cached")
    (repo / "sub").mkdir()
    (repo / "sub" / "c.txt").write_text("c\n")

    done = commit(repo, ["new.txt", "sub/c.txt"])

    assert done.branch == "main" and done.paths == ("new.txt", "sub/c.txt")
    assert git(repo, "rev-parse", "HEAD").strip() == done.sha
    assert sorted(committed(repo)) == ["new.txt", "sub/c.txt"]
    assert git(repo, "show", "HEAD:new.txt") == "made by the task\n"
    # The user's staged changes are still staged, exactly; their other work is untouched.
    assert git(repo, "diff", "--cached") == before_staged
    assert sorted(staged(repo)) == ["a.txt", "b.txt"]
    assert (repo / "a.txt").read_text() == "a staged, then changed again\n"
    status = git(repo, "status", "--porcelain")
    assert "?? mine.txt" in status
    assert "new.txt" not in status and "sub/" not in status  # the index knows the commit


def test_a_deleted_and_a_modified_file(repo: Path) -> None:
    (repo / "a.txt").unlink()
    (repo / "b.txt").write_text("b changed\n")
    commit(repo, ["a.txt", "b.txt"])
    assert git(repo, "show", "--name-status", "--format=", "HEAD").split() == [
        "D", "a.txt", "M", "b.txt",
    ]  # fmt: skip
    assert git(repo, "status", "--porcelain") == ""


def test_paths_from_a_subdirectory_workspace_are_the_repositorys(repo: Path) -> None:
    (repo / "pkg").mkdir()
    (repo / "pkg" / "m.py").write_text("x = 1\n")
    (repo / "b.txt").write_text("changed from pkg/\n")
    commit(repo / "pkg", ["m.py", "../b.txt"])
    assert sorted(committed(repo)) == ["b.txt", "pkg/m.py"]


def test_odd_file_names_are_committed_as_they_are(repo: Path) -> None:
    names = ["*.txt", ":(glob)x", "with space.txt", "-dash.txt"]
    for name in names:
        (repo / name).write_text(name + "\n")
    commit(repo, names)
    assert sorted(committed(repo)) == sorted(names)  # literal names, never pathspec magic


def test_the_message_is_the_composed_one(repo: Path) -> None:
    (repo / "a.txt").write_text("changed\n")
    commit(repo, ["a.txt"])
    message = git(repo, "log", "-1", "--format=%B")
    assert message.startswith("Change c\n\n")
    assert git(repo, "log", "-1", "--format=%(trailers:only,unfold)").split("\n")[:2] == [
        "Agentcli-Session: S1",
        "Agentcli-Task: T1",
    ]
    assert git(repo, "log", "-1", "--format=%ae").strip() == "dev@example.com"


def test_a_new_file_removed_since_is_left_out(repo: Path) -> None:
    (repo / "a.txt").write_text("changed\n")
    commit(repo, ["a.txt", "made-then-removed.txt"])
    assert committed(repo) == ["a.txt"]
    done = commit_files(repo, ["made-then-removed.txt"], PARTS, trusted=True)
    assert isinstance(done, NothingToCommit)


def test_nothing_to_commit(repo: Path) -> None:
    assert commit_files(repo, [], PARTS, trusted=True) == NothingToCommit(
        "the task changed no files"
    )
    (repo / "a.txt").write_text("a\n")  # as HEAD has it
    done = commit_files(repo, ["a.txt"], PARTS, trusted=True)
    assert isinstance(done, NothingToCommit)
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "1"


def test_the_first_commit_of_a_new_repository(workspace: Path) -> None:
    git(workspace, "init", "-q", "-b", "trunk")
    git(workspace, "config", "user.email", "dev@example.com")
    (workspace / "first.txt").write_text("1\n")
    (workspace / "other.txt").write_text("not the task's\n")
    done = commit(workspace, ["first.txt"])
    assert done.branch == "trunk"
    assert committed(workspace) == ["first.txt"]
    assert "?? other.txt" in git(workspace, "status", "--porcelain")


# -- hooks: the trusted workspace's run; the untrusted one's do not --------------------------
def test_a_trusted_workspace_runs_the_repositorys_commit_hooks(repo: Path) -> None:
    marker = repo.parent / "pre-commit-ran"
    install_hook(repo, "pre-commit", f"git diff --cached --name-only > {marker}")
    (repo / "a.txt").write_text("changed\n")
    (repo / "b.txt").write_text("staged by the user\n")
    git(repo, "add", "b.txt")
    done = commit(repo, ["a.txt"], trusted=True)
    # The hook saw exactly what was committed, as with `git commit --only`.
    assert marker.read_text().split() == ["a.txt"]
    assert done.notices == ()


def test_an_untrusted_workspace_runs_no_hook_and_says_so(repo: Path) -> None:
    marker = repo.parent / "hook-ran"
    for name in ("pre-commit", "commit-msg", "post-commit", "reference-transaction"):
        install_hook(repo, name, f"echo {name} >> {marker}")
    (repo / "a.txt").write_text("changed\n")
    done = commit(repo, ["a.txt"], trusted=False)
    assert not marker.exists()
    assert committed(repo) == ["a.txt"]
    assert len(done.notices) == 1
    assert (
        "not trusted: its git pre-commit, commit-msg, post-commit hooks did not run"
        in (done.notices[0])
    )


def test_an_untrusted_repositorys_own_filter_and_signing_programs_do_not_run(repo: Path) -> None:
    marker = repo.parent / "filter-ran"
    git(repo, "config", "filter.evil.clean", f"sh -c 'touch {marker}; tr a-z A-Z'")
    git(repo, "config", "commit.gpgSign", "true")
    git(repo, "config", "gpg.program", f"sh -c 'touch {marker}; exit 1'")
    git(repo, "config", "core.fsmonitor", f"sh -c 'touch {marker}'")
    (repo / ".gitattributes").write_text("*.txt filter=evil\n")
    (repo / "a.txt").write_text("lower\n")
    done = commit(repo, ["a.txt", ".gitattributes"], trusted=False)
    assert not marker.exists()
    assert git(repo, "show", "HEAD:a.txt") == "lower\n"  # committed as it is, unfiltered
    assert any("the commit is not signed" in notice for notice in done.notices)


def test_a_trusted_repositorys_filter_runs_as_git_add_would_run_it(repo: Path) -> None:
    git(repo, "config", "filter.upper.clean", "tr a-z A-Z")
    (repo / ".gitattributes").write_text("*.txt filter=upper\n")
    (repo / "a.txt").write_text("lower\n")
    commit(repo, ["a.txt", ".gitattributes"], trusted=True)
    assert git(repo, "show", "HEAD:a.txt") == "LOWER\n"


def test_a_hook_that_refuses_leaves_the_index_as_it_was(repo: Path) -> None:
    install_hook(repo, "pre-commit", "echo 'lint: 3 problems' >&2; exit 1")
    (repo / "b.txt").write_text("staged by the user\n")
    git(repo, "add", "b.txt")
    index = (repo / ".git" / "index").read_bytes()
    (repo / "a.txt").write_text("changed\n")
    (repo / "new.txt").write_text("new\n")
    with pytest.raises(GitRefusal) as refused:
        commit_files(repo, ["a.txt", "new.txt"], PARTS, trusted=True)
    assert "lint: 3 problems" in refused.value.message
    assert (repo / ".git" / "index").read_bytes() == index
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "1"
    assert sorted(p.name for p in (repo / ".git").iterdir() if "agentcli" in p.name) == []
    assert not (repo / ".git" / "index.lock").exists()


# -- states git cannot commit in: one clear refusal each, nothing changed --------------------
def test_a_detached_head_is_refused(repo: Path) -> None:
    git(repo, "checkout", "-q", "--detach")
    (repo / "a.txt").write_text("changed\n")
    with pytest.raises(GitRefusal, match="HEAD is detached") as refused:
        commit_files(repo, ["a.txt"], PARTS, trusted=True)
    assert refused.value.hint is not None and "--branch" in refused.value.hint


def test_a_merge_in_progress_is_refused(repo: Path) -> None:
    git(repo, "switch", "-q", "-c", "other")
    (repo / "a.txt").write_text("theirs\n")
    git(repo, "commit", "-qam", "theirs")
    git(repo, "switch", "-q", "main")
    (repo / "a.txt").write_text("ours\n")
    git(repo, "commit", "-qam", "ours")
    git(repo, "merge", "-q", "other", check=False)  # a conflict: MERGE_HEAD stays
    assert (repo / ".git" / "MERGE_HEAD").exists()
    index = (repo / ".git" / "index").read_bytes()
    with pytest.raises(GitRefusal, match="a merge is in progress") as refused:
        commit_files(repo, ["b.txt"], PARTS, trusted=True)
    assert "git merge --abort" in (refused.value.hint or "")
    assert (repo / ".git" / "index").read_bytes() == index


def test_a_locked_index_is_refused_and_the_lock_left_alone(repo: Path) -> None:
    lock = repo / ".git" / "index.lock"
    lock.write_text("someone else's\n")
    (repo / "a.txt").write_text("changed\n")
    with pytest.raises(GitRefusal, match="index is locked"):
        commit_files(repo, ["a.txt"], PARTS, trusted=True)
    assert lock.read_text() == "someone else's\n"
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "1"


def test_no_identity_is_refused(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "empty-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    git(repo, "config", "--unset", "user.email")
    (repo / "a.txt").write_text("changed\n")
    with pytest.raises(GitRefusal, match=r"user\.email is not set") as refused:
        commit_files(repo, ["a.txt"], PARTS, trusted=True)
    assert "git config --global user.email" in (refused.value.hint or "")
    monkeypatch.setenv("EMAIL", "env@example.com")  # as git itself, EMAIL is enough
    commit(repo, ["a.txt"])
    assert git(repo, "log", "-1", "--format=%ae").strip() == "env@example.com"


def test_not_a_repository_is_refused(workspace: Path) -> None:
    (workspace / "a.txt").write_text("a\n")
    with pytest.raises(GitRefusal, match="is not in a git repository"):
        commit_files(workspace, ["a.txt"], PARTS, trusted=True)


def test_a_path_outside_the_repository_is_refused(repo: Path) -> None:
    with pytest.raises(GitRefusal, match="outside the repository"):
        commit_files(repo, ["../elsewhere.txt"], PARTS, trusted=True)
