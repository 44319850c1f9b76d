"""Session locks: a session is used by one live agentcli process at a time.

A process that uses a session holds an exclusive `flock` on `<data home>/locks/<session id>.lock`
for as long as it does (`run` from opening the session until it exits; the REPL until `/clear`,
`/resume` to another session, or exit). Nobody waits for a lock: a second process is refused at
once with `SessionBusyError`, before it reads or writes anything of the session — above all
before crash recovery, which would take the other process's running calls for interrupted ones.

Why `flock`: the kernel drops it when the last descriptor of the open file closes, and a dying
process (kill -9 included) closes all of its descriptors. So a crash never leaves a stale lock,
and there is no pid to check for liveness. The holder writes its pid into the file only so a
refusal can say who holds it. The descriptor is close-on-exec (Python's default), so commands
the agent runs never inherit it, and a command that outlives a killed agentcli does not keep its
session locked.

Lock files are never deleted: unlinking one while another process has it open would let two
processes each lock a different file of the same name.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from pathlib import Path
from types import TracebackType

from agentcli.errors import ConfigError, SessionBusyError
from agentcli.paths import data_home
from agentcli.private import private_dir

LOCKS_DIR = "locks"
_SESSION_ID = re.compile(r"[A-Za-z0-9_-]+")
_ACQUIRED = object()
"""Only `SessionLock.acquire` has it: holding a SessionLock means the lock was taken."""


def lock_path(session_id: str, home: Path | None = None) -> Path:
    """Where the lock of `session_id` lives (`home`: the data home, default `data_home()`)."""
    if not _SESSION_ID.fullmatch(session_id):
        raise ValueError(f"not a session id: {session_id!r}")
    return (home or data_home()) / LOCKS_DIR / f"{session_id}.lock"


class SessionLock:
    """The exclusive lock of one session, held until `release()` or the end of the process."""

    __slots__ = ("_fd", "session_id")

    def __init__(self, session_id: str, fd: int, proof: object) -> None:
        if proof is not _ACQUIRED:
            raise TypeError("a SessionLock is made by SessionLock.acquire only")
        self.session_id = session_id
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, session_id: str, *, home: Path | None = None) -> SessionLock:
        """Take the lock of `session_id` now, or raise SessionBusyError if a live process holds
        it (ConfigError if the lock file cannot be made)."""
        path = lock_path(session_id, home)
        try:
            private_dir(path.parent)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise ConfigError(
                f"cannot lock session {session_id}: {exc.strerror or exc} ({path})",
                hint="AGENTCLI_HOME (or the user data directory) must be a writable directory",
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder_pid(fd)
            os.close(fd)
            raise SessionBusyError(session_id, holder) from None
        except OSError as exc:  # e.g. a file system without locks
            os.close(fd)
            raise ConfigError(f"cannot lock session {session_id}: {exc.strerror or exc}") from exc
        with contextlib.suppress(OSError):  # the pid is a courtesy to the refused; no pid is fine
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return cls(session_id, fd, _ACQUIRED)

    def holds(self, session_id: str) -> bool:
        """Whether this is the lock of `session_id` and it has not been released."""
        return self._fd is not None and self.session_id == session_id

    def release(self) -> None:
        """Let other processes use the session. Releasing twice is harmless."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):  # a departed holder's pid would mislead the next one
            os.ftruncate(fd, 0)
        os.close(fd)  # closing the descriptor drops the flock

    def __enter__(self) -> SessionLock:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()


def _holder_pid(fd: int) -> int | None:
    """The pid the holder wrote, if it has written it yet."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() and int(text) > 0 else None
