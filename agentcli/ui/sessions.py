"""Sessions for people: `agentcli sessions list|show|export` and `agentcli undo`, rendered
from what the session core (`agentcli.session.records`) reads and does. Nothing here imports
the model SDK or pydantic: these commands must start fast. `sessions list/show/export` only
read the journal and take no lock; undoing a task of a session another live process uses is
refused (SessionBusyError, exit 2, as for `run --resume`).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from agentcli.compaction_record import CompactionRecord
from agentcli.errors import UndoError
from agentcli.fsnames import json_text
from agentcli.paths import resolve_workspace
from agentcli.session import records
from agentcli.truncation import one_line
from agentcli.ui.term.safe import visible

SHORT_TEXT = 300
TEXT_LINES = 40
"""How many lines of what was said `sessions show` prints (`export` has all of it)."""
RESULT_LINES = 12
"""How many lines of each tool result `sessions show` prints."""


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _when(stamp: float | None) -> str:
    return "-" if stamp is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp))


def _short(text: str, limit: int = SHORT_TEXT) -> str:
    return one_line(text, limit)


def sessions_list(workspace: Path | None, all_: bool, out: TextIO | None = None) -> int:
    """`agentcli sessions list`: this workspace's sessions (all with `all_`), newest first."""
    out = out or sys.stdout  # the stream of the moment, not the one of the import
    where = None if all_ else resolve_workspace(workspace)
    rows = records.list_sessions(where)
    if not rows:
        scope = "" if all_ else f" in {where} (--all lists every workspace)"
        out.write(visible(f"no sessions{scope}") + "\n")
        return 0
    for row in rows:
        title = _short(row.title or "", 60)
        place = f"  {row.workspace}" if all_ else ""
        out.write(
            visible(
                f"{row.id}  {_when(row.updated_at)}  {row.model}  {_count(row.tasks, 'task')}  "
                f"{_count(row.messages, 'message')}  {row.last_state or '-'}{place}  {title}",
                keep="",
            )
            + "\n"
        )
    return 0


def sessions_show(session_id: str, out: TextIO | None = None) -> int:
    """`agentcli sessions show ID`: the conversation, readable, with every call's status."""
    out = out or sys.stdout
    recorded = records.transcript(session_id)
    row = recorded.session
    calls = {c.call_id: c for c in recorded.calls}
    tasks = {t.id: t for t in recorded.tasks}
    out.write(
        visible(
            f"session {row.id}\n  workspace {row.workspace}\n  model {row.model}\n"
            f"  created {_when(row.created_at)}, updated {_when(row.updated_at)}\n"
        )
    )
    nested = _Nested(recorded, calls)
    current_task = None
    marks = {record.point: record for record in recorded.compactions}
    for message in recorded.messages:
        record = marks.get(message["seq"])
        if record is not None:
            out.write(visible(_compaction_mark(record)) + "\n")
        task = tasks.get(message["task_id"] or "")
        if task is not None and task.id != current_task:
            current_task = task.id
            verdict = f"{task.state}" + (f" ({task.reason})" if task.reason else "")
            if task.undone_at is not None:
                verdict += f", undone {_when(task.undone_at)}"
            out.write(f"\n== task {task.id} [{verdict}]\n")
        for line in _message_lines(message["role"], message["content"], calls, nested):
            out.write(visible(line) + "\n")  # the model's words, tool inputs and outputs
    return 0


class _Nested:
    """The subagents of a session's `agent` calls, shown under each call, indented."""

    def __init__(self, recorded: records.Transcript, calls: dict[str, Any]) -> None:
        self.children: dict[str, list[records.ChildTaskRow]] = {}
        for child in recorded.subagents:
            self.children.setdefault(child.parent_call_id, []).append(child)
        self.messages = recorded.subagent_messages
        self.calls = calls

    def lines(self, call_id: str) -> list[str]:
        lines = []
        for child in self.children.get(call_id, []):
            verdict = child.state + (f" ({child.reason})" if child.reason else "")
            cost = "cost unknown" if child.cost_usd is None else f"${child.cost_usd:.4f}"
            lines.append(
                f"     == subagent {child.agent_type} {child.id} [{verdict}] "
                f"{_short(child.description, 80)} · {_count(child.turns, 'turn')} · "
                f"{child.usage.total_tokens} tokens · {cost} · {child.model}"
            )
            for message in self.messages.get(child.id, []):
                own = _message_lines(message["role"], message["content"], self.calls, self)
                lines += ["     " + line for line in own]
        return lines


