"""What a subagent hands back: its final text as the `agent` call's result, then one line with
how it ended and what it spent (turns, tool calls, tokens, cost) and the files it changed; and
what the REPL and `/agents` say of it."""

from __future__ import annotations

from collections.abc import Sequence

from agentcli.task_scope import SubagentRecord
from agentcli.words import plural

NO_ANSWER = "(the subagent gave no answer)"
LISTED_FILES = 20


def cost_text(cost: float | None) -> str:
    return "cost unknown" if cost is None else f"${cost:.4f}"


def files_text(files: Sequence[str]) -> str:
    if not files:
        return "changed no files"
    shown = ", ".join(files[:LISTED_FILES])
    more = f" and {len(files) - LISTED_FILES} more" if len(files) > LISTED_FILES else ""
    return f"changed {shown}{more}"


def how_it_ended(record: SubagentRecord) -> str:
    if record.reason == "completed":
        return "completed"
    return f"stopped: {record.reason}" + (f" ({record.error})" if record.error else "")


def summary_line(record: SubagentRecord) -> str:
    """`[subagent explore completed · 3 turns · 5 tool calls · 12345 tokens · $0.0123 · …]`"""
    return (
        f"[subagent {record.agent_type} {how_it_ended(record)} · {plural(record.turns, 'turn')} "
        f"· {plural(record.tool_calls, 'tool call')} · "
        f"{plural(record.usage.total_tokens, 'token')} · {cost_text(record.cost_usd)} · "
        f"{files_text(record.changed_files)}]"
    )


def result_text(record: SubagentRecord, final_text: str | None) -> str:
    """The `agent` call's result: what the subagent said last, then its summary line. A
    subagent stopped by a limit hands back what it had, with the reason."""
    answer = final_text.strip() if final_text and final_text.strip() else NO_ANSWER
    return f"{answer}\n\n{summary_line(record)}"
