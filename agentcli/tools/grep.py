"""`grep`: search file contents with ripgrep (a pure-Python fallback only when no rg exists).

rg's output is parsed into per-file hits, ordered most recently modified first, and cut at the
output cap on whole lines with a notice that says exactly how many matches and files were shown
and omitted, how to narrow the search, and where the full result was saved. A `glob` narrows the
search without overriding .gitignore, hidden files or `.git` (see `search_globs`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import Field

from agentcli.errors import ToolError, ToolErrorKind
from agentcli.permissions.screen import SearchScreen
from agentcli.safe_read import kind_of
from agentcli.tools.base import ToolContext, ToolOutput
from agentcli.tools.output import NOTICE_ROOM, new_spill_path, read_on, save_spill
from agentcli.tools.paths import display_path
from agentcli.tools.ripgrep import RgResult, run_rg
from agentcli.tools.search import (
    SearchInput,
    SearchTool,
    names_hidden,
    search_root,
    search_screen,
)
from agentcli.tools.search_fallback import (
    FALLBACK_NOTE,
    newest_first_key,
    read_text_file,
    walk_files,
)
from agentcli.tools.search_globs import check_glob, rg_selection, selector
from agentcli.words import plural

MAX_LINE_COLUMNS = 400
_MATCH_LINE = re.compile(r"\d+:")
OutputMode = Literal["files_with_matches", "content", "count"]


class GrepInput(SearchInput):
    pattern: str = Field(
        min_length=1,
        description="Regular expression (Rust regex syntax, as ripgrep: escape `(`, `[`, `.` "
        "etc. to match them literally).",
    )
    path: str | None = Field(
        default=None,
        description="File or directory to search, relative to the workspace root "
        "(default: the root).",
    )
    glob: str | None = Field(
        default=None,
        description="Only search files matching this glob, relative to `path` "
        "(e.g. `*.py`, `src/**/*.ts`).",
    )
    output_mode: OutputMode = Field(
        default="files_with_matches",
        description="`files_with_matches`: the paths of matching files; `content`: matching "
        "lines as `N:line` under each file's path; `count`: matching lines per file.",
    )
    context: int | None = Field(
        default=None,
        ge=0,
        le=20,
        description="Lines of context before and after each match (content mode only).",
    )
    case_insensitive: bool = Field(default=False, description="Ignore case.")


@dataclass(slots=True)
class FileHits:
    path: str
    """Workspace-relative path."""
    matches: int = 0
    """Matching lines."""
    lines: list[str] = field(default_factory=list)
    """Content mode: `N:text` for matches, `N-text` for context, `--` between groups."""


class Grep(SearchTool[GrepInput]):
    name = "grep"
    description = (
        "Search file contents with a regular expression (ripgrep). Respects .gitignore and "
        "skips hidden and binary files. `output_mode` is `files_with_matches` (default: "
        "matching file paths, most recently modified first), `content` (matching lines with "
        "line numbers, optionally with `context` lines) or `count` (matching lines per file). "
        "Long results are cut at the output limit; the notice says how many matches and files "
        "were left out, and where the full result was saved. An invalid regex is reported as "
        "an error, not as no matches. Read-only."
    )
    input_model = GrepInput

    def validate(self, args: GrepInput, ctx: ToolContext) -> None:
        if not search_root(args.path, ctx).exists():
            raise ToolError(ToolErrorKind.NOT_FOUND, f"path {args.path} does not exist")
        if args.context is not None and args.output_mode != "content":
            raise ToolError(
                ToolErrorKind.INVALID_ARGUMENTS,
                "field 'context' only applies to output_mode='content'",
            )
        if args.glob:
            check_glob(args.glob)

    def summary(self, args: GrepInput, shown_root: str) -> str:
        return f"search {args.pattern!r} in {shown_root}"

    async def call(self, args: GrepInput, ctx: ToolContext) -> ToolOutput:
        target = search_root(args.path, ctx)
        _searchable(target, ctx)
        cwd, arg = (target, ".") if target.is_dir() else (target.parent, target.name)
        shown_cwd = display_path(cwd, ctx.workspace)
        prefix = "" if shown_cwd == "." else f"{shown_cwd}/"
        screen = search_screen(target, ctx)
        rg = self.rg(ctx)
        if rg is not None:
            hidden = names_hidden(args.glob, args.path)
            with rg_selection(args.glob, hidden=hidden) as selection:
                flags = _rg_flags(args, arg, [*selection, *screen.rg_excludes(shown_cwd)])
                result = await run_rg(rg, flags, cwd=cwd)
            hits = _parse_rg(result, args.output_mode, prefix)
            if args.glob:  # ripgrep looked at a superset of the glob's files
                selected = selector(args.glob, hidden=hidden)
                hits = [h for h in hits if selected(h.path[len(prefix) :])]
            note = _rg_note(result, screen, prefix)
        else:
            hits, note = _python_grep(args, cwd, arg, prefix, screen), FALLBACK_NOTE
        # Second line of defence: whatever rg's globs let through, the rules' own matcher
        # does not.
        hits = [h for h in hits if not screen.withholds(h.path)]
        _sort_newest_first(hits, ctx.workspace)
        shown = display_path(target, ctx.workspace)
        withheld = screen.notice(shown) if target.is_dir() else ""
        return _format(args, hits, shown, ctx, "\n".join(filter(None, [note, withheld])))


def _searchable(target: Path, ctx: ToolContext) -> None:
    """Refuse a named path that is no regular file or directory: ripgrep opens a file it is
    named (a named pipe would block it forever; it passes such files over in a directory)."""
    try:
        kind = kind_of(target)
    except OSError:
        return  # gone: ripgrep says so
    if kind is not None and kind != "a directory":
        shown = display_path(target, ctx.workspace)
        raise ToolError(
            ToolErrorKind.INVALID_ARGUMENTS,
            f"{shown} is {kind}, not a regular file; grep searches regular files only",
        )


def _rg_flags(args: GrepInput, arg: str, selection: list[str]) -> list[str]:
    flags = ["--color", "never", "--max-columns", str(MAX_LINE_COLUMNS), "--max-columns-preview"]
    if args.case_insensitive:
        flags.append("--ignore-case")
    flags += selection  # the glob, hidden files, then the screen's exclusions: later globs win
    if args.output_mode == "files_with_matches":
        flags.append("--files-with-matches")
    elif args.output_mode == "count":
        # rg names the file only when it searches more than one, unless told to.
        flags += ["--count", "--with-filename", "--null"]
    else:
        flags += ["--line-number", "--with-filename", "--no-heading", "--null"]
        if args.context:
            flags += ["--context", str(args.context)]
    return [*flags, "--regexp", args.pattern, "--", arg]


def _parse_rg(result: RgResult, mode: OutputMode, prefix: str) -> list[FileHits]:
    if result.exit_code == 2 and not result.stdout:
        message = result.error_text() or "ripgrep failed"
        if "regex" in message:
            message += "\n(escape special characters such as ( [ { . * + ? to match them literally)"
        raise ToolError(ToolErrorKind.INVALID_ARGUMENTS, message)
    if mode == "files_with_matches":
        return [FileHits(path=_join(prefix, _name(line))) for line in _lines(result.stdout)]
    if mode == "count":
        hits = []
        for line in _lines(result.stdout):
            path, _, count = line.rpartition(b"\0")
            hits.append(FileHits(path=_join(prefix, _name(path)), matches=int(count or 0)))
        return hits
    return _parse_content(result.stdout, prefix)


def _lines(data: bytes) -> list[bytes]:
    return [line for line in data.splitlines() if line]


def _name(raw: bytes) -> str:
    """A path rg printed: its bytes kept (`surrogateescape`) even when they are not UTF-8."""
    return raw.decode("utf-8", errors="surrogateescape")


def _parse_content(data: bytes, prefix: str) -> list[FileHits]:
    by_path: dict[str, FileHits] = {}
    current: FileHits | None = None
    for raw in data.split(b"\n"):
        raw_path, sep, raw_rest = raw.partition(b"\0")
        if not sep:
            if raw == b"--" and current is not None:
                current.lines.append("--")
            continue
        path, rest = _name(raw_path), raw_rest.decode("utf-8", errors="replace")
        current = by_path.get(path)
        if current is None:
            current = by_path[path] = FileHits(path=_join(prefix, path))
        if _MATCH_LINE.match(rest):
            current.matches += 1
        current.lines.append(rest.removesuffix("\r"))
    for hits in by_path.values():
        while hits.lines and hits.lines[-1] == "--":
            hits.lines.pop()
    return list(by_path.values())


def _join(prefix: str, path: str) -> str:
    return prefix + path.removeprefix("./")


def _rg_note(result: RgResult, screen: SearchScreen, prefix: str = "") -> str:
    notes = []
    if result.overflowed:
        notes.append(
            "(ripgrep's output was too large and was stopped early: totals are lower bounds)"
        )
    if result.exit_code == 2 and result.stderr.strip():
        # An error names a file (`PATH: message`): never one the screen withholds.
        errors = result.error_text().splitlines()
        shown = (e for e in errors if not screen.withholds(_join(prefix, e.partition(": ")[0])))
        first = next(shown, None)
        notes.append(
            f"(ripgrep could not read some files, e.g.: {first})"
            if first
            else "(ripgrep could not read some files)"
        )
    return "\n".join(notes)


def _python_grep(
    args: GrepInput, cwd: Path, arg: str, prefix: str, screen: SearchScreen
) -> list[FileHits]:
    try:
        regex = re.compile(args.pattern, re.IGNORECASE if args.case_insensitive else 0)
    except re.error as exc:
        raise ToolError(ToolErrorKind.INVALID_ARGUMENTS, f"invalid regex: {exc}") from exc
    root = cwd / arg
    hidden = names_hidden(args.glob, args.path)
    selected = selector(args.glob, hidden=hidden) if args.glob else None
    hits = []
    for rel in walk_files(root, hidden=hidden):
        if selected is not None and not selected(rel):
            continue
        shown = _join(prefix, rel if arg == "." else arg)
        if screen.withholds(shown):
            continue  # never even read
        lines = read_text_file(root / rel if arg == "." else root)
        if lines is None:
            continue
        numbers = [n for n, line in enumerate(lines) if regex.search(line)]
        if not numbers:
            continue
        file_hits = FileHits(path=shown, matches=len(numbers))
        if args.output_mode == "content":
            file_hits.lines = _context_lines(lines, numbers, args.context or 0)
        hits.append(file_hits)
    return hits


def _context_lines(lines: list[str], numbers: list[int], context: int) -> list[str]:
    out: list[str] = []
    matches = set(numbers)
    last = -2
    for n in numbers:
        start, end = max(0, n - context), min(len(lines), n + context + 1)
        if context and out and start > last + 1:
            out.append("--")
        for i in range(max(start, last + 1), end):
            out.append(f"{i + 1}{':' if i in matches else '-'}{lines[i][:MAX_LINE_COLUMNS]}")
        last = max(last, end - 1)
    return out


def _sort_newest_first(hits: list[FileHits], workspace: Path) -> None:
    root = os.path.realpath(workspace) + os.sep
    # Absolute paths (added directories) stay absolute: str concatenation would break them.
    hits.sort(
        key=lambda h: (newest_first_key(h.path if h.path[:1] == os.sep else root + h.path), h.path)
    )


def _format(
    args: GrepInput, hits: list[FileHits], shown: str, ctx: ToolContext, note: str
) -> ToolOutput:
    """Render the hits, cut on whole lines at the output cap with an exact notice."""
    total_matches = sum(h.matches for h in hits)
    source = {"path": shown, "pattern": args.pattern, "files": len(hits)}
    if args.output_mode != "files_with_matches":
        source["matching_lines"] = total_matches
    if not hits:
        text = f"no matches for {args.pattern!r} in {shown}"
        return ToolOutput(text="\n".join(filter(None, [text, note])), source=source)
    rows = _rows(args.output_mode, hits)
    files = plural(len(hits), "file")
    header = (
        f"{files} match"
        if args.output_mode == "files_with_matches"
        else f"{plural(total_matches, 'matching line')} in {files}"
    )
    budget = ctx.output_cap - NOTICE_ROOM - len(header)
    used = shown_rows = 0
    for line, *_ in rows:
        if shown_rows and used + len(line) + 1 > budget:
            break
        used += len(line) + 1
        shown_rows += 1
    while shown_rows < len(rows) and shown_rows > 1 and rows[shown_rows - 1][3]:
        shown_rows -= 1  # do not end on a file's path or the blank line before it
    body = "\n".join([header, *(line for line, *_ in rows[:shown_rows])])
    if shown_rows < len(rows):
        body += "\n" + _cut_notice(args, rows, shown_rows, hits, total_matches, header, ctx)
    return ToolOutput(text="\n".join(filter(None, [body, note])), source=source)


Row = tuple[str, int, int, bool]
"""An output line, the index of its file, how many matching lines it holds, and whether it
only introduces a file's block (its path, or the blank line before it)."""


