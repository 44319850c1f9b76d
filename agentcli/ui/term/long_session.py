"""How a long session's events read, in one line each: the todo list's progress, how full the
context is, a compaction. `run`'s text progress and the REPL say them the same way (the caller
makes them visible: a todo item is the model's text).
"""

from __future__ import annotations

from agentcli.events import CompactionFinished, ContextFilling


def todo_line(todos: list[dict[str, str]]) -> str:
    """`2/5 done · now: Running the tests` (the list, in one line)."""
    done = sum(1 for item in todos if item.get("status") == "completed")
    now = next((i.get("activeForm", "") for i in todos if i.get("status") == "in_progress"), "")
    return f"{done}/{len(todos)} done" + (f" · now: {now}" if now else "")


def context_filling_text(event: ContextFilling) -> str:
    share = event.tokens / event.window if event.window else 0.0
    then = (
        f"; older turns are compacted at {event.compact_at:,}"
        if event.compact_at is not None
        else "; auto-compaction is off (/compact in the REPL)"
    )
    return f"the context is {share:.0%} full ({event.tokens:,} of {event.window:,} tokens){then}"


def compaction_text(event: CompactionFinished) -> str:
    return (
        f"({event.trigger}): {event.tokens_before:,} → ≈{event.tokens_after:,} tokens; "
        f"{event.messages_compacted} messages are sent as a summary of "
        f"{event.summary_length:,} characters (the journal keeps them)"
    )
