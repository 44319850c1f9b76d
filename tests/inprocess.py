"""`agentcli ARGS` run inside the test process, as the binary would run it.

Starting the real binary costs ~2 s of CPU (the SDK's import) per run, so the suite tests
behaviour (options, model switches, names, results) in-process and keeps a few real-binary
tests for what only a process shows (exit status, signals, the file descriptors, start-up).

A run here gets what a fresh process would have: its own environment, working directory,
stdin (a pipe, never a terminal) and stdout/stderr (UTF-8, captured as bytes), and the same
entry point `python -m agentcli` calls. Whatever a run changes in the process is put back
after it (signal handlers, the garbage collector, the environment, the cwd, the standard
streams); what it must not change at all (the umask, logging, running threads and command
groups, asyncio's policy) fails the test that changed it. What a process keeps until it exits
(`run` holds its session's lock and journal connection to the end) is let go of as the exit
would: the session locks released, the SQLite connections closed.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import dataclasses
import gc
import io
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from unittest import mock

from agentcli.dataclass_code import CodeCache
from agentcli.store.lock import SessionLock
from agentcli.tools import process_group
from agentcli.ui.entry import main

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE, signal.SIGCHLD)
"""Handlers a run may install (`run` sets SIGINT/SIGTERM to exit at once after a task)."""


class _Stream(io.TextIOWrapper):
    """A standard stream as a process has it when redirected to a pipe: text over bytes, never
    a terminal."""

    def __init__(self, data: bytes = b"", *, errors: str = "strict") -> None:
        super().__init__(io.BytesIO(data), encoding="utf-8", errors=errors)

    def captured(self) -> bytes:
        self.flush()
        raw = self.buffer
        assert isinstance(raw, io.BytesIO)
        return raw.getvalue()


def _state_that_must_not_change() -> dict[str, object]:
    root = logging.getLogger()
    umask = os.umask(0o022)
    os.umask(umask)
    return {
        "umask": umask,
        "root logger": (root.level, list(root.handlers)),
        "asyncio policy": asyncio.get_event_loop_policy(),
        "live command groups": set(process_group._LIVE_GROUPS),
        "signal wakeup fd": _wakeup_fd(),
    }


def _wakeup_fd() -> int:
    fd = signal.set_wakeup_fd(-1)  # reading it means setting it: put it back at once
    signal.set_wakeup_fd(fd)
    return fd


@contextlib.contextmanager
def _dropped_at_exit() -> Iterator[None]:
    """Session locks taken and SQLite connections opened in the block, released and closed
    after it, as the kernel and the interpreter do when a process exits."""
    locks: list[SessionLock] = []
    connections: list[sqlite3.Connection] = []
    acquire, connect = SessionLock.acquire, sqlite3.connect

    def acquire_kept(session_id: str, *, home: Path | None = None) -> SessionLock:
        lock = acquire(session_id, home=home)
        locks.append(lock)
        return lock

    def connect_kept(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn: sqlite3.Connection = connect(*args, **kwargs)
        connections.append(conn)
        return conn

    try:
        with (
            mock.patch.object(SessionLock, "acquire", staticmethod(acquire_kept)),
            mock.patch.object(sqlite3, "connect", connect_kept),
        ):
            yield
    finally:
        for lock in locks:
            lock.release()
        for conn in connections:
            conn.close()


def _threads_left(before: set[threading.Thread]) -> list[threading.Thread]:
    """Non-daemon threads the run started and left running (a thread pool not shut down):
    they would keep a real process from exiting. Daemon threads (the fake server's handlers)
    end with their connection."""
    left = [t for t in threading.enumerate() if t not in before and not t.daemon]
    for thread in left:
        thread.join(timeout=5)
    return [t for t in left if t.is_alive()]


@contextlib.contextmanager
def process_state(
    cwd: Path, env: Mapping[str, str | None], stdin: bytes
) -> Iterator[tuple[_Stream, _Stream]]:
    """The process-wide state of one run: set up as a new process would have it, restored (or
    checked unchanged) afterwards. Yields the run's (stdout, stderr)."""
    saved_environ = dict(os.environ)
    saved_cwd = Path.cwd()
    saved_streams = (sys.stdin, sys.stdout, sys.stderr)
    saved_handlers = {sig: signal.getsignal(sig) for sig in SIGNALS}
    gc_enabled, frozen = gc.isenabled(), gc.get_freeze_count()
    threads = set(threading.enumerate())
    unchanged = _state_that_must_not_change()
    saved_exec = dataclasses.__dict__.get("exec")  # `main` installs the dataclass cache
    # Python's own choice for a process in this locale: stdout's errors (surrogateescape
    # in a UTF-8 or C locale, else strict), backslashreplace on stderr.
    out = _Stream(errors=getattr(sys.__stdout__, "errors", None) or "strict")
    err = _Stream(errors="backslashreplace")
    try:
        for name, value in env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if "COLUMNS" not in os.environ and any(os.isatty(fd) for fd in (0, 1, 2)):
            # rich sizes its output from fds 0-2: a binary with all three redirected gets 80.
            os.environ["COLUMNS"] = "80"
        os.chdir(cwd)
        sys.stdin, sys.stdout, sys.stderr = _Stream(stdin), out, err
        yield out, err
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_environ)
        for sig, handler in saved_handlers.items():
            signal.signal(sig, handler)
        if frozen == 0 and gc.get_freeze_count():  # `run` freezes what start-up built
            gc.unfreeze()
        (gc.enable if gc_enabled else gc.disable)()
        _restore_dataclasses_exec(saved_exec)
        left = _threads_left(threads)
        changed = {
            what: (before, after)
            for (what, before), after in zip(
                unchanged.items(), _state_that_must_not_change().values(), strict=True
            )
            if before != after
        }
    assert not left, f"the run left threads running: {left}"
    assert not changed, f"the run changed process state: {changed}"


def _restore_dataclasses_exec(saved: object) -> None:
    """Take back the dataclass cache a run installed (and its save at exit, which would write
    into this checkout's byte-code when the test process ends)."""
    installed = dataclasses.__dict__.get("exec")
    if installed is saved:
        return
    cache = getattr(installed, "__self__", None)
    if isinstance(cache, CodeCache):
        atexit.unregister(cache.save)
    if saved is None:
        del dataclasses.exec  # type: ignore[attr-defined]
    else:
        dataclasses.exec = saved  # type: ignore[attr-defined]


def run_in_process(
    *args: str,
    cwd: Path,
    env: Mapping[str, str | None] | None = None,
    stdin: bytes | str = b"",
) -> subprocess.CompletedProcess[bytes]:
    """`python -m agentcli ARGS` in `cwd`, with `env` over the current environment (None
    removes a variable) and `stdin` piped in; its exit code, stdout and stderr as bytes."""
    if (env or {}).get("AGENTCLI_FAULT", os.environ.get("AGENTCLI_FAULT")):
        raise ValueError("AGENTCLI_FAULT kills the process it is set in: run the binary")
    data = stdin.encode() if isinstance(stdin, str) else stdin
    with process_state(cwd, env or {}, data) as (out, err), _dropped_at_exit():
        code = main(list(args))
    return subprocess.CompletedProcess(["agentcli", *args], code, out.captured(), err.captured())


def decoded(done: subprocess.CompletedProcess[bytes]) -> subprocess.CompletedProcess[str]:
    """The run's output as text: stdout and stderr must be UTF-8."""
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode("utf-8"), done.stderr.decode("utf-8")
    )
