"""Running one command in its own process group, and making sure the whole group is gone after.

The command gets stdin closed, stdout and stderr interleaved into one pipe, and a new session
(so its process group is its own and it has no controlling terminal to prompt on). Its output
streams into a bounded `HeadTailCollector`. On timeout or cancellation the group gets SIGTERM,
then SIGKILL after a short grace. Background processes the command leaves behind when it exits
are stopped the same way, so no call leaves orphans running.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentcli.environment import without_own_credentials
from agentcli.tools.output import CollectedOutput, HeadTailCollector

KILL_GRACE_S = 0.5
"""How long a group gets to exit after SIGTERM before SIGKILL."""
EOF_WAIT_S = 2.0
"""How long to wait for the pipe to close once the group is dead (a process that escaped the
group with its own setsid may still hold it)."""
_POLL_S = 0.02


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandResult:
    exit_code: int | None
    """None when the command was stopped for running past its timeout."""
    output: CollectedOutput
    duration_s: float
    timed_out: bool
    stopped_leftovers: bool
    """Background processes were still running when the command exited and were stopped."""
    output_held: bool = False
    """Once the command and its group were gone, something outside the group (a process that
    started its own session) still held the output open: it was not stopped, and whatever it
    writes from now on is not read."""
    errors: CollectedOutput | None = None
    """Its stderr, when it was asked for apart from its stdout."""


_LIVE_GROUPS: set[int] = set()
"""Process groups started by `run_in_group` that may still have members."""


def kill_live_groups() -> None:
    """SIGKILL every command group still running: for an immediate exit (a second Ctrl-C),
    which skips the graceful stop that cancellation would have done."""
    for pgid in list(_LIVE_GROUPS):
        _signal_group(pgid, signal.SIGKILL)


def track_group(pgid: int) -> None:
    """Count a process group started elsewhere (an MCP server's) among those `kill_live_groups`
    kills."""
    _LIVE_GROUPS.add(pgid)


def forget_group(pgid: int) -> None:
    _LIVE_GROUPS.discard(pgid)


def group_alive(pgid: int) -> bool:
    """Whether any live (non-zombie) process is in the process group."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            return True
    return False


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def stop_group(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM the command's process group, SIGKILL it after KILL_GRACE_S."""
    pgid = proc.pid
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + KILL_GRACE_S
    try:
        # Polling: the group's members are other processes, no event tells when they are gone.
        while time.monotonic() < deadline and group_alive(pgid):  # noqa: ASYNC110
            await asyncio.sleep(_POLL_S)
    finally:
        # Also on a second cancellation: never leave the group running.
        _signal_group(pgid, signal.SIGKILL)
    with contextlib.suppress(TimeoutError):
        await _leader_exit(proc, None, EOF_WAIT_S)
    # SIGKILL is delivered asynchronously; on a loaded machine a member can still be running
    # for a moment. Return only once the whole group is really gone (bounded).
    deadline = time.monotonic() + EOF_WAIT_S
    while group_alive(pgid) and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(_POLL_S)


async def _leader_exit(
    proc: asyncio.subprocess.Process, reader: asyncio.Future[Any] | None, limit_s: float
) -> None:
    """Wait until the command's own process has exited; TimeoutError after `limit_s` seconds.

    Not `proc.wait()`: in Python 3.11 that also waits until the output pipe closes, which a
    background child holding the pipe delays until the timeout. `returncode` is set as soon as
    the leader exits, so it is polled while the pipe is still open.
    """
    deadline = time.monotonic() + limit_s
    while proc.returncode is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        if reader is not None and reader.done():
            # The pipe is closed, so wait() is exact again.
            await asyncio.wait_for(proc.wait(), remaining)
            return
        if reader is None:
            await asyncio.sleep(min(_POLL_S, remaining))
        else:
            await asyncio.wait([reader], timeout=min(_POLL_S * 2.5, remaining))


async def run_in_group(
    argv: Sequence[str],
    *,
    cwd: Path,
    timeout_s: float,
    collector: HeadTailCollector,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    stderr: HeadTailCollector | None = None,
) -> CommandResult:
    """Run `argv` (with `env`, default: ours without agentcli's own credentials). `stdin`: what
    it reads (default: nothing, stdin closed); `stderr`: where its stderr goes when it must be
    kept apart from its stdout (default: interleaved into `collector`). A cancel stops the
    whole group wherever it lands, the start included (`_started`)."""
    started = time.monotonic()
    # Our own pipes, not asyncio's: a process that escaped the group (its own setsid) can hold
    # the write end for as long as it likes, and only a read end we own can be closed while
    # the event loop still runs (asyncio's would be closed at exit, after the loop).
    pipes = [os.pipe2(os.O_CLOEXEC) for _ in range(1 if stderr is None else 2)]
    try:
        proc = await _started(argv, cwd, env, [write_fd for _, write_fd in pipes], stdin)
    except BaseException:
        for read_fd, _ in pipes:
            os.close(read_fd)
        raise
    feeding = asyncio.create_task(_feed(proc, stdin)) if stdin is not None else None
    streams = [(pipes[0][0], collector), *([(pipes[1][0], stderr)] if stderr else [])]
    try:
        return await _supervise(proc, streams, timeout_s, started)
    except BaseException:
        # Wherever the cancel (or an error) landed, the pipe set-up included: never leave the
        # group running. Stopping a group that is gone already costs nothing.
        await asyncio.shield(stop_group(proc))
        raise
    finally:
        _LIVE_GROUPS.discard(proc.pid)
        if feeding is not None:
            feeding.cancel()
            await asyncio.wait([feeding])


async def _feed(proc: asyncio.subprocess.Process, data: bytes) -> None:
    """Write `data` to the command's stdin and close it (a command that does not read it all
    is no error)."""
    if proc.stdin is None:
        return
    try:
        proc.stdin.write(data)
        await proc.stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        proc.stdin.close()


async def _started(
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str] | None,
    write_fds: Sequence[int],
    stdin: bytes | None,
) -> asyncio.subprocess.Process:
    """The command, started in a session (and so a process group) of its own and registered
    in `_LIVE_GROUPS`. The start is not interrupted: a cancel that lands while asyncio starts
    the process (it exists then, its pipes are being connected) would make asyncio kill its
    first process only, leaving what that one had started. So the start runs to its end, and
    a cancel meanwhile stops the whole group once it is known, then goes on."""
    spawn = asyncio.ensure_future(_spawn(argv, cwd, env, write_fds, stdin))
    cancelled = False
    while not spawn.done():
        try:
            await asyncio.wait([spawn])
        except asyncio.CancelledError:
            cancelled = True
    proc = spawn.result()  # a failed start raises here, with nothing running
    _LIVE_GROUPS.add(proc.pid)
    if cancelled:
        try:
            await asyncio.shield(stop_group(proc))
        finally:
            _LIVE_GROUPS.discard(proc.pid)
        raise asyncio.CancelledError
    return proc


async def _spawn(
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str] | None,
    write_fds: Sequence[int],
    stdin: bytes | None,
) -> asyncio.subprocess.Process:
    """Start the process with stdout (and stderr, given its own pipe) on `write_fds`, which
    are closed here whatever happens (the child has its copies, or there is no child)."""
    try:
        return await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=dict(env) if env is not None else without_own_credentials(os.environ),
            stdin=asyncio.subprocess.DEVNULL if stdin is None else asyncio.subprocess.PIPE,
            stdout=write_fds[0],
            stderr=asyncio.subprocess.STDOUT if len(write_fds) == 1 else write_fds[1],
            start_new_session=True,
        )
    finally:
        for write_fd in write_fds:
            os.close(write_fd)


