"""Processes a test leaves behind: the machinery of the `_leaves_no_processes` fixture
(tests/conftest.py).

A command agentcli was told to stop but that kept running is the bug class this catches (issue
26: a cancel that skipped the group stop left `sleep 300` running; tests that leaked their own
`sleep 300` hid it). The test process is made a child subreaper (`PR_SET_CHILD_SUBREAPER`), so
a process whose parent died (a killed shell's background child, a double fork, `setsid`) is
re-parented to it instead of to init: everything any test started stays a descendant of the
test process. After each test, a descendant alive that was not there before it is that test's
leak. Zombies do not count: they are gone, only their exit status waits to be collected (and
the re-parented ones are never collected, on purpose: reaping them could take an exit status a
`Popen` or asyncio is waiting for).

Processes are told apart by pid *and* start time, so a pid the kernel reused is a new process.
Only `/proc` is read: no psutil. The helpers `multiprocessing` keeps for the life of the test
process (its resource tracker, its fork server) are not leaks: they are meant to stay, and
killing one makes the next test that uses `multiprocessing` warn.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
GRACE_S = 10.0
"""How long a test's processes get to finish after it, before they count as left behind. Only
a leak waits this long; a process that exits (a git a worker thread still runs, a group being
killed) ends the wait at once."""


@dataclass(frozen=True, slots=True, order=True)
class Proc:
    pid: int
    started: int
    """Start time in clock ticks after boot (`/proc/PID/stat` field 22)."""


def become_subreaper() -> bool:
    """Make this process the reaper of its descendants' orphans; False where the kernel
    refuses (then a leak that re-parented itself to init goes unseen)."""
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0


def _table() -> dict[int, tuple[int, int, bool]]:
    """pid → (parent pid, start time, alive) for every process (alive: not a zombie)."""
    table: dict[int, tuple[int, int, bool]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            table[int(entry.name)] = stat
    return table


def live_descendants(root: int | None = None, *, under: set[Proc] | None = None) -> set[Proc]:
    """The live processes below `root` (default: this process), at any depth; with `under`,
    only those with no process of `under` between them and `root` (the children a helper
    that outlives tests starts are that helper's, e.g. a module's Ray cluster's workers).

    Read from each process's `children` files (only the tree below `root`: ~0.1 ms, where a
    scan of every process in /proc took ~2 ms, twice for each of ~4,500 tests); from the
    whole table where the kernel has no `children` files."""
    root = os.getpid() if root is None else root
    children_of: Callable[[int], list[int]] = _children
    stat_of: Callable[[int], tuple[int, int, bool] | None] = _stat
    if not Path(f"/proc/{root}/task/{root}/children").exists():
        table = _table()
        by_parent: dict[int, list[int]] = {}
        for pid, (ppid, _started, _alive) in table.items():
            by_parent.setdefault(ppid, []).append(pid)
        children_of, stat_of = (lambda pid: by_parent.get(pid, [])), table.get
    helpers = {proc.pid for proc in under or set()}
    found: set[Proc] = set()
    pending = list(children_of(root))
    while pending:
        pid = pending.pop()
        stat = stat_of(pid)
        if stat is None:
            continue  # gone since its parent listed it
        _ppid, started, alive = stat
        if alive:
            found.add(Proc(pid, started))
        if under is not None and pid in helpers and Proc(pid, started) in under:
            continue  # what a helper started before or during the test is the helper's
        pending += children_of(pid)  # a zombie's children are re-parented: we list them
    return found


def _children(pid: int) -> list[int]:
    """The children of every thread of `pid` (a child belongs to the thread that forked it)."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.scandir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                with open(f"/proc/{pid}/task/{task.name}/children", "rb") as handle:
                    found += [int(child) for child in handle.read().split()]
    return found


def _stat(pid: int) -> tuple[int, int, bool] | None:
    """(parent pid, start time, alive) of `pid`, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    if len(fields) < 20:
        return None
    # fields[0] is field 3 (state), [1] field 4 (ppid), [19] field 22 (starttime).
    return int(fields[1]), int(fields[19]), fields[0] not in (b"Z", b"X")


def describe(proc: Proc) -> str:
    try:
        raw = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
    except OSError:
        return f"pid {proc.pid} (gone)"
    command = raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()
    return f"pid {proc.pid}: {command[:200]}"


def kept_pids() -> set[int]:
    """The pids of the process-wide helpers `multiprocessing` started, if it did."""
    pids: set[int] = set()
    tracker = sys.modules.get("multiprocessing.resource_tracker")
    if tracker is not None:
        pids.add(getattr(tracker._resource_tracker, "_pid", None) or 0)
    forkserver = sys.modules.get("multiprocessing.forkserver")
    if forkserver is not None:
        pids.add(getattr(forkserver._forkserver, "_forkserver_pid", None) or 0)
    return pids - {0}


def left_behind(before: set[Proc], grace_s: float = GRACE_S) -> list[Proc]:
    """Descendants alive now that were not in `before` (nor `multiprocessing`'s helpers),
    once they had `grace_s` to end."""
    deadline = time.monotonic() + grace_s
    while True:
        kept = kept_pids()
        new = sorted(p for p in live_descendants(under=before) - before if p.pid not in kept)
        if not new or time.monotonic() >= deadline:
            return new
        time.sleep(0.02)


def kill(procs: list[Proc]) -> None:
    """SIGKILL each of `procs` that is still that process (a reused pid is left alone)."""
    now = live_descendants()
    for proc in procs:
        if proc in now:
            with contextlib.suppress(OSError):
                os.kill(proc.pid, signal.SIGKILL)
