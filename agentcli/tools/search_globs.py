"""How the model's glob picks the files `glob` and `grep` look at, without letting ripgrep
override .gitignore, the hidden-file rule or `.git`: ripgrep's `--glob PATTERN` is a whitelist
that, by its design, wins over all three.

The glob is matched in Python (`glob_matches`, which reads globs as ripgrep does), with ripgrep
and in the fallback alike, so the two agree by construction. ripgrep only lists or narrows, in
ways that keep its ignore rules:
- `glob` lists with `rg --files` and keeps the paths that match;
- `grep` with a file-name glob (`*.py`, `**/*.{ts,tsx}`) defines it as a file type
  (`--type-add`), which selects files without overriding anything; with an exclusion
  (`!*.min.js`) it passes it as is (an exclusion whitelists nothing); with a path glob
  (`src/**/*.ts`) it passes `--glob` to narrow the search, keeps `.git` and hidden files out with
  later globs (ripgrep's later globs win), and lists the files ripgrep searches without the
  glob, in parallel: only hits on those count.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agentcli.errors import ToolError, ToolErrorKind
from agentcli.globs import GlobSyntaxError
from agentcli.tools.ripgrep import RgResult, run_rg
from agentcli.tools.search_fallback import glob_matches, glob_regex

GLOB_TYPE = "agentcliglob"
"""The name of the file type a file-name glob is given to ripgrep as."""


def check_glob(pattern: str) -> None:
    """Refuse a malformed glob, with or without ripgrep, in ripgrep's words."""
    try:
        glob_regex(pattern.removeprefix("!"))
    except GlobSyntaxError as exc:
        raise ToolError(ToolErrorKind.INVALID_ARGUMENTS, str(exc)) from None


def glob_selects(rel: str, glob: str) -> bool:
    """Whether a search limited by `glob` looks at the file `rel` (relative to the directory
    the glob is relative to). `!PATTERN` leaves out the files it matches and, as in ripgrep,
    everything in a directory it matches."""
    if not glob.startswith("!"):
        return glob_matches(rel, glob)
    excluded = glob[1:]
    candidate = rel
    while candidate:
        if glob_matches(candidate, excluded):
            return False
        candidate = candidate.rpartition("/")[0]
    return True


def hidden_flags(hidden: bool) -> list[str]:
    """ripgrep's flags for a search whose pattern or path names a hidden path: hidden files are
    listed, `.git` still is not."""
    return ["--hidden", "--glob", "!.git"] if hidden else []


async def rg_files(
    rg: str, cwd: Path, *, hidden: bool, excludes: list[str], arg: str | None = None
) -> RgResult:
    """`rg --files`: the files a search of `arg` (default: `cwd`) looks at, ignore rules kept."""
    where = ["--", arg] if arg else []
    return await run_rg(rg, ["--files", *hidden_flags(hidden), *excludes, *where], cwd=cwd)


@dataclass(frozen=True, slots=True)
class RgGlob:
    """How a ripgrep search is narrowed to a glob's files."""

    flags: list[str]
    listed: bool
    """The flags let ignored or hidden files through: keep only hits `rg_files` lists."""


def rg_glob(glob: str, *, hidden: bool) -> RgGlob:
    """The ripgrep flags that narrow a search to (a superset of) the files `glob` selects."""
    if glob.startswith("!"):
        return RgGlob(["--glob", glob], listed=False)
    name = glob
    while name.startswith("**/"):
        name = name[3:]
    # A type is a glob on file names; `:` would end the type's name in --type-add.
    if "/" not in name and ":" not in name:
        return RgGlob(["--type-add", f"{GLOB_TYPE}:{name}", "--type", GLOB_TYPE], listed=False)
    unhidden = [] if hidden else ["--glob", "!.*"]
    return RgGlob(["--glob", glob, "--glob", "!.git", *unhidden], listed=True)
