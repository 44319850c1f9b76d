"""A snapshot's memory does not grow with the size of the files lying in the workspace: a sparse
file (no disk used) of 256 MiB outside git, one of 128 MiB in git, and the peak RSS of a fresh
process that snapshots the workspace and takes a task's undo checkpoint of it grows by a small
fraction of that.

Before streaming, the file-tree hash read each file whole: a 1 GiB file pushed RSS up by
1 GiB. The test's file was 1 GiB with a bound of 64 MiB; 256 MiB with 16 MiB keeps the bound
at a sixteenth of the file, without hashing 1 GiB (~3 s). Peak RSS (`ru_maxrss`) is measured
in a child process, so nothing the test suite allocated counts; no timing is asserted."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import agentcli

MiB = 1024 * 1024
CHECKOUT = Path(agentcli.__file__).resolve().parents[1]

SNAPSHOT_AND_CHECKPOINT = """
import resource, sys
from pathlib import Path
from agentcli.call_records import FileWrite, PreState
from agentcli.checkpoints import Checkpointer
from agentcli.ids import new_id
from agentcli.owngit import decide
from agentcli.snapshots import take_snapshot
from agentcli.store.db import connect
from agentcli.store.sqlite import SqliteJournal

workspace = Path(sys.argv[1])
decision = decide(workspace)
journal = SqliteJournal.create(new_id(), workspace=workspace, model="m")
task = new_id()
journal.task_started(task, "p")
checkpoints = Checkpointer(connect(), decision)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = take_snapshot(workspace, decision.repo)
checkpoints.before_change(
    task,
    PreState(write=FileWrite(path=str(workspace / "small.txt"), pre_hash=None, post_hash="x")),
)
(workspace / "small.txt").write_text("changed")
checkpoints.task_ended(task)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
ended = checkpoints.conn.execute("SELECT ended_at, error FROM checkpoints").fetchone()
assert ended[0] is not None and ended[1] is None, tuple(ended)
print(start.version.partition(":")[0], (after - before) * 1024)
"""


def peak_growth(workspace: Path) -> tuple[str, int]:
    """(snapshot kind, peak RSS growth in bytes) of snapshotting and checkpointing `workspace`."""
    env = {**os.environ, "PYTHONPATH": str(CHECKOUT)}
    done = subprocess.run(
        [sys.executable, "-c", SNAPSHOT_AND_CHECKPOINT, str(workspace)],
        capture_output=True,
        text=True,
        env=env,
        timeout=110,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    kind, growth = done.stdout.split()
    return kind, int(growth)


def sparse_file(path: Path, size: int) -> None:
    with path.open("wb") as handle:
        handle.truncate(size)


def test_a_file_tree_snapshot_hashes_a_large_file_in_bounded_memory(workspace: Path) -> None:
    sparse_file(workspace / "big.bin", 256 * MiB)
    (workspace / "small.txt").write_text("small")
    kind, growth = peak_growth(workspace)
    assert kind == "files"
    assert growth < 16 * MiB, f"peak RSS grew by {growth // MiB} MiB for a 256 MiB file"


@pytest.mark.skipif(subprocess.run(["git", "--version"], check=False).returncode, reason="git")
def test_a_git_snapshot_leaves_large_files_to_git(workspace: Path) -> None:
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "PATH": os.environ["PATH"]}
    subprocess.run(["git", "init", "-q", str(workspace)], check=True, env=env)
    sparse_file(workspace / "big.bin", 128 * MiB)
    (workspace / "small.txt").write_text("small")
    kind, growth = peak_growth(workspace)
    assert kind == "git"
    assert growth < 32 * MiB, f"peak RSS grew by {growth // MiB} MiB for a 128 MiB file"
