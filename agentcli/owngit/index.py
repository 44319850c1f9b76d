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
the repository index's own tree, written when the kept index was seeded from it):
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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

from agentcli.owngit.command import GitError
from agentcli.private import write_private

STATE_VERSION = 1
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
                tree = _add_all(run, kept)
                if _agrees_with_fresh(run, str(state["base"]), tree, work_tree):
                    return tree
            except GitError:
                pass  # a corrupt or missing kept index, a pruned base tree: seed again
        state_path.unlink(missing_ok=True)
        return _seed(run, real, kept, state_path, expected)


def _keepable(real: Path, git_dir: Path) -> bool:
    if any(git_dir.glob("sharedindex.*")):
        return False
    try:
        with real.open("rb") as handle:
            header = handle.read(8)
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
        tmp = state_path.with_name(f".{state_path.name}.{os.getpid()}.tmp")
        write_private(tmp, json.dumps({**state, "base": base}).encode())
        tmp.replace(state_path)
    return tree


def _agrees_with_fresh(run: Runner, base: str, tree: str, work_tree: Path) -> bool:
    """Whether `tree`, written through the kept index, is what a fresh computation gives:
    none of the paths it adds to the repository index's tree (`base`) is ignored now, and
    every path of `base` it lacks is really gone from the work tree."""
    out = run("diff-tree", "-r", "-z", "--name-status", "--no-renames", base, tree).stdout.decode(
        errors="surrogateescape"
    )
    fields = out.split("\0")
    added: list[str] = []
    for status, path in zip(fields[0::2], fields[1::2], strict=False):
        if status == "A":
            added.append(path)
        elif status == "D" and os.path.lexists(work_tree / path):
            return False
    if not added:
        return True
    listed = "".join(f"{path}\0" for path in added).encode(errors="surrogateescape")
    ignored = run("check-ignore", "--no-index", "-z", "--stdin", stdin=listed, ok_codes=(0, 1))
    return ignored.returncode == 1


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
