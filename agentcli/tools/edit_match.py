"""Exact-match editing for `edit_file`, and the help the model gets when a match fails.

Pure functions over strings, so they can be property-tested: `apply_edit` replaces `old` by `new`
exactly (once, or everywhere with `replace_all`), writing both in the file's line endings;
no match reports the closest lines, several matches report how many and where.
"""

from __future__ import annotations

import difflib
import itertools
import re
from dataclasses import dataclass

from agentcli.errors import ToolError, ToolErrorKind
from agentcli.tools.output import split_lines
from agentcli.tools.textfile import with_newline

MAX_LISTED_MATCHES = 10
MAX_SCORED_WINDOWS = 4000
_LINE_NUMBER_PREFIX = re.compile(r"^\s*\d+\t")


@dataclass(frozen=True, slots=True)
class Edit:
    text: str
    """The whole new content."""
    replacements: int
    first_line: int
    """1-based line of the first replacement in the old content."""


def find_all(text: str, needle: str) -> list[int]:
    """Start offsets of every occurrence of `needle`, overlapping ones included (two
    overlapping occurrences make an edit just as ambiguous as two separate ones)."""
    positions = []
    start = text.find(needle)
    while start >= 0:
        positions.append(start)
        start = text.find(needle, start + 1)
    return positions


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def apply_edit(
    text: str, old: str, new: str, *, replace_all: bool, newline: str, shown: str
) -> Edit:
    """Replace `old` by `new` in `text`. Raises ToolError (not_found / conflict) with advice."""
    if not old:
        raise ToolError(
            ToolErrorKind.INVALID_ARGUMENTS,
            "old_string is empty; give the exact text to replace (use write_file to create "
            "or fully rewrite a file)",
        )
    if old == new:
        raise ToolError(ToolErrorKind.INVALID_ARGUMENTS, "old_string and new_string are identical")
    old_in_file, new_in_file = with_newline(old, newline), with_newline(new, newline)
    positions = find_all(text, old_in_file)
    if not positions and old_in_file != old:
        # A file with mixed line endings: the model's text may match exactly as given.
        old_in_file, new_in_file = old, new
        positions = find_all(text, old)
    if not positions:
        raise ToolError(ToolErrorKind.NOT_FOUND, no_match_message(text, old, shown))
    if len(positions) > 1 and not replace_all:
        raise ToolError(
            ToolErrorKind.CONFLICT, many_matches_message(text, positions, shown, old_in_file)
        )
    if replace_all:
        count = text.count(old_in_file)
        result = text.replace(old_in_file, new_in_file)
    else:
        count = 1
        result = text.replace(old_in_file, new_in_file, 1)
    return Edit(text=result, replacements=count, first_line=line_of(text, positions[0]))


def many_matches_message(text: str, positions: list[int], shown: str, old: str) -> str:
    lines = [line_of(text, p) for p in positions]
    listed = ", ".join(str(n) for n in lines[:MAX_LISTED_MATCHES])
    more = f" and {len(lines) - MAX_LISTED_MATCHES} more" if len(lines) > MAX_LISTED_MATCHES else ""
    overlap = (
        " (some occurrences overlap)"
        if any(b - a < len(old) for a, b in itertools.pairwise(positions))
        else ""
    )
    return (
        f"old_string occurs {len(positions)} times in {shown}{overlap}, starting at lines "
        f"{listed}{more}. Include more surrounding lines in old_string so it matches exactly "
        "once, or set replace_all=true to replace every occurrence."
    )


