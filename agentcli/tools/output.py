"""One output cap for every tool result, with truncation stated exactly.

A capped result says what range is shown, the total size, where the full text was saved (a spill
file in the session's data directory) and how to read on, so the model never mistakes partial
evidence for the whole.
"""

from __future__ import annotations

from pathlib import Path

DEFAULT_OUTPUT_CAP = 30_000


def _save_spill(text: str, spill_path: Path) -> None:
    spill_path.parent.mkdir(parents=True, exist_ok=True)
    spill_path.write_text(text, encoding="utf-8")


def cap_head(text: str, limit: int, spill_path: Path) -> str:
    """Keep the first `limit` characters (cut at a line boundary when possible)."""
    if len(text) <= limit:
        return text
    _save_spill(text, spill_path)
    head = text[:limit]
    cut = head.rfind("\n")
    if cut > limit // 2:
        head = head[: cut + 1]
    shown_lines = head.count("\n")
    total_lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    return (
        f"{head}\n[output truncated: showing characters 1-{len(head)} (lines 1-{shown_lines}) "
        f"of {len(text)} characters ({total_lines} lines). Full output saved to {spill_path}; "
        f'read on with read_file(path="{spill_path}", offset={shown_lines + 1})]'
    )


def cap_head_tail(text: str, limit: int, spill_path: Path) -> str:
    """Keep the beginning and the end (errors usually sit at the end of command output)."""
    if len(text) <= limit:
        return text
    _save_spill(text, spill_path)
    lines = text.splitlines(keepends=True)
    budget = limit // 2
    head: list[str] = []
    size = 0
    for line in lines:
        if size + len(line) > budget:
            break
        head.append(line)
        size += len(line)
    tail: list[str] = []
    size = 0
    for line in reversed(lines[len(head) :]):
        if size + len(line) > budget:
            break
        tail.append(line)
        size += len(line)
    tail.reverse()
    if not head and not tail:  # a single enormous line
        head, tail = [text[:budget]], [text[-budget:]]
        omitted = f"characters {budget + 1}-{len(text) - budget}"
    else:
        first_omitted = len(head) + 1
        last_omitted = len(lines) - len(tail)
        omitted = f"lines {first_omitted}-{last_omitted}"
    return (
        "".join(head) + f"\n[... {omitted} of {len(lines)} lines ({len(text)} characters) omitted. "
        f'Full output saved to {spill_path}; read it with read_file(path="{spill_path}", '
        "offset=N) ...]\n" + "".join(tail)
    )
