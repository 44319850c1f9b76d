"""Issue 26, class 7: a cancel that lands while a command is being started leaves its process
group running.

Esc or Ctrl-C is a cancel of the task that runs the command. `run_in_group` starts the
command, then registers its group and sets up the pipe it reads; each of those steps awaits, and
a cancel can land at any of them. Landing inside asyncio's own start (the process exists, its
pipes are being connected), asyncio kills the command's first process only: the rest of the
group (a `sleep &`, the foreground child) ran on. Landing while the output pipe was connected,
nothing was stopped at all. For an unconfined command (yolo, or approved to run outside) that
is a process the user believes stopped.

Each case here lets the start run a number of event-loop steps, then, if the command's process
exists by then, waits (without letting the event loop run, so the start stays where it is) until
its background child exists too, and cancels there: a cancel at every point the start can be
at, before the process exists included. Afterwards no process of the command may be left.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import time
from pathlib import Path

import pytest

from agentcli.tools.output import HeadTailCollector
from agentcli.tools.process_group import run_in_group
from tests.adversarial.lab import proc_cmdlines

STEPS_BEFORE_CANCEL = range(12)
"""Event-loop steps the start may take before the cancel lands (the first ones spawn the
process, the later ones reach the pipe set-up and the supervision)."""


def _holders(needle: bytes) -> list[int]:
    found = []
    for pid, raw in proc_cmdlines():
        if needle not in raw:
            continue
        with contextlib.suppress(OSError):
            stat = Path(f"/proc/{pid}/stat").read_text()
            if stat[stat.rfind(")") + 2] not in "ZX":
                found.append(pid)
    return found


def _wait_blocking(path: Path, limit_s: float = 60.0) -> bool:
    """Until `path` exists, without letting the event loop run (so the task being started
    stays at the await point it reached). The limit only bounds a hang."""
    deadline = time.monotonic() + limit_s
    while not path.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


@pytest.mark.parametrize("steps", STEPS_BEFORE_CANCEL)
async def test_a_cancel_at_any_point_of_the_start_stops_the_whole_group(
    tmp_path: Path, steps: int
) -> None:
    token = f"{secrets.randbelow(10**6):06d}"
    sleep = f"300.{token}"
    started = tmp_path / "started"
    command = f"sleep {sleep} & echo $! > {started}.tmp && mv {started}.tmp {started}; wait"
    collector = HeadTailCollector(4000, tmp_path / "spill.txt")
    task = asyncio.create_task(
        run_in_group(["bash", "-c", command], cwd=tmp_path, timeout_s=600, collector=collector)
    )
    for _ in range(steps + 1):  # the first step starts the task: it spawns the process
        await asyncio.sleep(0)
    try:
        if task.done():  # cannot happen: the command runs for 300 s
            pytest.fail(f"the command ended after {steps} steps: {task.result()}")
        if _holders(sleep.encode()):  # spawned: the cancel lands once its child runs too
            assert _wait_blocking(started), "the command never started its background child"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        left = _holders(sleep.encode())
        deadline = time.monotonic() + 5  # a SIGKILLed process is gone at once; load aside
        while left and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
            left = _holders(sleep.encode())
    finally:
        survivors = _holders(sleep.encode())
        for pid in survivors:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    assert not left, (
        f"a cancel {steps} event-loop steps into the start left the command's processes "
        f"running: {left}"
    )
