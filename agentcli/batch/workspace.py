"""A task's workspace, made with GitPython: its repository checked before the batch starts
(reachable, its base commit resolved once), a checkout of its own at that commit, and in the
end the task's diff from it (SWE-bench's `model_patch`).

- A local repository gets a `git worktree` (detached at the base commit) under
  `DIR/tasks/ID/workspace`: no copy of its history, and the user's checkout is never touched
  (git records the worktree in the repository's `.git/worktrees/`; `git worktree prune` forgets
  it once `DIR` is deleted).
- A git URL is cloned once per machine into `DIR/repos/` (bare, under a file lock, fetched
  again when a task's commit is missing) and each task gets a worktree of that clone.

No hook of the repository runs (`core.hooksPath=/dev/null`, `core.fsmonitor=false`): tasks may
come from repositories nobody here reviewed. git never asks for credentials
(`GIT_TERMINAL_PROMPT=0`): a URL that needs them fails at once instead of hanging a worker.
"""

from __future__ import annotations

import fcntl
import hashlib
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import git

from agentcli.batch.taskfile import RepoSource

HARDENED = ["core.hooksPath=/dev/null", "core.fsmonitor=false", "core.pager=cat"]
GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}
FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


class WorkspaceError(Exception):
    """A repository that cannot be reached, a commit it lacks, a checkout that failed."""


def _git(repo: git.Repo) -> git.Git:
    return repo.git(c=HARDENED)


def _said(exc: git.GitCommandError) -> str:
    stderr = str(exc.stderr or "").strip().replace("stderr: ", "").strip("'").strip()
    return stderr.splitlines()[-1] if stderr else str(exc)


def resolve_base(source: RepoSource, base_commit: str | None) -> str:
    """The commit a task starts from, checked now: `base_commit` (default HEAD) as a full id
    in a local repository; for a URL, HEAD or a branch or tag name asked of the remote, or a
    full commit id as given. WorkspaceError when the repository or commit cannot be reached."""
    if source.path is not None:
        return _resolve_local(source.path, base_commit)
    assert source.url is not None
    if base_commit is not None and FULL_SHA.fullmatch(base_commit):
        _ls_remote(source.url, "HEAD")  # reachable at all
        return base_commit
    wanted = base_commit or "HEAD"
    for line in _ls_remote(source.url, wanted).splitlines():
        sha, _, ref = line.partition("\t")
        if ref in (
            wanted,
            f"refs/heads/{wanted}",
            f"refs/tags/{wanted}^{{}}",
            f"refs/tags/{wanted}",
        ):
            return sha
    raise WorkspaceError(f"{source.url} has no {wanted!r} (give base_commit as a full commit id)")


def _resolve_local(path: Path, base_commit: str | None) -> str:
    if not path.is_dir():
        raise WorkspaceError(
            f"{path} is not a directory (repo: a local repository, or a git URL such as "
            "https://github.com/OWNER/NAME)"
        )
    try:
        repo = git.Repo(path)
    except git.InvalidGitRepositoryError:
        raise WorkspaceError(f"{path} is not a git repository") from None
    with repo:
        try:
            return repo.commit(base_commit or "HEAD").hexsha
        except (ValueError, git.BadName, git.GitCommandError):
            raise WorkspaceError(f"{path} has no commit {base_commit or 'HEAD'!r}") from None


def _ls_remote(url: str, ref: str) -> str:
    try:
        said = str(git.Git().ls_remote(url, ref, env=GIT_ENV))
    except git.GitCommandError as exc:
        raise WorkspaceError(f"{url} cannot be reached: {_said(exc)}") from None
    return said


