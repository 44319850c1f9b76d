"""Text files as the file tools see them.

Owns: decoding with the file's encoding and line endings kept (so an edit never turns CRLF into
LF or UTF-16 into UTF-8), content hashes and the stale-read guard, and the one way a tool writes
a file: atomically (temp file + rename, so a crash leaves the old or the new content, never half
of it) through a pinned parent directory and with `O_NOFOLLOW`, so a symlink swapped in after
the path check cannot redirect the write outside the workspace.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import hashlib
import os
import stat
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentcli.errors import ToolError, ToolErrorKind
from agentcli.tools.base import ToolContext

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
BINARY_SNIFF_BYTES = 8192


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class TextContent:
    """A decoded text file and what is needed to write it back the same way."""

    text: str
    """The content with its original line endings."""
    codec: str
    bom: bytes = b""
    newline: str = "\n"
    """The file's dominant line ending: `\\r\\n` or `\\n`."""

    def encode(self, text: str, shown: str) -> bytes:
        try:
            return self.bom + text.encode(self.codec)
        except UnicodeEncodeError as exc:
            bad = text[exc.start : exc.end]
            raise ToolError(
                ToolErrorKind.INVALID_ARGUMENTS,
                f"{shown} is encoded as {self.codec}, which cannot represent {bad!r}; "
                "use characters the file's encoding supports",
            ) from exc

    @property
    def encoding_name(self) -> str:
        if self.codec == "latin-1":
            return "latin-1 (not valid UTF-8; bytes kept as they are)"
        return f"{self.codec}{' with BOM' if self.bom else ''}"


def looks_binary(data: bytes) -> bool:
    if any(data.startswith(bom) for bom, codec in _BOMS if codec != "utf-8"):
        return False
    return b"\x00" in data[:BINARY_SNIFF_BYTES]


def decode(data: bytes) -> TextContent:
    """Decode a text file: a BOM wins, then strict UTF-8, else latin-1 (which round-trips any
    byte, so an edit never corrupts the parts it does not touch)."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            text = data[len(bom) :].decode(codec, errors="replace")
            return TextContent(text=text, codec=codec, bom=bom, newline=dominant_newline(text))
    try:
        text = data.decode("utf-8")
        codec = "utf-8"
    except UnicodeDecodeError:
        text = data.decode("latin-1")
        codec = "latin-1"
    return TextContent(text=text, codec=codec, newline=dominant_newline(text))


def dominant_newline(text: str) -> str:
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf * 2 >= text.count("\n") else "\n"


def with_newline(text: str, newline: str) -> str:
    """`text` with every line ending written as `newline`."""
    unified = text.replace("\r\n", "\n")
    return unified if newline == "\n" else unified.replace("\n", newline)


def read_nofollow(path: Path) -> bytes | None:
    """The file's bytes, or None if it does not exist. Refuses a symlink in the last component
    (the path is already resolved, so one appearing now was swapped in)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except IsADirectoryError as exc:
        raise ToolError(ToolErrorKind.INVALID_ARGUMENTS, f"{path} is a directory") from exc
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ToolError(
                ToolErrorKind.PERMISSION_DENIED,
                f"{path} was replaced by a symlink after its path was checked; refusing it",
            ) from exc
        raise _os_error(path, exc) from exc
    with os.fdopen(fd, "rb") as handle:
        if stat.S_ISDIR(os.fstat(handle.fileno()).st_mode):
            raise ToolError(ToolErrorKind.INVALID_ARGUMENTS, f"{path} is a directory")
        return handle.read()


def check_fresh(path: Path, current: bytes | None, ctx: ToolContext, shown: str) -> None:
    """The stale-read guard: an existing file may be changed only if this session read it and
    it is still exactly what was read."""
    if current is None:
        return
    known = ctx.read_hashes.get(path)
    if known is None:
        raise ToolError(
            ToolErrorKind.CONFLICT,
            f"{shown} exists and has not been read in this session; read it with "
            "read_file first, then retry (so nothing you have not seen is overwritten)",
        )
    if known != content_hash(current):
        raise ToolError(
            ToolErrorKind.CONFLICT,
            f"{shown} has changed since you last read it (the user or a command modified "
            "it); read_file it again and redo your change on the current content",
        )


@dataclass(slots=True)
class WritePlan:
    """A file write worked out in full before it happens (the journal records it first)."""

    path: Path
    shown: str
    before: bytes | None
    after: bytes

    def pre_state(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "pre_hash": None if self.before is None else content_hash(self.before),
            "post_hash": content_hash(self.after),
        }


