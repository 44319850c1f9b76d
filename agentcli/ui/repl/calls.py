"""How one tool call looks in the REPL: a compact line (tool, target, status, duration) and,
for file edits, the diff of what changed.

The diff is taken from the file itself (its content when the call started and when it ended),
so it shows what really happened on disk, whatever tool made the change.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.text import Text

from agentcli.safe_read import Inside, read_bytes
from agentcli.truncation import one_line
from agentcli.ui.safe import visible

FILE_TOOLS = frozenset({"write_file", "edit_file"})
MAX_DIFF_LINES = 40
MAX_IMAGE_BYTES = 1_000_000


def call_target(inp: dict[str, Any], width: int = 60) -> str:
    """The one thing a call is about: its path, command or pattern, on one line."""
    for key in ("path", "command", "pattern", "url", "query"):
        value = inp.get(key)
        if isinstance(value, str) and value:
            return one_line(value, width)
    return ""


def read_image(workspace: Path, inp: dict[str, Any]) -> bytes | None:
    """The bytes of the file a call names, or None when absent, too large or unreadable."""
    raw = inp.get("path")
    if not isinstance(raw, str) or not raw:
        return None
    path = Path(raw) if Path(raw).is_absolute() else workspace / raw
    try:  # as the tools read it: a regular file of the workspace, bounded (`safe_read`)
        return read_bytes(path, inside=Inside.of(workspace), limit=MAX_IMAGE_BYTES)
    except OSError:
        return None


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


def call_line(
    name: str,
    target: str,
    *,
    status: str,
    is_error: bool,
    duration_s: float,
    detail: str = "",
) -> Text:
    """`✓ read_file src/app.py · 0.02s`, `✗ shell pytest -q · 2.10s · exit 1…`."""
    mark, style = ("✗", "red") if is_error else ("✓", "green")
    if status == "denied":
        mark, style = ("⊘", "yellow")
    line = Text("  ")
    line.append(mark, style=style)
    line.append(f" {visible(name, keep='')}", style="bold")
    if target:
        line.append(f" {visible(target, keep='')}")
    line.append(f" · {duration_s:.2f}s", style="dim")
    if status not in ("succeeded", "failed"):
        line.append(f" · {status}", style=style)
    if detail:
        line.append(f" · {visible(detail, keep='')}", style="dim" if not is_error else style)
    return line
