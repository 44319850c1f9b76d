"""agentcli's own files are private: what it writes under its data directory or in temp (the
journal, spill files, logs, the REPL history, caches) holds whole conversations and file
contents, so directories it creates are 0700 and files 0600, whatever the umask.

The mode is set explicitly after creation (a umask can only take bits away, and a strange one,
say 0o277, would leave a file agentcli itself cannot write). A directory that already exists is
left as it is: it may be one the user chose (`AGENTCLI_HOME=~/work`), shared with other things.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path
from typing import BinaryIO

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """Create `path` and its missing parents, each 0700; what exists already is left alone.
    Raises OSError (e.g. NotADirectoryError when a parent is a file)."""
    missing = []
    for directory in (path, *path.parents):
        if directory.is_dir():
            break
        missing.append(directory)
    for directory in reversed(missing):
        try:
            directory.mkdir(DIR_MODE)
        except FileExistsError:
            if not directory.is_dir():
                raise NotADirectoryError(
                    errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(directory)
                ) from None
            continue  # made by another process meanwhile
        directory.chmod(DIR_MODE)
    return path


def open_private(path: Path, mode: str = "wb") -> BinaryIO:
    """Open `path` for writing (`wb` truncates, `ab` appends, `xb` must create it), creating
    its directory (0700) and the file (0600) as needed; a file of agentcli's own that is
    readable by others is made private too."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
    flags |= {"wb": os.O_TRUNC, "ab": os.O_APPEND, "xb": os.O_EXCL}[mode]
    private_dir(path.parent)
    fd = os.open(path, flags, FILE_MODE)
    try:
        make_private(fd)
        return os.fdopen(fd, "ab" if mode == "ab" else "wb")
    except BaseException:
        os.close(fd)
        raise


def write_private(path: Path, data: bytes) -> None:
    """Write `data` to `path` (replacing what it held), privately."""
    with open_private(path) as handle:
        handle.write(data)


def make_private(file: int | Path) -> None:
    """Take the group's and others' access away from a file (a descriptor or a path) agentcli
    owns; a file it does not own is left alone."""
    with contextlib.suppress(OSError):
        info = file.stat() if isinstance(file, Path) else os.fstat(file)
        if info.st_uid == os.geteuid() and (info.st_mode & 0o777) != FILE_MODE:
            if isinstance(file, Path):
                file.chmod(FILE_MODE)
            else:
                os.fchmod(file, FILE_MODE)