def commit(plan: WritePlan, ctx: ToolContext, roots: Iterable[Path]) -> None:
    """Carry out a plan, unless the file changed after the plan was made."""
    current = read_nofollow(plan.path)
    if current != plan.before:
        raise ToolError(
            ToolErrorKind.CONFLICT,
            f"{plan.shown} changed while this call was waiting to run; read_file it again "
            "and redo your change",
        )
    write_atomic(plan.path, plan.after, roots)
    ctx.read_hashes[plan.path] = content_hash(plan.after)


def write_atomic(path: Path, data: bytes, roots: Iterable[Path]) -> None:
    """Replace or create `path` (a resolved real path inside one of `roots`) with `data`.
    A write the file system refuses (read-only, full, ...) is a ToolError with its reason, and
    the file is as it was: the temp file never replaced it."""
    dir_fd = _open_parent(path, roots)
    try:
        _replace_in_dir(dir_fd, path.name, data)
    except OSError as exc:
        raise ToolError(
            ToolErrorKind.OS_ERROR, f"cannot write {path}: {_reason(exc)}; nothing was written"
        ) from exc
    finally:
        os.close(dir_fd)


def _open_parent(path: Path, roots: Iterable[Path]) -> int:
    """Open `path`'s directory by walking down from its root one component at a time with
    O_NOFOLLOW, creating what is missing: a symlink swapped into the chain after the path was
    checked is refused instead of followed, and nothing is created outside the root."""
    inside = [r for r in roots if r == path.parent or r in path.parent.parents]
    if not inside:
        raise ToolError(ToolErrorKind.PERMISSION_DENIED, f"{path} is outside the workspace")
    root = max(inside, key=lambda r: len(r.parts))
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
    try:
        fd = os.open(root, flags)
    except OSError as exc:
        raise _os_error(root, exc) from exc
    walked = root
    for part in path.parent.relative_to(root).parts:
        walked = walked / part
        try:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o777, dir_fd=fd)
            next_fd = os.open(part, flags | os.O_NOFOLLOW, dir_fd=fd)
        except OSError as exc:
            is_link = _is_symlink(part, fd)
            os.close(fd)
            if is_link:
                raise ToolError(
                    ToolErrorKind.PERMISSION_DENIED,
                    f"{walked} is a symlink (it was not when the path was checked); "
                    "nothing was written",
                ) from exc
            raise _os_error(walked, exc) from exc
        os.close(fd)
        fd = next_fd
    return fd


def _is_symlink(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _replace_in_dir(dir_fd: int, name: str, data: bytes) -> None:
    try:
        existing = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        existing = None
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        kind = "a symlink" if stat.S_ISLNK(existing.st_mode) else "not a regular file"
        raise ToolError(ToolErrorKind.PERMISSION_DENIED, f"{name} is {kind}; nothing was written")
    if existing is not None:
        _check_writable(dir_fd, name)
    temp = f".{name}.agentcli-{uuid.uuid4().hex[:8]}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temp, flags, 0o666, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            if existing is not None:
                os.fchmod(handle.fileno(), stat.S_IMODE(existing.st_mode))
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise


# The path itself is wrong (the model can fix it); anything else is the file system's own
# refusal (permissions, read-only, full, I/O error): an `os_error` with the reason.
_BAD_PATH = frozenset({errno.ENOTDIR, errno.ENOENT, errno.EISDIR, errno.ENAMETOOLONG})


def _check_writable(dir_fd: int, name: str) -> None:
    """Raise the OS's reason if the existing file `name` may not be written (read-only mode,
    immutable, a read-only file system). Replacing it by rename would get past a read-only
    mode in a writable directory; a read-only file is the user's word that it stays as it is.
    Opening it for writing, without truncating, changes nothing."""
    try:
        fd = os.open(name, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno != errno.ETXTBSY:  # a running program: replacing it is fine
            raise
    else:
        os.close(fd)


def _os_error(path: Path, exc: OSError) -> ToolError:
    if exc.errno in _BAD_PATH:
        return ToolError(ToolErrorKind.INVALID_ARGUMENTS, f"{path}: {exc.strerror or exc}")
    return ToolError(ToolErrorKind.OS_ERROR, f"{path}: {_reason(exc)}")


def _reason(exc: OSError) -> str:
    """The OS's reason, with the errno's name: `No space left on device (ENOSPC)`."""
    name = errno.errorcode.get(exc.errno or 0)
    reason = exc.strerror or str(exc)
    return f"{reason} ({name})" if name else reason
