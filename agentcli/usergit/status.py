"""The repository as the REPL's status line shows it: the branch, and how many files differ
from HEAD (changed, added or deleted, untracked ones included, ignored ones not), as
`git status` would count them.

This is agentcli asking for itself, so it goes through agentcli's own hardened git
(`agentcli.owngit`): the count compares HEAD's tree with the snapshot tree of the working copy
that agentcli writes in its private git dir anyway (the artifact version), and the branch is
read with `git symbolic-ref`, which runs nothing. No GitPython: the status line must not cost
the REPL its start-up.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentcli.owngit import GitError, OwnRepo
from agentcli.owngit.command import run_git


@dataclass(frozen=True, slots=True)
class RepoStatus:
    branch: str | None
    """The branch HEAD is on (None: detached)."""
    changed: int
    """Files that differ from HEAD."""

    def label(self) -> str:
        """`main · 2 changed` (`detached` for a detached HEAD)."""
        return f"{self.branch or 'detached'} · {self.changed} changed"


def repo_status(repo: OwnRepo, tree: str) -> RepoStatus | None:
    """The status of `repo` whose working copy is the tree `tree` (a snapshot); None when git
    cannot say (a broken repository: the status line then shows no repository part)."""
    git_dir = str(repo.layout.git_dir)

    def ask(*args: str) -> tuple[int, str]:
        done = run_git(repo.git, args, git_dir=git_dir, cwd=repo.work_tree, ok_codes=(0, 1, 128))
        return done.returncode, done.stdout.decode(errors="surrogateescape").strip()

    try:
        code, ref = ask("symbolic-ref", "-q", "HEAD")
        branch = ref.removeprefix("refs/heads/") if code == 0 else None
        code, head = ask("rev-parse", "-q", "--verify", "HEAD^{commit}")
        base = head if code == 0 else repo.run("mktree", stdin=b"").stdout.decode().strip()
        return RepoStatus(branch=branch, changed=len(repo.diff_names(base, tree)))
    except (GitError, OSError):
        return None