def _rows(mode: OutputMode, hits: list[FileHits]) -> list[Row]:
    if mode == "files_with_matches":
        return [(h.path, i, 0, False) for i, h in enumerate(hits)]
    if mode == "count":
        return [(f"{h.path}: {h.matches}", i, h.matches, False) for i, h in enumerate(hits)]
    rows: list[Row] = []
    for i, h in enumerate(hits):
        if i:
            rows.append(("", i, 0, True))
        rows.append((h.path, i, 0, True))
        rows.extend((line, i, 1 if _MATCH_LINE.match(line) else 0, False) for line in h.lines)
    return rows


def _cut_notice(
    args: GrepInput,
    rows: list[Row],
    shown_rows: int,
    hits: list[FileHits],
    total_matches: int,
    header: str,
    ctx: ToolContext,
) -> str:
    spill = new_spill_path(ctx.data_dir, "grep")
    unsaved = save_spill("\n".join([header, *(line for line, *_ in rows)]) + "\n", spill)
    files_shown = rows[shown_rows - 1][1] + 1
    # The last file shown is complete only if the cut falls between two files.
    complete = files_shown - (rows[shown_rows][1] == rows[shown_rows - 1][1])
    if args.output_mode == "files_with_matches":
        what = f"showing files 1-{files_shown} of {len(hits)}; {len(hits) - files_shown} omitted"
    else:
        matches_shown = sum(row[2] for row in rows[:shown_rows])
        what = (
            f"showing {matches_shown} of {total_matches} matching lines, in {complete} "
            f"complete files of {len(hits)}; {total_matches - matches_shown} matching lines "
            "omitted"
        )
    rest = f"read the full result with {read_on(spill, shown_rows + 2)}"
    return f"[{what}. Narrow the search with a more specific pattern, `path` or `glob`" + (
        f", or {rest}]" if unsaved is None else f" ({unsaved})]"
    )
