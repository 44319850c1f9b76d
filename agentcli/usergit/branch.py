"""`create_branch`: a new branch, from HEAD (or a start point), switched to before a task.

Refused (GitRefusal, before anything changes) when the workspace is not a repository, the name
is not a valid branch name or already names a branch, a merge or rebase is in progress, or the
work tree has uncommitted changes to files the switch would touch. From HEAD the switch
touches no file (the new branch is HEAD's commit), so uncommitted work simply comes along, as
with `git switch -c`; from another start point (`agentcli batch` starts from a task's base
commit) the files that differ between HEAD and it must be clean.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agentcli.errors import GitRefusal
from agentcli.usergit.repository import UserRepo, open_repository


@dataclass(frozen=True, slots=True)
class Switched:
    branch: str
    start: str | None
    """The commit it starts at (None: the repository has no commit yet)."""
    previous: str | None
    """The branch HEAD was on before (None: detached, or a new repository's own)."""


def current_branch(workspace: Path) -> str | None:
    """The branch HEAD is on (None when detached); GitRefusal outside a repository."""
    with open_repository(workspace, trusted=False) as repo:
        return repo.head().branch


def create_branch(
    workspace: Path, name: str, *, trusted: bool, start: str | None = None
) -> Switched:
    """Create branch `name` at `start` (default HEAD) and switch the work tree to it."""
    with open_repository(workspace, trusted=trusted) as repo:
        checked = repo.query("check-ref-format", "--branch", name, ok_codes=(0, 1, 128))
        if checked.status != 0 or name.startswith("-"):
            raise GitRefusal(f"{name!r} is not a valid branch name", hint="e.g. fix/login-timeout")
        if repo.branch_exists(name):
            raise GitRefusal(
                f"branch {name} already exists",
                hint="pick another name (agentcli creates the branch it works on)",
            )
        repo.check_not_busy()
        head = repo.head()
        target = head.sha if start is None else _commit_of(repo, start)
        if start is not None and head.sha is not None and target != head.sha:
            _refuse_if_dirty(repo, head.sha, target)
        repo.run("switch", "--no-guess", "-c", name, *([target] if start and target else []))
        return Switched(branch=name, start=target, previous=head.branch)


def _commit_of(repo: UserRepo, start: str) -> str:
    done = repo.query("rev-parse", "-q", "--verify", f"{start}^{{commit}}", ok_codes=(0, 1, 128))
    if done.status != 0:
        raise GitRefusal(f"{start!r} names no commit in {repo.work_tree}")
    return done.stdout.decode().strip()


def _refuse_if_dirty(repo: UserRepo, head: str, target: str | None) -> None:
    """GitRefusal naming the files the switch would touch that have uncommitted changes."""
    touched_out = repo.query(
        "diff-tree", "-r", "-z", "--name-only", "--no-renames", head, target or head
    ).stdout
    touched = {p for p in touched_out.decode(errors="surrogateescape").split("\0") if p}
    status = repo.query(
        "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"
    ).stdout.decode(errors="surrogateescape")
    dirty = {entry[3:] for entry in status.split("\0") if len(entry) > 3}
    clash = sorted(touched & dirty)
    if clash:
        shown = ", ".join(clash[:10]) + (f" and {len(clash) - 10} more" if len(clash) > 10 else "")
        raise GitRefusal(
            f"uncommitted changes to files the switch would change: {shown}",
            hint="commit or stash them first (git stash)",
        )
