"""Diffs as agentcli draws them on a terminal: the REPL's edits and `/diff`, and the previews of
permission prompts (in `run` too). Every line goes through `ui.term.safe`: a file's content is
untrusted text.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from rich.text import Text

from agentcli.ui.term.safe import visible

MAX_DIFF_LINES = 40


@dataclass(frozen=True, slots=True)
class FileDiff:
    path: str
    lines: list[str]
    added: int
    removed: int

    @property
    def stat(self) -> str:
        return f"+{self.added} -{self.removed}"


def file_diff(path: str, before: bytes | None, after: bytes | None) -> FileDiff | None:
    """The unified diff between two versions of a text file; None if nothing changed or
    either side is binary."""
    if before == after or after is None:
        return None
    try:
        old = (before or b"").decode().splitlines()
        new = after.decode().splitlines()
    except UnicodeDecodeError:
        return None
    lines = list(
        difflib.unified_diff(
            old,
            new,
            fromfile=f"a/{path}" if before is not None else "/dev/null",
            tofile=f"b/{path}",
            lineterm="",
            n=2,
        )
    )
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    return FileDiff(path=path, lines=lines, added=added, removed=removed)


def _style(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "bold"
    if line.startswith("+"):
        return "green"
    if line.startswith("-"):
        return "red"
    if line.startswith("@@"):
        return "cyan"
    return ""


_RUN_NAMES = {"green": "added", "red": "removed", "": "unchanged", "cyan": "hunk", "bold": "header"}


def _runs(lines: list[str]) -> list[tuple[str, list[str]]]:
    """Consecutive lines of the same kind (added, removed, context…), in order."""
    runs: list[tuple[str, list[str]]] = []
    for line in lines:
        style = _style(line)
        if runs and runs[-1][0] == style:
            runs[-1][1].append(line)
        else:
            runs.append((style, [line]))
    return runs


def _clip_runs(runs: list[tuple[str, list[str]]], max_lines: int) -> int:
    """The most lines each run may show so that the diff, with one `… N more` line per
    clipped run, fits in `max_lines`; at least 2, so both sides of every change show."""
    cap = max(len(lines) for _, lines in runs)
    while cap > 2:
        shown = sum(min(len(lines), cap) + (len(lines) > cap) for _, lines in runs)
        if shown <= max_lines:
            break
        cap -= 1
    return cap


def diff_text(lines: list[str], *, max_lines: int = MAX_DIFF_LINES, indent: str = "    ") -> Text:
    """Diff lines coloured the usual way (colour is dropped under NO_COLOR). A diff longer
    than `max_lines` shows the start of every run of removed, added and unchanged lines, and
    says exactly how many of each it leaves out: both sides of a change always show."""
    text = Text(no_wrap=False)
    runs = _runs(lines)
    cap = _clip_runs(runs, max_lines) if len(lines) > max_lines else len(lines)
    printed = 0
    for index, (style, run) in enumerate(runs):
        if printed >= max_lines:
            rest = [line for _, later in runs[index:] for line in later]
            added = sum(1 for line in rest if _style(line) == "green")
            removed = sum(1 for line in rest if _style(line) == "red")
            text.append(
                f"{indent}… {len(rest)} more diff lines (+{added} -{removed})\n", style="dim"
            )
            break
        for line in run[:cap]:
            text.append(indent + visible(line, keep="\t") + "\n", style=style)
        printed += min(cap, len(run))
        if len(run) > cap:
            name = _RUN_NAMES[style]
            text.append(f"{indent}… {len(run) - cap} more {name} lines\n", style=f"dim {style}")
            printed += 1
    return text