async def _supervise(
    proc: asyncio.subprocess.Process,
    streams: Sequence[tuple[int, HeadTailCollector]],
    timeout_s: float,
    started: float,
) -> CommandResult:
    loop = asyncio.get_running_loop()
    transports: list[asyncio.ReadTransport] = []
    readers: list[asyncio.StreamReader] = []
    try:
        for read_fd, _ in streams:
            pipe = os.fdopen(read_fd, "rb", buffering=0)
            stream = asyncio.StreamReader()
            try:
                transport, _ = await loop.connect_read_pipe(
                    functools.partial(asyncio.StreamReaderProtocol, stream), pipe
                )
            except BaseException:
                pipe.close()
                raise
            transports.append(transport)
            readers.append(stream)
        collectors = [collector for _, collector in streams]
        return await _collect(proc, readers, collectors, timeout_s, started)
    finally:
        # Closed here, while the loop runs, even when someone outside the group still holds
        # the other end.
        for transport in transports:
            transport.close()
        for read_fd, _ in streams[len(transports) :]:
            with contextlib.suppress(OSError):
                os.close(read_fd)


async def _collect(
    proc: asyncio.subprocess.Process,
    streams: Sequence[asyncio.StreamReader],
    collectors: Sequence[HeadTailCollector],
    timeout_s: float,
    started: float,
) -> CommandResult:
    pumps = [
        asyncio.create_task(_pump(stream, collector))
        for stream, collector in zip(streams, collectors, strict=True)
    ]
    reader: asyncio.Future[Any] = pumps[0] if len(pumps) == 1 else asyncio.gather(*pumps)
    timed_out = stopped_leftovers = False
    try:
        try:
            await _leader_exit(proc, reader, timeout_s)
        except TimeoutError:
            timed_out = True
            await stop_group(proc)
        else:
            if group_alive(proc.pid):
                stopped_leftovers = True
                await stop_group(proc)
        await asyncio.wait([reader], timeout=EOF_WAIT_S)
    except BaseException:
        for pump in pumps:
            pump.cancel()
        await asyncio.shield(stop_group(proc))
        raise
    output_held = not reader.done()
    if output_held:
        for pump in pumps:
            pump.cancel()
        # asyncio.wait, unlike awaiting the task, never mistakes the reader's cancellation
        # for our own.
        await asyncio.wait([reader, *pumps])
    return CommandResult(
        exit_code=None if timed_out else proc.returncode,
        output=collectors[0].finish(),
        duration_s=time.monotonic() - started,
        timed_out=timed_out,
        stopped_leftovers=stopped_leftovers,
        output_held=output_held,
        errors=collectors[1].finish() if len(collectors) > 1 else None,
    )


async def _pump(stream: asyncio.StreamReader, collector: HeadTailCollector) -> None:
    while chunk := await stream.read(1 << 16):
        collector.feed(chunk)