def prepare(source: RepoSource, base: str, workspace: Path, clones: Path) -> Path:
    """A checkout of `base` at `workspace` (made now, or kept from an earlier attempt).
    `clones` holds the bare clones of URLs on this machine."""
    if (workspace / ".git").exists():
        return workspace
    workspace.parent.mkdir(parents=True, exist_ok=True)
    if source.path is not None:
        origin = source.path
    else:
        assert source.url is not None
        origin = _bare_clone(source.url, base, clones)
    try:
        # One worktree change at a time per repository: two `git worktree add` at once race
        # on its `.git/worktrees/` ("failed to read .git/worktrees/workspace/commondir").
        with git.Repo(origin) as repo, _locked(_worktree_lock(repo)):
            _git(repo).worktree("add", "--detach", "--force", str(workspace), base, env=GIT_ENV)
    except (git.GitCommandError, git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
        said = _said(exc) if isinstance(exc, git.GitCommandError) else str(exc)
        raise WorkspaceError(f"cannot check out {base[:12]} of {source.shown}: {said}") from None
    return workspace


def discard(workspace: Path) -> None:
    """Remove a task's checkout (to start it again from its base commit)."""
    if not workspace.exists():
        return
    try:
        with git.Repo(workspace) as repo, _locked(_worktree_lock(repo)):
            _git(repo).worktree("remove", "--force", str(workspace), env=GIT_ENV)
    except (git.GitCommandError, git.InvalidGitRepositoryError, git.NoSuchPathError):
        shutil.rmtree(workspace, ignore_errors=True)
    shutil.rmtree(workspace, ignore_errors=True)


def _bare_clone(url: str, base: str, clones: Path) -> Path:
    """This machine's bare clone of `url`, holding `base` (cloned or fetched now if not)."""
    clones.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(url.encode()).hexdigest()[:16]
    path = clones / f"{name}.git"
    with _locked(clones / f"{name}.lock"):
        try:
            if not path.exists():
                partial = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=clones))
                git.Repo.clone_from(url, partial, bare=True, env=GIT_ENV).close()
                partial.rename(path)
            with git.Repo(path) as repo:
                if not _has_commit(repo, base):
                    _git(repo).fetch("origin", base, env=GIT_ENV)
        except git.GitCommandError as exc:
            raise WorkspaceError(f"cannot clone {url}: {_said(exc)}") from None
    return path


def _has_commit(repo: git.Repo, sha: str) -> bool:
    try:
        repo.commit(sha)
    except (ValueError, git.BadName):
        return False
    return True


def _worktree_lock(repo: git.Repo) -> Path:
    """The lock that orders the worktree changes of `repo` (every batch's, every worker's): a
    file beside git's own `worktrees/` in its common git dir."""
    return Path(repo.common_dir) / "agentcli-worktrees.lock"


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def model_patch(workspace: Path, base: str) -> str:
    """Everything the task changed since `base`, new files included (what `.gitignore` leaves
    out is not), as a patch `git apply` takes on a checkout of `base`: committed or not, the
    workspace's files against `base`, staged through a temporary index so the workspace's
    own index stays as it is."""
    with git.Repo(workspace) as repo, tempfile.TemporaryDirectory() as scratch:
        index = Path(scratch) / "index"
        own_index = Path(repo.git.rev_parse("--git-path", "index"))
        if not own_index.is_absolute():
            own_index = workspace / own_index
        if own_index.exists():
            shutil.copyfile(own_index, index)  # so only changed files are hashed again
        env = {**GIT_ENV, "GIT_INDEX_FILE": str(index)}
        runner = _git(repo)
        runner.add("--all", "--", ".", env=env)
        patch = runner.diff(
            "--cached",
            "--binary",
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
            "--no-renames",
            base,
            env=env,
            strip_newline_in_stdout=False,
        )
    return str(patch)


def resolve_all(
    wanted: Iterable[tuple[RepoSource, str | None]],
) -> dict[tuple[str, str | None], str | Exception]:
    """`resolve_base` for each distinct (repository, base commit): its commit id, or the
    WorkspaceError saying why it cannot be reached."""
    found: dict[tuple[str, str | None], str | Exception] = {}
    for source, base in wanted:
        key = (source.shown, base)
        if key in found:
            continue
        try:
            found[key] = resolve_base(source, base)
        except WorkspaceError as exc:
            found[key] = exc
    return found
