"""`/resume` and `agentcli --resume` without an id: a numbered list of this workspace's other
sessions (first prompt, age, state of the last task), and a question which one to continue;
Enter takes the newest, Esc or Ctrl-C none."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.shortcuts import PromptSession
from rich.cells import cell_len
from rich.text import Text

from agentcli.errors import UsageError
from agentcli.ui.term.safe import visible

if TYPE_CHECKING:
    from agentcli.session.records import SessionRow
    from agentcli.ui.repl.host import ReplHost as Repl

LISTED = 10


def age(seconds: float) -> str:
    """`45s`, `12m`, `3h`, `5d` ago."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return f"{max(0, int(seconds))}s ago"


def _described(session_id: str) -> tuple[str, str]:
    """The state of the session's last task, and its first prompt on one line (shortened)."""
    from agentcli.session import records

    tasks = records.tasks(session_id)
    first = visible(" ".join((tasks[0].prompt if tasks else "").split()), keep="")
    state = tasks[-1].state if tasks else "no tasks"
    return state, (first[:50] + ("…" if len(first) > 50 else "")) or "(no prompt)"


def _listing(rows: list[SessionRow]) -> Text:
    described = [_described(row.id) for row in rows]
    width = max(cell_len(first) for _, first in described)  # wide characters take two cells
    text = Text()
    for number, (row, (state, first)) in enumerate(zip(rows, described, strict=True), start=1):
        text.append(f"  {number:>2}  ", style="bold")
        text.append(f"{age(time.time() - row.updated_at):>8}  {state:<12} ", style="dim")
        text.append(first + " " * (width - cell_len(first)))
        text.append(f"  {row.id[:10]}\n", style="dim")
    return text


def nothing_to_pick(workspace: Path) -> UsageError:
    return UsageError(
        "no earlier session in this workspace to resume",
        hint=f"the workspace is {workspace}; "
        "`agentcli sessions list --all` lists every workspace's sessions",
    )


def _escape_cancels() -> KeyBindings:
    bindings = KeyBindings()

    @bindings.add("escape", eager=True)
    def _cancel(event: KeyPressEvent) -> None:
        event.app.exit(exception=KeyboardInterrupt())

    return bindings


async def pick_session(repl: Repl) -> str | None:
    """The id of the session the user picks; None (after saying so) when they pick none.
    UsageError when the workspace has no other session to pick."""
    from agentcli.session import records

    rows = [
        row
        for row in records.list_sessions(repl.workspace, limit=LISTED + 1)
        if row.id != repl.session_id
    ][:LISTED]
    if not rows:
        raise nothing_to_pick(repl.workspace)
    text = Text(f"  sessions in {visible(str(repl.workspace))}, newest first:\n", style="dim")
    repl.console.print(text.append_text(_listing(rows)), end="")
    session: PromptSession[str] = PromptSession(key_bindings=_escape_cancels(), **repl.io)
    question = f"  resume which? [1-{len(rows)}, Enter: 1, Esc: none] "
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
