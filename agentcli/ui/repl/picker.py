"""`/resume` without an id: a numbered list of this workspace's other sessions (first prompt,
age, state of the last task), and a question which one to continue; Enter takes the newest."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from prompt_toolkit.shortcuts import PromptSession
from rich.text import Text

from agentcli.ui.safe import visible

if TYPE_CHECKING:
    from agentcli.ui.repl.host import ReplHost as Repl

LISTED = 10


def age(seconds: float) -> str:
    """`45s`, `12m`, `3h`, `5d` ago."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return f"{max(0, int(seconds))}s ago"


def _line(number: int, session_id: str, updated_at: float) -> Text:
    from agentcli.session import records

    tasks = records.transcript(session_id).tasks
    first = visible(" ".join((tasks[0].prompt if tasks else "").split()), keep="")
    state = tasks[-1].state if tasks else "no tasks"
    line = Text(f"  {number:>2}  ", style="bold")
    line.append(f"{age(time.time() - updated_at):>8}  {state:<12} ", style="dim")
    line.append((first[:50] + ("…" if len(first) > 50 else "")) or "(no prompt)")
    line.append(f"  {session_id[:10]}\n", style="dim")
    return line


async def pick_session(repl: Repl) -> str | None:
    """The id of the session the user picks; None when there is none or they cancel."""
    from agentcli.session import records

    rows = [
        row
        for row in records.list_sessions(repl.workspace, limit=LISTED + 1)
        if row.id != repl.session_id
    ][:LISTED]
    if not rows:
        repl.error("no earlier session in this workspace to resume")
        return None
    text = Text()
    for number, row in enumerate(rows, start=1):
        text.append_text(_line(number, row.id, row.updated_at))
    repl.console.print(text, end="")
    session: PromptSession[str] = PromptSession(**repl.io)
    question = f"  resume which? [1-{len(rows)}, Enter: 1, Ctrl-C: none] "
    try:
        answer = (await session.prompt_async(question, handle_sigint=False)).strip()
    except (KeyboardInterrupt, EOFError):
        answer = "none"
    if not answer:
        return rows[0].id
    if answer.isdigit() and 1 <= int(answer) <= len(rows):
        return rows[int(answer) - 1].id
    repl.say("no session resumed")
    return None
