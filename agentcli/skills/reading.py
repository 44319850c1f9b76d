"""Reading a skill or command file agentcli did not write: one small function, so that every
such read follows the same rules (and can move to a shared safe-read module in one place).

A file is read only when it is a regular file (not a FIFO, device or directory: opening one
never blocks), its real path lies inside one of the allowed roots (the workspace's project
directory, agentcli's config directory, the user's `~/.agents`, `~/.claude` and `~/.codex`),
it is at most 256 KB, and it is UTF-8 text. A symbolic link is followed only while it stays
inside those roots (installers link one skill into several tools' directories). Anything else
is `Unreadable`, with the reason in words, for a notice that names the file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

MAX_FILE_BYTES = 256 * 1024


class Unreadable(Exception):
    """The file is skipped; `reason` says why (in words for a notice)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def inside(path: str, roots: Sequence[str]) -> bool:
    """Whether the real path `path` is one of `roots` (real paths) or under one."""
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def real_roots(roots: Sequence[Path]) -> list[str]:
    """The roots as real paths (a root that is itself a link counts where it points)."""
    return [os.path.realpath(root) for root in roots]


def read_text(path: Path, roots: Sequence[str]) -> str:
    """The UTF-8 text of `path` (a leading byte-order mark dropped); Unreadable otherwise.

    `roots` are real paths (`real_roots`). The file is opened by its real path without
    following a final link, and what was opened is checked again through /proc (a directory
    swapped for a link between the check and the open is caught)."""
    real = os.path.realpath(path)
    if not inside(real, roots):
        raise Unreadable(f"it links to {real}, outside the workspace and your config directories")
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise Unreadable(exc.strerror or str(exc)) from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable("it is not a regular file")
        opened = _opened_path(fd)
        if opened is not None and not inside(opened, roots):
            raise Unreadable(f"it resolved to {opened} while it was opened")
        if info.st_size > MAX_FILE_BYTES:
            raise Unreadable(f"it is over {MAX_FILE_BYTES // 1024} KB ({info.st_size:,} bytes)")
        data = _read_at_most(fd, MAX_FILE_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:  # it grew after fstat
        raise Unreadable(f"it is over {MAX_FILE_BYTES // 1024} KB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(
            f"it is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from exc
    return text.removeprefix("\ufeff")


def _opened_path(fd: int) -> str | None:
    try:
        return str(Path(f"/proc/self/fd/{fd}").readlink())
    except OSError:  # no /proc: the realpath check above stands alone
        return None


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = os.read(fd, min(65536, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)
