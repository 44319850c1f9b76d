"""The one way agentcli writes, or removes, a file in the workspace: the write tools, undo and
checkpoint restore alike (issue 26).

Every write goes through a pinned parent: the file's directory is opened by walking down from
its root one component at a time with `O_NOFOLLOW` (creating what is missing), so a link in the
way, swapped in after the path was checked or left there by a command, is refused, never
followed, and nothing is written or created outside the root. Undo restoring a checkpoint may
instead replace such a link by the directory it was at the checkpoint (`replace_links`: a file
the checkpoint held was in a directory). The file itself is replaced atomically: a temp file in
the pinned directory, written and synced, then renamed over the name (a crash leaves the old or
the new content, never half; a link or a pipe at the name is replaced, never written through).

A refusal is an `Unwritable` (an `OSError`) saying what was in the way; any other `OSError` is
the file system's own (read-only, full, permissions).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

from agentcli.safe_read import kind_name


class Unwritable(OSError):
    """A write or removal refused because of what is in the way; `why` says what."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(errno.EPERM, why, str(path))
        self.path = path
        self.why = why

    def __str__(self) -> str:
        return f"{self.path}: {self.why}"


def root_of(path: Path, roots: Iterable[Path]) -> Path:
    """The innermost of `roots` that holds `path` (all real paths); Unwritable if none does."""
    inside = [r for r in roots if r == path.parent or r in path.parent.parents]
    if not inside:
        raise Unwritable(path, "outside the workspace")
    return max(inside, key=lambda r: len(r.parts))


@contextlib.contextmanager
def pinned_parent(
    path: Path, roots: Iterable[Path], *, create: bool = True, replace_links: bool = False
) -> Iterator[int]:
    """A descriptor of `path`'s directory, opened from its root down with O_NOFOLLOW (see the
    module docstring). With `create`, missing directories are made; without, a missing one is
    FileNotFoundError. With `replace_links`, a link in the way is removed and a directory made
    in its place."""
    fds = _walk(path, root_of(path, roots), create=create, replace_links=replace_links)
    try:
        yield fds[-1]
    finally:
        for fd in fds:
            os.close(fd)


def _walk(path: Path, root: Path, *, create: bool, replace_links: bool) -> list[int]:
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
    fds = [os.open(root, flags)]
    walked = root
    try:
        for part in path.parent.relative_to(root).parts:
            walked = walked / part
            fd = fds[-1]
            if replace_links and _kind(part, fd) == "a link":
                os.unlink(part, dir_fd=fd)  # the link goes, not what it points to
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
            try:
                fds.append(os.open(part, flags | os.O_NOFOLLOW, dir_fd=fd))
            except OSError as exc:
                kind = _kind(part, fd)
                if kind == "a link":
                    raise Unwritable(walked, "a link, which is never followed") from exc
                if kind is not None and exc.errno == errno.ENOTDIR:
                    raise Unwritable(walked, f"{kind}, not a directory") from exc
                raise
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return fds


def replace_file(
    dir_fd: int, name: str, data: bytes, *, mode: int | None = None, keep_special: bool = True
) -> None:
    """Put `data` at `name` in the pinned directory, atomically. The mode is `mode`, else the
    replaced file's, else the default for a new file. With `keep_special` (the write tools), a
    link, a pipe or anything but a regular file at `name` is refused (Unwritable) and a
    read-only file is not replaced; undo replaces whatever is there (restoring the checkpoint)."""
    try:
        existing = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        existing = None
    if existing is not None and stat.S_ISDIR(existing.st_mode):
        raise Unwritable(Path(name), "a directory")
    if keep_special and existing is not None:
        kind = kind_name(existing.st_mode)
        if kind is not None:
            raise Unwritable(Path(name), kind)
        _check_writable(dir_fd, name)
    if mode is None and existing is not None and stat.S_ISREG(existing.st_mode):
        mode = stat.S_IMODE(existing.st_mode)
    temp = f".{name}.agentcli-{uuid.uuid4().hex[:8]}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temp, flags, 0o666, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise


def replace_with_link(dir_fd: int, name: str, target: str) -> None:
    """Put a symbolic link to `target` at `name` in the pinned directory, atomically (undo of a
    task that changed a link: a link's target is only a name, nothing is written through it)."""
    temp = f".{name}.agentcli-{uuid.uuid4().hex[:8]}.tmp"
    os.symlink(target, temp, dir_fd=dir_fd)
    try:
        if _kind(name, dir_fd) == "a directory":
            raise Unwritable(Path(name), "a directory")
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise


def remove(path: Path, root: Path) -> bool:
    """Remove the file or link at `path` (under the real path `root`) and the directories this
    leaves empty, up to `root`, without following any link: a path through a link names
    nothing of the workspace, and nothing is removed for it. Whether something was removed."""
    parts = path.relative_to(root).parts
    try:
        fds = _walk(path, root, create=False, replace_links=False)
    except (FileNotFoundError, NotADirectoryError, Unwritable):
        return False
    try:
        try:
            os.unlink(parts[-1], dir_fd=fds[-1])
        except (FileNotFoundError, IsADirectoryError):
            return False
        for depth in range(len(parts) - 1, 0, -1):
            try:
                os.rmdir(parts[depth - 1], dir_fd=fds[depth - 1])
            except OSError:
                break  # not empty (or gone): the directories above it stay too
        return True
    finally:
        for fd in fds:
            os.close(fd)


def _check_writable(dir_fd: int, name: str) -> None:
    """Raise the OS's reason if the existing file `name` may not be written (read-only mode,
    immutable, a read-only file system). Replacing it by rename would get past a read-only
    mode in a writable directory; a read-only file is the user's word that it stays as it is.
    Opening it for writing, without truncating, changes nothing (and with O_NONBLOCK, a pipe
    swapped in meanwhile cannot block it)."""
    flags = os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno != errno.ETXTBSY:  # a running program: replacing it is fine
            raise
    else:
        os.close(fd)


def _kind(name: str, dir_fd: int) -> str | None:
    try:
        return kind_name(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return None
