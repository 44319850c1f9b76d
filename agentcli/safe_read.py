"""The one way agentcli opens a file it did not write (issue 26).

What a workspace holds is the repository's, or the model's, to choose: an `AGENTS.md` can be a
link to `/proc/self/environ` (agentcli's own environment, the API key included), a
`.agentcli/config.toml` a link to `/dev/zero` (endless), a `pipe.txt` a named pipe (opening it
to read blocks until a writer comes, which is never). Everything agentcli reads of such files
(instruction files, config, `.mcp.json`, `.gitmodules`, the files its tools and `@path` name,
the contents its snapshots hash and its checkpoints keep) is opened here, so that it is:

- **a regular file**: never a FIFO, a device, a socket or a directory. The entry is looked at
  (`lstat`) before it is opened, opened with `O_NONBLOCK` (a pipe swapped in meanwhile cannot
  block the open) and `O_NOFOLLOW`, and checked again on the open descriptor (`fstat`);
- **where it should be**: for a file that comes with the workspace (`Inside`), its real path,
  links resolved, lies under one of the allowed directories, and it is opened by walking down
  from that directory one component at a time with `O_NOFOLLOW` (a link swapped into the path
  after it was resolved is refused, not followed); with `follow=False` a link anywhere in the
  path is refused outright (undo and snapshots see links as links). The user's own files
  (`inside=None`: agentcli's config dir, a `--mcp-config` file) may be links anywhere the user
  put them, except into the kernel's `/proc` and `/sys`;
- **bounded**: at most `limit` bytes are read; a larger file is refused (or, with
  `cut=True`, only its head is read), so nothing is read until memory runs out.

A refusal is an `Unreadable`: an `OSError`, so a caller that already gives up on a file it
cannot read does so here too, with a `reason` and a `why` that names what the file is
(`a link to /proc/self/environ, outside the workspace`), for the notice or error that names it.
A missing file is still `FileNotFoundError`, a directory `IsADirectoryError`, as from `open`.
"""

from __future__ import annotations

import contextlib
import enum
import errno
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

MiB = 1024 * 1024
MAX_CONFIG_BYTES = 1 * MiB
"""A config file (`.agentcli/config*.toml`, the user's `config.toml`, `.mcp.json`): larger ones
are refused, naming the file."""
MAX_INSTRUCTION_BYTES = 1 * MiB
"""An instruction file: larger ones are skipped, with a notice (at most 32 000 characters of all
of them reach the model anyway)."""
MAX_PROJECT_FILE_BYTES = 1 * MiB
"""Any other small file agentcli reads of a project for itself (`.gitmodules`, `.gitignore`,
`pyproject.toml`, `package.json`, `Makefile` for `--accept tests`)."""
KERNEL_DIRS = ("/proc", "/sys")
"""Files that are the kernel's, not anyone's: never read as a file agentcli was given."""
_CHUNK = 1 * MiB
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC
"""Never through a link at the name, never blocking (a named pipe opens at once, and is then
refused), never taking a terminal as the controlling one."""


class Reason(enum.StrEnum):
    """Why a file was not read."""

    NOT_REGULAR = "not_regular"
    OUTSIDE = "outside"
    TOO_LARGE = "too_large"
    LINK = "link"
    """A link where none may be (`follow=False`), or one swapped in while the file was opened."""


class Unreadable(OSError):
    """A file agentcli will not read; `why` says what it is, for a message naming it."""

    def __init__(self, path: Path, reason: Reason, why: str) -> None:
        super().__init__(errno.EPERM, why, str(path))
        self.path = path
        self.reason = reason
        self.why = why

    def __str__(self) -> str:
        return f"{self.path}: {self.why}"


@dataclass(frozen=True, slots=True)
class Inside:
    """Where a file that came with a workspace must lie to be read: under one of `roots` (real
    paths: `of` resolves them)."""

    roots: tuple[Path, ...]
    name: str = "the workspace"
    """What `roots` are, as a message says it (`outside the workspace`)."""

    @classmethod
    def of(cls, *roots: Path, name: str = "the workspace") -> Inside:
        return cls(tuple(Path(os.path.realpath(r)) for r in roots), name)


def read_bytes(
    path: Path,
    *,
    inside: Inside | None,
    limit: int,
    follow: bool = True,
    cut: bool = False,
) -> bytes:
    """The bytes of the regular file at `path` (see the module docstring): at most `limit`
    of them; beyond that Unreadable, or with `cut` the first `limit` bytes."""
    with opened(path, inside=inside, follow=follow) as fd:
        return read_fd(fd, path, limit=limit, cut=cut)


def read_fd(fd: int, path: Path, *, limit: int, cut: bool = False) -> bytes:
    """The bytes of the regular file open at `fd` (`open_regular`), as `read_bytes` reads
    them; `path` names it in a refusal."""
    size = os.fstat(fd).st_size
    if size > limit and not cut:
        raise _too_large(path, size, limit)
    chunks: list[bytes] = []
    got = 0
    while got <= limit:
        chunk = os.read(fd, min(_CHUNK, limit + 1 - got))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    data = b"".join(chunks)
    if len(data) > limit:  # it grew, or says it is empty as `/proc` files do
        if not cut:
            raise _too_large(path, len(data), limit)
        data = data[:limit]
    return data


@contextlib.contextmanager
def opened(path: Path, *, inside: Inside | None, follow: bool = True) -> Iterator[int]:
    """A read-only descriptor of the regular file at `path`, closed after the block (for a
    caller that reads it in its own way, e.g. hashing it in chunks)."""
    fd = open_regular(path, inside=inside, follow=follow)
    try:
        yield fd
    finally:
        os.close(fd)


