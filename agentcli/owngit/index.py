"""The index agentcli keeps in its private git dir, so that a snapshot re-hashes only what
changed since the previous one (in this process or an earlier one).

A snapshot's tree is, by definition, what a *fresh* computation gives: a copy of the
repository's index (its tracked paths and git's stat cache), `git add --all` (every tracked
file's current content, tracked files gone from disk dropped, untracked files not ignored
added), `git write-tree`. The fresh computation re-reads every file that differs from the
repository's index on each snapshot: files the task or the user changed since their last
`git add`, untracked files, "racily clean" entries. The kept index (`<private dir>/index`) is
the previous snapshot's index, so git's stat cache already holds those.

Reusing it gives the fresh tree exactly when the entry sets agree; `git add --all` on the kept
index can differ from a fresh one in two ways only, both checked after every reuse (against
the repository index's own tree, written when the kept index was seeded from it; what was
checked is noted, and not asked of git again while the tree and the ignore files that decide
about its untracked paths are unchanged):
- an untracked file the kept index holds is ignored now (a `.gitignore` changed): fresh
  leaves it out, `add --all` keeps it (it is tracked in the kept index);
- a tracked file that was deleted is back and ignored: fresh has it (tracked in the
  repository's index), the kept index lost it when it was deleted.
Either one, a repository index that changed since the seed (a commit, `git add`, even a
`git status` refreshing it), changed settings, or any git error (a corrupt or missing kept
index, a pruned tree) makes the snapshot seed the kept index afresh from a copy of the
repository's index: the fresh computation, as every snapshot did before.

Indexes whose format is not version 2 (intent-to-add or skip-worktree entries, sparse
checkouts, `index.version=4`) or that are split are never kept: each snapshot is fresh.
The kept index and its state are guarded by a lock file, since every agentcli process
working in the repository shares them.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

from agentcli.owngit.command import GitError
from agentcli.private import write_private
from agentcli.safe_read import read_bytes

STATE_VERSION = 1
RACY_WINDOW_NS = 2_000_000_000
"""An ignore file changed less than this long ago may change again without its stat showing
it (timestamps are coarser than the clock): it is not trusted to be unchanged."""
_THREAD_LOCK = threading.Lock()


class Runner(Protocol):
    def __call__(
        self,
        *args: str,
        index: Path | None = None,
        stdin: bytes | None = None,
        ok_codes: tuple[int, ...] = (0,),
    ) -> subprocess.CompletedProcess[bytes]: ...


def snapshot_tree(
    run: Runner, *, git_dir: Path, private: Path, work_tree: Path, settings: tuple[str, ...]
) -> str:
    """The tree id of the working copy (see the module docstring)."""
    real = git_dir / "index"
    if not _keepable(real, git_dir):
        return fresh_tree(run, real, git_dir)
    kept = private / "index"
    state_path = private / "index.state"
    with _locked(private / "index.flock"):
        expected: dict[str, object] = {
            "version": STATE_VERSION,
            "seed": _stamp(real),
            "settings": list(settings),
        }
        state = _read_state(state_path)
        if state is not None and all(state.get(k) == v for k, v in expected.items()):
            try:
                noted = json.dumps(state)
                tree = _add_all(run, kept)
                if _agrees_with_fresh(run, state, tree, work_tree, settings, private):
                    if json.dumps(state) != noted:
                        _write_state(state_path, state)
                    return tree
            except GitError:
                pass  # a corrupt or missing kept index, a pruned base tree: seed again
        state_path.unlink(missing_ok=True)
        return _seed(run, real, kept, state_path, expected)


def _keepable(real: Path, git_dir: Path) -> bool:
    if any(git_dir.glob("sharedindex.*")):
        return False
    try:  # the repository's index: a regular file, never a pipe (`agentcli.safe_read`)
        header = read_bytes(real, inside=None, limit=8, cut=True)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return header == b"DIRC\0\0\0\2"


def _stamp(real: Path) -> list[int] | None:
    try:
        st = real.stat()
    except FileNotFoundError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _read_state(path: Path) -> dict[str, object] | None:
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) and isinstance(state.get("base"), str) else None


def _add_all(run: Runner, index: Path) -> str:
    run("add", "--all", "--", ":/", index=index)
    return run("write-tree", index=index).stdout.decode().strip()


def _seed(run: Runner, real: Path, kept: Path, state_path: Path, state: dict[str, object]) -> str:
    kept.unlink(missing_ok=True)
    if real.is_file():
        # copy2 keeps the index's mtime, which git needs to tell "racily clean" entries; not
        # its mode: the copy is agentcli's private file (git may never write it again).
        shutil.copy2(real, kept)
        kept.chmod(0o600)
    try:
        base = run("write-tree", index=kept).stdout.decode().strip()
    except GitError:  # e.g. unmerged entries: the kept index cannot be checked, so not kept
        base = None
    tree = _add_all(run, kept)
    if base is not None:
        _write_state(state_path, {**state, "base": base})
    return tree


def _agrees_with_fresh(
    run: Runner,
    state: dict[str, object],
    tree: str,
    work_tree: Path,
    settings: tuple[str, ...],
    private: Path,
) -> bool:
    """Whether `tree`, written through the kept index, is what a fresh computation gives:
    none of the paths it adds to the repository index's tree (the state's `base`) is ignored
    now, and every path of `base` it lacks is really gone from the work tree. What was
    verified is noted in `state` (`verified`): while the tree and every ignore file that
    decides about those paths are unchanged (and settled), nothing is asked of git again."""
    last = state.get("verified")
    if isinstance(last, dict) and last.get("tree") == tree:
        added, deleted = list(last["added"]), list(last["deleted"])
    else:
        added, deleted = _changes(run, str(state["base"]), tree)
    if any(os.path.lexists(work_tree / path) for path in deleted):
        return False
    rules = _ignore_files(work_tree, added, settings, private)
    # Paths git added just now were not ignored; those verified before still are not, if no
    # file that could ignore them changed since.
    unchanged = rules is not None and isinstance(last, dict) and last.get("rules") == rules
    if added and not unchanged and _any_ignored(run, added):
        return False
    state["verified"] = {"tree": tree, "added": added, "deleted": deleted, "rules": rules}
    return True


def _changes(run: Runner, base: str, tree: str) -> tuple[list[str], list[str]]:
    """The paths `tree` adds to `base`, and those it lacks."""
    out = run("diff-tree", "-r", "-z", "--name-status", "--no-renames", base, tree).stdout.decode(
        errors="surrogateescape"
    )
    fields = out.split("\0")
    added: list[str] = []
    deleted: list[str] = []
    for status, path in zip(fields[0::2], fields[1::2], strict=False):
        if status == "A":
            added.append(path)
        elif status == "D":
            deleted.append(path)
    return added, deleted


def _any_ignored(run: Runner, paths: list[str]) -> bool:
    listed = "".join(f"{path}\0" for path in paths).encode(errors="surrogateescape")
    done = run("check-ignore", "--no-index", "-z", "--stdin", stdin=listed, ok_codes=(0, 1))
    return done.returncode == 0


def _ignore_files(
    work_tree: Path, paths: list[str], settings: tuple[str, ...], private: Path
) -> dict[str, list[int] | None] | None:
    """The stat of every file whose rules decide whether `paths` are ignored: the
    `.gitignore` of each of their directories, the private `info/exclude` (a copy of the
    repository's), `core.excludesFile` and the user's default ignore file. None when one was
    changed too recently for its stat to tell a later change (git's "racily clean")."""
    files = {"" if "/" not in p else p.rsplit("/", 1)[0] for p in paths}
    for directory in list(files):
        while directory:
            directory = directory.rsplit("/", 1)[0] if "/" in directory else ""
            files.add(directory)
    named = [work_tree / d / ".gitignore" for d in sorted(files)]
    named.append(private / "info" / "exclude")  # rewritten only when the repository's changes
    named += [Path(v.partition("=")[2]) for v in settings if v.startswith("core.excludesFile=")]
    config_home = os.environ.get("XDG_CONFIG_HOME") or str(Path("~/.config").expanduser())
    named.append(Path(config_home) / "git" / "ignore")
    settled_before = time.time_ns() - RACY_WINDOW_NS
    stamps: dict[str, list[int] | None] = {}
    for path in named:
        try:
            st = path.stat()
        except OSError:
            stamps[str(path)] = None
            continue
        if max(st.st_mtime_ns, st.st_ctime_ns) >= settled_before:
            return None
        stamps[str(path)] = [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    return stamps


def _write_state(path: Path, state: dict[str, object]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    write_private(tmp, json.dumps(state).encode(errors="surrogateescape"))
    tmp.replace(path)


def fresh_tree(run: Runner, real: Path, git_dir: Path) -> str:
    """The fresh computation, through a throw-away copy of the repository's index."""
    with tempfile.TemporaryDirectory(prefix="agentcli-index-") as tmp:
        index = Path(tmp) / "index"
        if real.is_file():
            shutil.copy2(real, index)
            # A split index names its shared part, which git looks for beside the index.
            for shared in git_dir.glob("sharedindex.*"):
                (Path(tmp) / shared.name).symlink_to(shared)
        return _add_all(run, index)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with _THREAD_LOCK:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)
