"""Text files as the file tools see them.

Owns: decoding with the file's encoding and line endings kept (so an edit never turns CRLF into
LF or UTF-16 into UTF-8), content hashes and the stale-read guard, and how a tool reads the file
it changes (`agentcli.safe_read`: a regular file, never a pipe, never through a link) and writes
it (`agentcli.safe_write`: atomically, through a pinned parent directory and with `O_NOFOLLOW`,
so a symlink swapped in after the path check cannot redirect the write outside the workspace),
with their refusals as the typed tool errors the model sees.
"""

from __future__ import annotations

import codecs
import errno
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from agentcli.call_records import FileWrite, PreState
from agentcli.errors import ToolError, ToolErrorKind
from agentcli.safe_read import Inside, Reason, Unreadable, read_bytes
from agentcli.safe_write import Unwritable, pinned_parent, replace_file
from agentcli.tools.base import ToolContext
from agentcli.tools.paths import refusal

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
BINARY_SNIFF_BYTES = 8192
MAX_FILE_BYTES = 50 * 1024 * 1024
"""The largest file the file tools read (or read to change it)."""


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


def read_nofollow(path: Path, roots: Iterable[Path]) -> bytes | None:
    """The file's bytes, or None if it does not exist. `path` is already resolved, so a link
    anywhere in it now was swapped in: refused, as is anything but a regular file (a named pipe
    would block the open) and a file over MAX_FILE_BYTES (`agentcli.safe_read`)."""
    shown = str(path)
    try:
        return read_bytes(path, inside=Inside(tuple(roots)), limit=MAX_FILE_BYTES, follow=False)
    except FileNotFoundError:
        return None
    except IsADirectoryError as exc:
        raise ToolError(ToolErrorKind.INVALID_ARGUMENTS, f"{shown} is a directory") from exc
    except Unreadable as exc:
        if exc.reason is Reason.LINK:
            raise ToolError(
                ToolErrorKind.PERMISSION_DENIED,
                f"{shown} was replaced by a symlink after its path was checked; refusing it",
            ) from exc
        if exc.reason is Reason.TOO_LARGE:
            raise ToolError(
                ToolErrorKind.INVALID_ARGUMENTS,
                f"{shown} is {exc.why} of the file tools: it cannot be changed with them",
            ) from exc
        raise refusal(exc, shown, "the write tools change") from exc
    except OSError as exc:
        raise _os_error(path, exc) from exc


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

    def pre_state(self) -> PreState:
        return PreState(
            write=FileWrite(
                path=str(self.path),
                pre_hash=None if self.before is None else content_hash(self.before),
                post_hash=content_hash(self.after),
            )
        )


def commit(plan: WritePlan, ctx: ToolContext, roots: Iterable[Path]) -> None:
    """Carry out a plan, unless the file changed after the plan was made."""
    roots = list(roots)
    current = read_nofollow(plan.path, roots)
    if current != plan.before:
        raise ToolError(
            ToolErrorKind.CONFLICT,
            f"{plan.shown} changed while this call was waiting to run; read_file it again "
            "and redo your change",
        )
    write_atomic(plan.path, plan.after, roots)
    ctx.read_hashes[plan.path] = content_hash(plan.after)


def write_atomic(path: Path, data: bytes, roots: Iterable[Path]) -> None:
    """Replace or create `path` (a resolved real path inside one of `roots`) with `data`,
    through a pinned parent (`agentcli.safe_write`). A write the file system refuses
    (read-only, full, ...) is a ToolError with its reason, and the file is as it was: the temp
    file never replaced it."""
    try:
        with pinned_parent(path, roots) as dir_fd:
            replace_file(dir_fd, path.name, data)
    except Unwritable as exc:
        if exc.why == "outside the workspace":
            raise ToolError(
                ToolErrorKind.PERMISSION_DENIED, f"{path} is outside the workspace"
            ) from exc
        if exc.why == "a directory" or exc.why.endswith("not a directory"):
            raise ToolError(ToolErrorKind.INVALID_ARGUMENTS, f"{exc.path} is {exc.why}") from exc
        if exc.path != Path(path.name):  # a directory on the way
            raise ToolError(
                ToolErrorKind.PERMISSION_DENIED,
                f"{exc.path} is a symlink (it was not when the path was checked); "
                "nothing was written",
            ) from exc
        kind = "a symlink" if exc.why == "a link" else "not a regular file"
        raise ToolError(
            ToolErrorKind.PERMISSION_DENIED, f"{path.name} is {kind}; nothing was written"
        ) from exc
    except (NotADirectoryError, FileNotFoundError) as exc:
        raise _os_error(path, exc) from exc
    except OSError as exc:
        raise ToolError(
            ToolErrorKind.OS_ERROR, f"cannot write {path}: {_reason(exc)}; nothing was written"
        ) from exc


# The path itself is wrong (the model can fix it); anything else is the file system's own
# refusal (permissions, read-only, full, I/O error): an `os_error` with the reason.
_BAD_PATH = frozenset({errno.ENOTDIR, errno.ENOENT, errno.EISDIR, errno.ENAMETOOLONG})


def _os_error(path: Path, exc: OSError) -> ToolError:
    if exc.errno in _BAD_PATH:
        return ToolError(ToolErrorKind.INVALID_ARGUMENTS, f"{path}: {exc.strerror or exc}")
    return ToolError(ToolErrorKind.OS_ERROR, f"{path}: {_reason(exc)}")


def _reason(exc: OSError) -> str:
    """The OS's reason, with the errno's name: `No space left on device (ENOSPC)`."""
    name = errno.errorcode.get(exc.errno or 0)
    reason = exc.strerror or str(exc)
    return f"{reason} ({name})" if name else reason
