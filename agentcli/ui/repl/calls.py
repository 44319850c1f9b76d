"""How one tool call looks in the REPL: a compact line (tool, target, status, duration), and
what a file edit's diff is taken from: the file itself (its content when the call started and
when it ended), so it shows what really happened on disk, whatever tool made the change
(`ui.term.diffs` draws it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text

from agentcli.safe_read import Inside, read_bytes
from agentcli.truncation import one_line
from agentcli.ui.term.safe import visible

FILE_TOOLS = frozenset({"write_file", "edit_file"})
MAX_IMAGE_BYTES = 1_000_000


def call_target(inp: dict[str, Any], width: int = 60) -> str:
    """The one thing a call is about: its path, command or pattern (a subagent's job: its
    description), on one line."""
    for key in ("path", "command", "pattern", "url", "query", "description"):
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