def _indented(text: str, first: str, limit: int) -> list[str]:
    """`text` as lines under a `first` prefix (the rest indented to match), at most `limit`
    of them and then how many more there are."""
    lines = text.rstrip().splitlines() or [""]
    shown = [first + lines[0], *(" " * len(first) + line for line in lines[1:limit])]
    if len(lines) > limit:
        shown.append(" " * len(first) + f"… {len(lines) - limit} more lines")
    return shown


def _compaction_mark(record: CompactionRecord) -> str:
    """Where a compaction's point is: from here on the model was sent its summary in place of
    the messages above (which stay in the journal, and here)."""
    return (
        f"\n-- compacted ({record.trigger.value}, {_when(record.created_at)}, by {record.model}): "
        f"the {record.point} messages above were sent to the model as this summary from here on "
        f"({record.tokens_before:,} -> ~{record.tokens_after:,} tokens):\n"
        f"   {_short(record.summary, 600)}"
    )


def _message_lines(
    role: str, blocks: Sequence[Any], calls: dict[str, Any], nested: _Nested | None = None
) -> list[str]:
    lines = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text" and block.get("text", "").strip():
            lines += _indented(block["text"], f"{role}: ", TEXT_LINES)
        elif kind == "tool_use":
            call = calls.get(block.get("id"))
            status = call.status.value if call is not None else "no record"
            if call is not None and call.replayed:
                status += ", replayed"
            arguments = _short(json.dumps(block.get("input", {}), ensure_ascii=False), 160)
            lines.append(f"  -> {block.get('name')} {arguments} [{status}]")
            if nested is not None:  # a subagent's own history, under its `agent` call
                lines += nested.lines(str(block.get("id")))
        elif kind == "tool_result":
            content = block.get("content")
            text = content if isinstance(content, str) else json.dumps(content)
            mark = "error" if block.get("is_error") else "ok"
            lines += _indented(text, f"  <- {mark}: ", RESULT_LINES)
        elif kind in ("thinking", "redacted_thinking"):
            lines.append(f"{role}: ({kind})")
        elif kind not in ("text",):
            lines.append(f"{role}: ({kind} block)")
    return lines


def sessions_export(session_id: str, out: TextIO | None = None) -> int:
    """`agentcli sessions export ID`: the whole session as one JSON object."""
    (out or sys.stdout).write(json_text(records.export(session_id), indent=2) + "\n")
    return 0


def undo_command(
    workspace: Path | None,
    task_id: str | None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """`agentcli undo [--task ID]`: 0 when restored, 1 when refused (with the reason); a
    UsageError for an id that names no task, SessionBusyError while another process uses its
    session (both exit 2, as for `run --resume`)."""
    out, err = out or sys.stdout, err or sys.stderr
    where = resolve_workspace(workspace)
    try:
        result = records.undo(where, task_id)
    except UndoError as exc:
        err.write(f"agentcli: undo: {visible(exc.message)}\n")
        for name in exc.files:
            err.write(f"  {visible(name, keep='')}\n")
        return 1
    if not result.restored and not result.removed:
        out.write(f"task {result.task_id} left no file changes; nothing to undo\n")
        return 0
    out.write(f"undid task {result.task_id}:\n")
    for name in result.restored:
        out.write(f"  restored {visible(name, keep='')}\n")
    for name in result.removed:
        out.write(f"  removed {visible(name, keep='')}\n")
    return 0
