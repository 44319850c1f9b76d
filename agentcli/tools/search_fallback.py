"""Pure-Python file listing and search, used by `glob` and `grep` only when no ripgrep binary
exists; and the glob matcher both tools use with ripgrep too. It skips hidden files and
directories (`.git` always), binary files and, like ripgrep, symbolic links (a link would show a
file under a name no read rule covers); it does not read .gitignore, and results say so."""

from __future__ import annotations

import functools
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

from agentcli.globs import GlobSyntaxError, glob_to_regex
from agentcli.safe_read import read_bytes
from agentcli.tools.output import split_lines
from agentcli.tools.textfile import MAX_FILE_BYTES

FALLBACK_NOTE = (
    "(ripgrep not found: searched with a slower pure-Python fallback that does not apply "
    ".gitignore)"
)


def walk_files(root: Path, *, hidden: bool = False) -> Iterator[str]:
    """Paths of regular files under `root`, relative to it, in a stable order."""
    if root.is_file():
        yield root.name
        return
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d for d in dirnames if d != ".git" and (hidden or not d.startswith("."))
        )
        rel_dir = os.path.relpath(directory, root)
        for name in sorted(filenames):
            # A `.git` file (a worktree's or submodule's pointer) is left out like ripgrep's
            # `--glob !.git` leaves it out.
            if name == ".git" or (not hidden and name.startswith(".")):
                continue
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            if _is_regular_file(os.path.join(directory, name)):  # noqa: PTH118 - hot path
                yield rel


def _is_regular_file(path: str) -> bool:
    """A regular file, not a symbolic link to one."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def trim_glob(pattern: str) -> str:
    """A glob without its trailing blanks, as ripgrep (and .gitignore) reads it: they are
    dropped unless the last one is escaped (`\\ `)."""
    return pattern if pattern.endswith("\\ ") else pattern.rstrip()


@functools.lru_cache(maxsize=64)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex for a .gitignore-style glob, read as ripgrep reads it: without a `/` it matches
    a file name at any depth; `**` spans directories, `*` and `?` stay inside one, `{a,b}` is an
    alternative. Raises GlobSyntaxError, with ripgrep's message, for a malformed glob."""
    pattern = trim_glob(pattern)
    anchored = "/" in pattern.rstrip("/")
    try:
        body = glob_to_regex(pattern.lstrip("/"), extended=True)
    except GlobSyntaxError as exc:
        raise GlobSyntaxError(f"error parsing glob '{pattern}': {exc}") from None
    return re.compile(body if anchored else f"(?:.*/)?{body}", re.DOTALL)


def glob_matches(rel: str, pattern: str) -> bool:
    """Whether the `/`-separated path `rel` (relative to the search root) matches `pattern`.
    This is the one matcher for glob patterns: with ripgrep too, the tools filter what
    `rg --files` lists with it instead of passing the pattern as `--glob`, which would
    override .gitignore and the hidden-file rule."""
    return glob_regex(pattern).fullmatch(rel) is not None


def read_text_file(path: Path) -> list[str] | None:
    """The lines of a text file, or None for binary or unreadable files."""
    try:  # never a pipe or a device, never through a link, never a huge file
        data = read_bytes(path, inside=None, limit=MAX_FILE_BYTES, follow=False)
    except OSError:
        return None
    if b"\x00" in data[:8192]:
        return None
    return [line.removesuffix("\r") for line in split_lines(data.decode("utf-8", "replace"))]


def newest_first_key(path: str) -> float:
    """Sort key for newest first: minus the modification time, 0 for a file that vanished
    meanwhile. `path` is a plain string because this is grep's and glob's hot path: building a
    Path per result cost about as much as running ripgrep on a small tree."""
    try:
        return -os.stat(path).st_mtime  # noqa: PTH116 - see the docstring
    except OSError:
        return 0.0
