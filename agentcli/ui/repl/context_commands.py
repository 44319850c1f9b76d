"""`/compact [INSTRUCTIONS]` and `/context`: the REPL's side of compaction
(`agentcli.context`).

`/compact` asks the session for one compaction now (the summary may be steered by the
instructions); what its request cost joins the session's totals in the status line. `/context`
shows what the model is sent now, part by part with its tokens, and which earlier messages a
summary stands for.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.text import Text

from agentcli.todo import TodoItem, checklist
from agentcli.ui.term.safe import visible
from agentcli.usage import cost_usd

if TYPE_CHECKING:
    from agentcli.ui.repl.host import ReplHost as Repl


async def compact(repl: Repl, arg: str) -> None:
    """Compact the conversation now; `arg`, if given, says what the summary should keep."""
    live = await repl.session_or_none()
    if live is None or repl.view is None:
        return
    if not live.messages:
        repl.say("nothing to compact: the conversation is empty")
        return
    state, repl.status.state = repl.status.state, "compacting"
    repl.status.task_started = time.monotonic()
    outcome, cancelled = await repl.run_cancellable(live.compact(arg.strip() or None))
    repl.status.task_started = None
    repl.status.state = state
    if outcome is None:
        if cancelled:
            repl.say("compaction cancelled: what the model is sent is unchanged")
        return
    call = outcome.call
    if call.spec is not None:
        known = call.usage_known and call.spec.price is not None
        repl.status.add_usage(call.usage, cost_usd(call.spec.price, call.usage) if known else None)
    if outcome.record is not None:  # the view said what it did (or, in a notice, why not)
        repl.say("/context shows what the model is sent now; the journal keeps every message")


async def context(repl: Repl, arg: str) -> None:
    """What the model is sent now, with its tokens."""
    live = await repl.session_or_none()
    if live is None:
        return
    report = live.context_report()
    text = Text()
    head, *rows = report.lines()
    text.append(f"  {visible(head, keep='')}\n", style="bold")
    for row in rows:
        text.append(f"{visible(row, keep='')}\n")
    items = [item for item in live.todos if isinstance(item, TodoItem)]
    if items:
        text.append("  todo list (pinned by a compaction):\n", style="dim")
        for line in checklist(items).splitlines():
            text.append(f"    {visible(line, keep='')}\n")
    text.append(f"  the full history: agentcli sessions show {live.session_id}\n", style="dim")
    repl.console.print(text, end="")