def open_regular(path: Path, *, inside: Inside | None, follow: bool = True) -> int:
    """Open the regular file at `path` for reading (see the module docstring); the caller
    closes the descriptor."""
    path = Path(path)
    if inside is None:
        return _open_own(path, follow=follow)
    if follow:
        real = os.path.realpath(path)
        root = _root_of(real, inside.roots)
        if root is None:
            raise Unreadable(
                path, Reason.OUTSIDE, f"{_what_it_is(path, real)}, outside {inside.name}"
            )
    else:
        real = os.path.normpath(os.path.abspath(path))  # noqa: PTH100 - links stay links
        root = _root_of(real, inside.roots)
        if root is None:
            raise Unreadable(path, Reason.OUTSIDE, f"outside {inside.name}")
    parts = Path(real).relative_to(root).parts
    if not parts:
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    try:
        dir_fd = _walk_down(path, root, parts[:-1])
        try:
            return _open_in(path, dir_fd, parts[-1])
        finally:
            os.close(dir_fd)
    except Unreadable:
        raise
    except OSError as exc:
        raise _named(exc, path) from None


def kind_of(path: Path) -> str | None:
    """What the entry at `path` is when it is no regular file (`a named pipe (FIFO)`), else
    None; links are looked at as links. FileNotFoundError when there is nothing."""
    return kind_name(os.lstat(path).st_mode)


def _open_own(path: Path, *, follow: bool) -> int:
    real = os.path.realpath(path) if follow else os.path.abspath(path)  # noqa: PTH100
    if _root_of(real, tuple(Path(d) for d in KERNEL_DIRS)) is not None:
        raise Unreadable(path, Reason.OUTSIDE, f"{_what_it_is(path, real)}, a file of the kernel")
    try:
        if not follow:
            # The hot path (every file a snapshot hashes): one open that takes no link and
            # cannot block, then the descriptor says what it is.
            return _checked(path, os.open(real, _OPEN_FLAGS))
        parent = os.open(os.path.dirname(real), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # noqa: PTH120
        try:
            return _open_in(path, parent, os.path.basename(real))  # noqa: PTH119
        finally:
            os.close(parent)
    except Unreadable:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            raise Unreadable(path, Reason.LINK, "a link, never followed here") from None
        raise _named(exc, path) from None


def _named(exc: OSError, path: Path) -> OSError:
    """`exc` as the same kind of error about `path` (not about the component that failed)."""
    return type(exc)(exc.errno, exc.strerror or str(exc), str(path))


def _root_of(real: str, roots: Sequence[Path]) -> Path | None:
    found = [r for r in roots if real == str(r) or real.startswith(str(r).rstrip(os.sep) + os.sep)]
    return max(found, key=lambda r: len(r.parts)) if found else None


def _walk_down(path: Path, root: Path, parts: Sequence[str]) -> int:
    """A descriptor of the directory `root/parts…`, each step opened with O_NOFOLLOW."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
    fd = os.open(root, flags)
    for part in parts:
        try:
            next_fd = os.open(part, flags | os.O_NOFOLLOW, dir_fd=fd)
        except OSError as exc:
            link = exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(part, fd)
            os.close(fd)
            if link:
                raise Unreadable(
                    path, Reason.LINK, f"a link ({part}) in its path, which is never followed"
                ) from exc
            raise
        os.close(fd)
        fd = next_fd
    return fd


def _open_in(path: Path, dir_fd: int, name: str) -> int:
    """Open `name` in `dir_fd`: a regular file, or Unreadable saying what it is instead."""
    kind = kind_name(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    if kind == "a link":
        raise Unreadable(
            path, Reason.LINK, f"a link to {_readlink(name, dir_fd)}, never followed here"
        )
    if kind == "a directory":  # what opening it to read would say
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if kind is not None:
        raise Unreadable(path, Reason.NOT_REGULAR, f"{kind}, not a regular file")
    try:
        fd = os.open(name, _OPEN_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Unreadable(path, Reason.LINK, "replaced by a link while it was opened") from exc
        raise
    return _checked(path, fd)


def _checked(path: Path, fd: int) -> int:
    """`fd`, if it is open on a regular file; else closed, and Unreadable."""
    kind = kind_name(os.fstat(fd).st_mode)
    if kind is not None:
        os.close(fd)
        if kind == "a directory":
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        raise Unreadable(path, Reason.NOT_REGULAR, f"{kind}, not a regular file")
    return fd


_KINDS = (
    (stat.S_ISLNK, "a link"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


def kind_name(mode: int) -> str | None:
    """What an entry of `mode` is when it is no regular file (`a named pipe (FIFO)`, `a link`),
    else None."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _what_it_is(path: Path, real: str) -> str:
    """`a link to TARGET` as the link says it (`/proc/self/environ`, not `/proc/4242/…`), or
    where the path leads through a linked directory."""
    try:
        return f"a link to {path.readlink()}"
    except OSError:
        return f"a path that leads to {real}"


def _readlink(name: str, dir_fd: int) -> str:
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return "somewhere"


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _too_large(path: Path, size: int, limit: int) -> Unreadable:
    return Unreadable(
        path, Reason.TOO_LARGE, f"{size_text(size)}, over the {size_text(limit)} limit"
    )


def size_text(size: int) -> str:
    """`2.0 GiB`, `1 MiB`, `512 bytes`."""
    for unit, scale in (("GiB", 1024**3), ("MiB", MiB), ("KiB", 1024)):
        if size >= scale:
            value = size / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{size} bytes"
