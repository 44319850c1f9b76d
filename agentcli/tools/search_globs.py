"""Which files `glob` and `grep` look at: the model's glob, with .gitignore, the hidden-file rule
and `.git` kept. ripgrep's `--glob PATTERN` cannot carry the model's glob: it is a whitelist
that, by ripgrep's design, overrides all three.

What the glob selects is decided in Python (`selector`, on `glob_regex`, which reads globs as
ripgrep does), with ripgrep and in the fallback alike, so the two agree by construction. ripgrep
only narrows its walk to a superset of those files, in ways that keep its ignore files:
- a file-name glob (`*.py`, `**/*.{ts,tsx}`) becomes a file type (`--type-add`): types select by
  name after the ignore files have had their say (they do let hidden files of that name through,
  which `selector` drops);
- a path glob (`src/**/*.ts`) goes into an extra ignore file ("everything is ignored but
  directories and the glob's files"), which ripgrep applies after .gitignore, .ignore and
  .rgignore, so what they ignore stays ignored. Its whitelist would open hidden directories,
  `.git` too, so `--glob !.*` follows (command-line exclusions win over every ignore file);
- an exclusion (`!*.min.js`, grep only) goes to ripgrep as it is: it whitelists nothing.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator

from agentcli.errors import ToolError, ToolErrorKind
from agentcli.globs import GlobSyntaxError
from agentcli.tools.search_fallback import glob_regex, trim_glob

GLOB_TYPE = "agentcliglob"
"""The file type a file-name glob is given to ripgrep as."""


def check_glob(pattern: str) -> None:
    """Refuse a malformed glob, with or without ripgrep, in ripgrep's words."""
    try:
        glob_regex(pattern.removeprefix("!"))
    except GlobSyntaxError as exc:
        raise ToolError(ToolErrorKind.INVALID_ARGUMENTS, str(exc)) from None


def selector(glob: str, *, hidden: bool) -> Callable[[str], bool]:
    """Whether a search limited by `glob` looks at a file, given its path relative to the
    directory the glob is relative to; at a hidden one only when `hidden` (the pattern or path
    names a hidden path). `!PATTERN` leaves out the files it matches and, as in ripgrep,
    everything in a directory it matches. (A closure: it runs once per listed file.)"""
    regex = glob_regex(glob.removeprefix("!"))
    if not glob.startswith("!"):
        return lambda rel: (hidden or "/." not in "/" + rel) and regex.fullmatch(rel) is not None
    excluded = trim_glob(glob[1:])
    # A trailing `/` names directories only (it anchors nothing): never the file itself.
    file_regex = None if excluded.endswith("/") else regex
    dir_regex = glob_regex(excluded.rstrip("/")) if file_regex is None else regex

    def not_excluded(rel: str) -> bool:
        if file_regex is not None and file_regex.fullmatch(rel):
            return False
        directory = rel.rpartition("/")[0]
        while directory:
            if dir_regex.fullmatch(directory):
                return False
            directory = directory.rpartition("/")[0]
        return hidden or "/." not in "/" + rel

    return not_excluded


@contextlib.contextmanager
def rg_selection(glob: str | None, *, hidden: bool) -> Iterator[list[str]]:
    """ripgrep's flags, valid inside the `with`, for a walk over (a superset of) the files
    `glob` selects, with .gitignore'd files, `.git` and, unless `hidden`, hidden files left out.
    `hidden`: the pattern or path names a hidden path."""
    walk = ["--hidden", "--glob", "!.git"] if hidden else []
    glob = None if glob is None else trim_glob(glob)
    # A newline would start another rule in an ignore file (or a glob's line); a NUL cannot be
    # in a command-line argument; ripgrep reads `!` alone as "exclude everything", the glob
    # matcher as "exclude nothing".
    if glob is None or glob == "!" or any(c in glob for c in "\n\r\0"):
        yield walk  # not narrowed (the results are filtered all the same)
    elif glob.startswith("!"):
        yield ["--glob", glob, *walk]
    elif (name := _file_name_glob(glob)) is not None:
        yield ["--type-add", f"{GLOB_TYPE}:{name}", "--type", GLOB_TYPE, *walk]
    else:
        fd, path = tempfile.mkstemp(prefix="agentcli-glob-", suffix=".ignore")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                file.write(f"*\n!*/\n!{glob}\n")
            # The file's whitelist would let hidden paths through: `.*` covers `.git` too.
            yield ["--ignore-file", path, *(walk or ["--glob", "!.*"])]
        finally:
            os.unlink(path)  # noqa: PTH108 - the path mkstemp gave


def _file_name_glob(glob: str) -> str | None:
    """The glob on file names that `glob` amounts to, if it names no directory."""
    name = glob
    while name.startswith("**/"):
        name = name[3:]
    # `:` would end the type's name in `--type-add NAME:GLOB`, which needs a glob.
    return name if name and "/" not in name and ":" not in name else None
