"""Finding and ending the process group of a stdio MCP server.

The SDK starts each server in a session of its own and ends it when the connection closes, but
it does not say which process it started. The server's stderr is a file of agentcli's own, so
the server is the child process whose stderr is that file, and its process group is the one the
SDK made for it. Knowing it, agentcli stops the whole group at exit (a server that exits on its
own may leave children behind) and kills it on an immediate exit (`kill_live_groups`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import IO

from agentcli.tools.process_group import forget_group, group_alive, track_group

GRACE_S = 1.0
"""How long a group has after SIGTERM before SIGKILL."""


def find_group(errlog: IO[str]) -> int | None:
    """The process group of this process's child whose stderr is `errlog` (None: not found,
    e.g. without /proc)."""
    try:
        wanted = os.fstat(errlog.fileno())
    except (OSError, ValueError):
        return None
    for pid in _children():
        try:
            found = Path(f"/proc/{pid}/fd/2").stat()
        except OSError:
            continue
        if (found.st_dev, found.st_ino) == (wanted.st_dev, wanted.st_ino):
            with contextlib.suppress(OSError):
                pgid = os.getpgid(pid)
                track_group(pgid)
                return pgid
    return None


def _children() -> list[int]:
    pids: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path("/proc/self/task").iterdir():
            with contextlib.suppress(OSError, ValueError):
                pids.extend(int(p) for p in (task / "children").read_text().split())
    return pids


def signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def end_group(pgid: int) -> None:
    """SIGTERM the group, then SIGKILL what is left of it after a grace period."""
    signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_S
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.02)
    if group_alive(pgid):
        signal_group(pgid, signal.SIGKILL)
    forget_group(pgid)