def no_match_message(text: str, old: str, shown: str) -> str:
    """Why `old` did not match, with the closest lines of the file to copy from."""
    lines = split_lines(text.replace("\r\n", "\n"))
    wanted = split_lines(old.replace("\r\n", "\n")) or [old]
    head = f"old_string was not found in {shown}."
    if all(_LINE_NUMBER_PREFIX.match(line) for line in wanted):
        return (
            f"{head} It seems to include read_file's line-number prefixes (`N<TAB>`); "
            "old_string must be the file's text without them."
        )
    start = _whitespace_insensitive_match(lines, wanted)
    if start is not None:
        return (
            f"{head} It matches {_lines(start, start + len(wanted))} if whitespace is "
            "ignored, so the indentation or spacing differs. The file has:\n"
            f"{_numbered(lines, start, start + len(wanted))}\nCopy the text exactly, "
            "tabs and spaces included."
        )
    best = _closest_window(lines, wanted)
    if best is None:
        return f"{head} Nothing in the file resembles it; read_file {shown} to see its content."
    start, ratio = best
    end = min(len(lines), start + max(len(wanted), 1))
    return (
        f"{head} The closest text is at {_lines(start, end)} ({ratio:.0%} similar):\n"
        f"{_numbered(lines, start, end)}\nCopy the exact current text from the file "
        "(read_file it if it may have changed) and retry."
    )


def _whitespace_insensitive_match(lines: list[str], wanted: list[str]) -> int | None:
    stripped = [" ".join(line.split()) for line in wanted]
    if not any(stripped):
        return None
    count = len(wanted)
    for start in range(len(lines) - count + 1):
        if all(" ".join(lines[start + i].split()) == stripped[i] for i in range(count)):
            return start
    return None


def _closest_window(lines: list[str], wanted: list[str]) -> tuple[int, float] | None:
    """The window of len(wanted) lines most similar to `wanted`, if any is at least 40% alike.
    Bounded: only the first MAX_SCORED_WINDOWS windows are scored in full."""
    size = max(1, len(wanted))
    target = "\n".join(wanted)
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(target)
    best: tuple[int, float] | None = None
    floor = 0.4
    for start in range(max(1, len(lines) - size + 1))[:MAX_SCORED_WINDOWS]:
        matcher.set_seq1("\n".join(lines[start : start + size]))
        if matcher.real_quick_ratio() <= floor or matcher.quick_ratio() <= floor:
            continue
        ratio = matcher.ratio()
        if ratio > floor:
            best, floor = (start, ratio), ratio
    return best


def _lines(start: int, end: int) -> str:
    return f"line {end}" if end - start <= 1 else f"lines {start + 1}-{end}"


def _numbered(lines: list[str], start: int, end: int) -> str:
    return "\n".join(f"{n + 1}\t{lines[n]}" for n in range(start, min(end, len(lines))))


def small_diff(
    before: str | None, after: str, shown: str, *, context: int = 2, max_lines: int | None = 80
) -> str:
    """A unified diff of the change, computed only around the part that changed; `before` is
    None for a file that does not exist yet. `max_lines=None` keeps the whole diff (the
    permission prompt pages through it)."""
    old = split_lines((before or "").replace("\r\n", "\n"))
    new = split_lines(after.replace("\r\n", "\n"))
    prefix = 0
    while prefix < min(len(old), len(new)) and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < min(len(old), len(new)) - prefix
        and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]
    ):
        suffix += 1
    first = max(0, prefix - context)
    keep = max(0, suffix - context)
    diff = list(
        difflib.unified_diff(
            old[first : len(old) - keep],
            new[first : len(new) - keep],
            f"a/{shown}" if before is not None else "/dev/null",
            f"b/{shown}",
            n=context,
            lineterm="",
        )
    )
    diff = [_shift_hunk(line, first) for line in diff]
    if max_lines is not None and len(diff) > max_lines:
        cut = len(diff) - max_lines
        diff = [*diff[:max_lines], f"... (diff cut: {cut} more lines; read_file to see the result)"]
    return "\n".join(diff)


_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


def _shift_hunk(line: str, offset: int) -> str:
    match = _HUNK.match(line)
    if match is None or offset == 0:
        return line
    old_start, old_len, new_start, new_len = match.groups()
    return (
        f"@@ -{int(old_start) + offset}{old_len or ''} "
        f"+{int(new_start) + offset}{new_len or ''} @@{line[match.end() :]}"
    )
