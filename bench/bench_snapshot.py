"""Artifact-version snapshot of a git workspace, next to what git alone needs for the same tree.

A repository of REPO_FILES committed files (~4 kB each), a few of them modified and a few untracked:
- `take_snapshot`: what agentcli pays at the start and end of every task, and per check;
- `find_repo`: deciding, once per session, that the workspace is a repository (reads its
  config as data, prepares agentcli's private git dir);
- the floor: `git add --all` + `git write-tree` into a copy of the repository's index, run
  directly (git's stat cache: unchanged files are not read);
- without the stat cache: the same into an empty index (every file read and hashed), which is
  what a snapshot would cost if it lost the cache;
- after a task changed TASK_FILES tracked files and created as many: `take_snapshot` through
  the index agentcli keeps (`owngit.index`: only what changed since the previous snapshot is
  read) against the fresh computation it replaced (a copy of the repository's index, through
  which every file that differs from the user's last `git add` is read again, every time).

The exit tail (answer -> process exit) of whole `agentcli run`s is `bench_exit`.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bench import sized

if TYPE_CHECKING:
    from agentcli.owngit import OwnRepo

REPO_FILES = sized(2000, 200)
CHANGED = 10
REPEAT = sized(15, 2)
TASK_FILES = sized(300, 20)  # (at most REPO_FILES: a task edits that many of them)


def _git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> None:
    subprocess.run(
        ["git", "-c", "user.email=bench@example.com", "-c", "user.name=bench", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        env=env,
    )


def _repository(root: Path) -> Path:
    for n in range(REPO_FILES):
        package = root / f"pkg{n // 100}"
        package.mkdir(parents=True, exist_ok=True)
        (package / f"m{n}.py").write_text(f"def f{n}():\n    return {n}\n" * 200)
    # Files older than the index, as in a repository someone works in: files written in the
    # second the index is written are "racily clean", and git re-reads them every time.
    past = time.time() - 60
    for path in root.rglob("*.py"):
        os.utime(path, (past, past))
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "init")
    for n in range(CHANGED):
        (root / "pkg0" / f"m{n}.py").write_text(f"changed = {n}\n")
        (root / f"new{n}.txt").write_text(f"untracked {n}\n")
    return root


def _plain_git_tree(root: Path, keep_index: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-index-") as tmp:
        index = Path(tmp) / "index"
        if keep_index:
            shutil.copy2(root / ".git" / "index", index)
        env = {**os.environ, "GIT_INDEX_FILE": str(index)}
        _git(root, "add", "--all", "--", ":/", env=env)
        _git(root, "write-tree", env=env)


def _median_ms(action: Callable[[], object]) -> float:
    action()  # warm: the first run may set things up (and fills the OS caches)
    samples = []
    for _ in range(REPEAT):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1e3


def run() -> list[tuple[str, str]]:
    home = Path(tempfile.mkdtemp(prefix="agentcli-bench-snapshot-"))
    saved = os.environ.get("AGENTCLI_HOME")
    os.environ["AGENTCLI_HOME"] = str(home / "data")
    try:
        return _measure(_repository(home / "repo"))
    finally:
        if saved is None:
            os.environ.pop("AGENTCLI_HOME", None)
        else:
            os.environ["AGENTCLI_HOME"] = saved
        shutil.rmtree(home, ignore_errors=True)


def _measure(root: Path) -> list[tuple[str, str]]:
    from agentcli.owngit import find_repo
    from agentcli.snapshots import take_snapshot

    repo = find_repo(root)  # once, as a session decides at its start
    assert repo is not None
    assert take_snapshot(root, repo).version.startswith("git:")
    ours = _median_ms(lambda: take_snapshot(root, repo))
    decision = _median_ms(lambda: find_repo(root))
    floor = _median_ms(lambda: _plain_git_tree(root, keep_index=True))
    uncached = _median_ms(lambda: _plain_git_tree(root, keep_index=False))
    label = f"git repo of {REPO_FILES} files ({CHANGED} modified, {CHANGED} untracked)"
    kept, fresh = _after_a_task(root, repo)
    return [
        (f"take_snapshot, {label}", f"median {ours:.1f} ms ({ours / floor:.2f}x plain git)"),
        ("find_repo (once per session: the git decision)", f"median {decision:.1f} ms"),
        ("plain git add --all + write-tree, copied index", f"median {floor:.1f} ms"),
        ("the same into an empty index (no stat cache)", f"median {uncached:.1f} ms"),
        (
            f"take_snapshot after a task changed {TASK_FILES} + created {TASK_FILES} files",
            f"median {kept:.1f} ms ({kept / fresh:.2f}x a fresh copy of the index: {fresh:.1f} ms)",
        ),
    ]


def _after_a_task(root: Path, repo: OwnRepo) -> tuple[float, float]:
    """(kept index, fresh copy of the repository's index), median ms, side by side."""
    from agentcli.owngit.index import fresh_tree
    from agentcli.snapshots import take_snapshot

    for n in range(TASK_FILES):
        (root / f"pkg{n // 100}" / f"m{n}.py").write_text(f"edited = {n}\n" * 300)
        (root / f"pkg{n // 100}" / f"generated{n}.py").write_text(f"new = {n}\n" * 300)
    past = time.time() - 10  # settled, not "racily clean"
    for path in root.rglob("*.py"):
        os.utime(path, (past, past))
    git_dir = root / ".git"
    kept = take_snapshot(root, repo).version
    assert kept == f"git:{fresh_tree(repo.run, git_dir / 'index', git_dir)}"
    return (
        _median_ms(lambda: take_snapshot(root, repo)),
        _median_ms(lambda: fresh_tree(repo.run, git_dir / "index", git_dir)),
    )


if __name__ == "__main__":
    for name, value in run():
        print(f"{name:60} {value}")
