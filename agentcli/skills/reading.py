"""Reading a skill or command file agentcli did not write, through `agentcli.safe_read`.

A file is read only when it is a regular file (not a FIFO, device or directory: opening one
never blocks), its real path lies inside one of the allowed roots (the workspace's project
directory, agentcli's config directory, the user's `~/.agents`, `~/.claude` and `~/.codex`),
it is at most 256 KB, and it is UTF-8 text. A symbolic link is followed only while it stays
inside those roots (installers link one skill into several tools' directories). Anything else
is `Unreadable`, with the reason in words, for a notice that names the file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from agentcli.safe_read import Inside, Reason, read_bytes
from agentcli.safe_read import Unreadable as SafeUnreadable

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

    `roots` are real paths (`real_roots`). Read as agentcli reads every file it did not write
    (`agentcli.safe_read`): a regular file, its real path inside one of `roots`, opened from
    there down without following a link swapped in, and bounded."""
    where = Inside(tuple(Path(root) for root in roots), "the workspace and your config directories")
    try:
        data = read_bytes(path, inside=where, limit=MAX_FILE_BYTES)
    except SafeUnreadable as exc:
        if exc.reason is Reason.TOO_LARGE:
            raise Unreadable(f"it is over {MAX_FILE_BYTES // 1024} KB") from exc
        raise Unreadable(exc.why) from exc
    except OSError as exc:
        raise Unreadable(exc.strerror or str(exc)) from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(
            f"it is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from exc
    return text.removeprefix("\ufeff")
