"""`commit_files`: commit exactly some files of the work tree, as they are now, on the branch
HEAD is on; whatever else is changed or staged stays as it was.

This is what `git commit --only -- PATHS` does, and how git does it, with new files too (which
`--only` refuses): holding the repository's index lock throughout, it builds a temporary index
(the real one with HEAD read into it, so its stat cache still holds, then the given files
staged from the work tree), commits that with `git commit` (the user's hooks run with that
index, as they do for `--only`, and the commit is signed if the user signs), and only then
updates the real index for those files alone to what was committed. The user's staged changes
to other files stay staged, their unstaged ones unstaged. Anything that fails before the
commit (a hook that refuses, a file git cannot add) leaves the real index untouched, byte for
byte; the temporary files and the lock go.

Used by the session (`run --commit`, `/commit`) and by `agentcli batch` (each task's commit on
`agentcli/<instance_id>`): a workspace, the files, the message parts, and whether the
workspace is trusted; nothing here knows of a terminal.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agentcli.errors import GitRefusal
from agentcli.usergit.message import MessageParts, compose
from agentcli.usergit.repository import COMMIT_HOOKS, Head, UserRepo, open_repository


@dataclass(frozen=True, slots=True, kw_only=True)
class Committed:
    sha: str
    branch: str
    paths: tuple[str, ...]
    """The files committed, relative to the top of the work tree."""
    notices: tuple[str, ...] = ()
    """What the user should hear (the hooks an untrusted workspace did not get to run)."""


@dataclass(frozen=True, slots=True)
class NothingToCommit:
    reason: str


def commit_files(
    workspace: Path, paths: Sequence[str], parts: MessageParts, *, trusted: bool
) -> Committed | NothingToCommit:
    """Commit the files `paths` (relative to `workspace`) as they are in the work tree now,
    with the message `parts` make. GitRefusal says why not (no repository, detached HEAD, a
    merge in progress, a locked index, no identity, git or a hook refused)."""
    if not paths:
        return NothingToCommit("the task changed no files")
    with open_repository(workspace, trusted=trusted) as repo:
        head = repo.check_committable()
        names = tree_paths(repo, workspace, paths)
        with repo.index_locked() as lock:
            return _commit_locked(repo, head, names, parts, lock)


def check_committable(workspace: Path, *, detached_ok: bool = False) -> None:
    """GitRefusal now if a commit in `workspace` could not be made (before a task, so a run
    asked to commit fails before it spends anything); `detached_ok`: a branch will be started
    first."""
    with open_repository(workspace, trusted=False) as repo:
        if detached_ok:
            repo.check_not_busy()
            repo.check_identity()
        else:
            repo.check_committable()


def tree_paths(repo: UserRepo, workspace: Path, paths: Sequence[str]) -> list[str]:
    """`paths` (relative to `workspace`, possibly `../x` from a subdirectory) relative to the
    top of the work tree; GitRefusal for one outside it."""
    top = repo.work_tree
    base = workspace.resolve()
    names = []
    for path in paths:
        full = Path(os.path.normpath(base / path))
        if not full.is_relative_to(top) or full == top:
            raise GitRefusal(f"{path} is outside the repository at {top}: it cannot be committed")
        names.append(full.relative_to(top).as_posix())
    return sorted(dict.fromkeys(names))


def _commit_locked(
    repo: UserRepo, head: Head, names: list[str], parts: MessageParts, lock: Path
) -> Committed | NothingToCommit:
    scratch = repo.git_dir / f"agentcli-commit-{os.getpid()}.index"
    updated = repo.git_dir / f"agentcli-index-{os.getpid()}.index"
    try:
        _seed(repo, head, scratch)
        names = _present(repo, names, scratch)
        if not names:
            return NothingToCommit("the files the task changed are gone, and HEAD never had them")
        pathspec = _pathspec(names)
        repo.run(
            "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul", index=scratch,
            stdin=pathspec,
        )  # fmt: skip
        against = head.sha or _empty_tree(repo)
        same = repo.query(
            "diff-index", "--cached", "--quiet", against, index=scratch, ok_codes=(0, 1)
        )
        if same.status == 0:
            return NothingToCommit("the files the task changed are as HEAD has them")
        tree = repo.run("write-tree", index=scratch).stdout.decode().strip()
        notices = _left_out(repo)
        message = compose(parts, committed_tree=tree)
        repo.run("commit", "-q", "--cleanup=whitespace", "-F", "-", index=scratch,
                 stdin=message.encode("utf-8", errors="surrogateescape"))  # fmt: skip
        sha = repo.query("rev-parse", "--verify", "HEAD^{commit}").stdout.decode().strip()
        _update_index(repo, sha, pathspec, scratch, updated, lock)
    finally:
        for leftover in (scratch, updated, scratch.with_name(scratch.name + ".lock")):
            leftover.unlink(missing_ok=True)
    assert head.branch is not None  # check_committable
    return Committed(sha=sha, branch=head.branch, paths=tuple(names), notices=notices)


def _pathspec(names: Sequence[str]) -> bytes:
    """NUL-separated literal pathspecs (a name like `*.txt` or `:(glob)x` is just a name)."""
    return b"".join(os.fsencode(f":(literal){name}") + b"\0" for name in names)


def _present(repo: UserRepo, names: list[str], scratch: Path) -> list[str]:
    """`names` without those neither in the work tree nor in HEAD (a file the task made that
    was removed since): git cannot stage a path it has never seen."""
    missing = [name for name in names if not os.path.lexists(repo.work_tree / name)]
    if not missing:
        return names
    known: set[str] = set()
    for start in range(0, len(missing), 500):  # a command line's worth at a time
        specs = [f":(literal){name}" for name in missing[start : start + 500]]
        listed = repo.query("ls-files", "-z", "--cached", "--", *specs, index=scratch).stdout
        known.update(listed.decode(errors="surrogateescape").split("\0"))
    return [name for name in names if name not in missing or name in known]


def _seed(repo: UserRepo, head: Head, scratch: Path) -> None:
    """The temporary index: HEAD's tree, keeping the real index's stat cache where it holds
    (`read-tree -i -m` of one tree, which does not consult the work tree), so hooks that
    compare it with the work tree are not slowed by re-reading every file. A copy by the
    kernel; the real index is never read into memory."""
    if head.sha is None:
        repo.run("read-tree", "--empty", index=scratch)
        return
    if repo.index_path.is_file():
        shutil.copyfile(repo.index_path, scratch)
    repo.run("read-tree", "-i", "-m", head.sha, index=scratch)


def _empty_tree(repo: UserRepo) -> str:
    return repo.query("mktree").stdout.decode().strip()


def _left_out(repo: UserRepo) -> tuple[str, ...]:
    """What an untrusted workspace's commit goes without, said once."""
    if repo.trusted:
        return ()
    hooks = repo.hooks_left_out(COMMIT_HOOKS)
    said = []
    if hooks:
        said.append(
            f"this workspace is not trusted: its git {', '.join(hooks)} hook"
            f"{'s' if len(hooks) > 1 else ''} did not run (`agentcli trust` lets them run)"
        )
    if repo.signs_commits():
        said.append("this workspace is not trusted: the commit is not signed")
    return tuple(said)


def _update_index(
    repo: UserRepo, sha: str, pathspec: bytes, scratch: Path, updated: Path, lock: Path
) -> None:
    """The real index with the committed files as committed and every other entry as it was:
    written to the lock file, then renamed over the index (git's own way to replace it)."""
    source = repo.index_path if repo.index_path.is_file() else scratch
    shutil.copyfile(source, updated)
    try:
        repo.run(
            "reset", "-q", sha, "--pathspec-from-file=-", "--pathspec-file-nul", index=updated,
            stdin=pathspec,
        )  # fmt: skip
        updated.replace(lock)
        lock.replace(repo.index_path)
    except (GitRefusal, OSError) as exc:
        raise GitRefusal(
            f"committed {sha[:12]}, but the index could not be updated for its files ({exc})",
            hint="`git reset -q -- FILES` brings the index in line with the commit",
        ) from exc
