"""Running a bash command the way agentcli runs every command: in the workspace, stdin closed,
in its own process group, stdout and stderr interleaved, and on timeout or cancellation the
whole group killed (SIGTERM, then SIGKILL after a grace period) so nothing is left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from agentcli.tools.base import CommandSandbox

KILL_GRACE_S = 0.5
MAX_CAPTURE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessResult:
    exit_code: int | None
    """None when the command was killed for running past its timeout."""
    output: str
    duration_s: float
    timed_out: bool


def kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


async def _terminate(proc: asyncio.subprocess.Process) -> None:
    kill_group(proc.pid, signal.SIGTERM)
    try:
        await asyncio.wait_for(proc.wait(), KILL_GRACE_S)
    except TimeoutError:
        pass
    # The leader may be gone while children it spawned still hold the group: kill them too.
    kill_group(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        await proc.wait()


async def run_bash(
    command: str,
    *,
    cwd: Path,
    timeout_s: float,
    sandbox: CommandSandbox | None = None,
) -> ProcessResult:
    argv = ["bash", "-c", command]
    if sandbox is not None:
        argv = sandbox.wrap(argv, cwd=cwd)
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    chunks: list[bytes] = []
    size = 0

    async def read_all() -> None:
        nonlocal size
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(65536):
            if size < MAX_CAPTURE_BYTES:
                chunks.append(chunk)
            size += len(chunk)

    reader = asyncio.create_task(read_all())
    timed_out = False
    try:
        await asyncio.wait_for(proc.wait(), timeout_s)
    except TimeoutError:
        timed_out = True
        await _terminate(proc)
    except BaseException:
        await asyncio.shield(_terminate(proc))
        reader.cancel()
        raise
    # Background children left in the group would hold the pipe open: they go too.
    kill_group(proc.pid)
    try:
        await asyncio.wait_for(reader, 2.0)
    except TimeoutError:
        reader.cancel()
    output = b"".join(chunks).decode("utf-8", errors="replace")
    return ProcessResult(
        exit_code=None if timed_out else proc.returncode,
        output=output,
        duration_s=time.monotonic() - started,
        timed_out=timed_out,
    )
