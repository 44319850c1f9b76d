"""`!command`: the user runs a shell command in the workspace without the model (Claude Code's
bash mode), sees its output, and the next message carries it to the model as context.

The command is the user's own, typed at their own prompt, so it runs as they would run it in
their shell: unconfined, without a permission question, with `$SHELL -c` (or `/bin/sh`) in the
workspace, stdin closed, agentcli's own credentials removed from the environment. Ctrl-C (or
Esc) stops it and its whole process group, as it does a task. Its output is shown with every
control character escaped (`agentcli.ui.term.safe`) and kept, capped, for the next message.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text

from agentcli.tools.output import HeadTailCollector, new_spill_path
from agentcli.tools.process_group import run_in_group
from agentcli.ui.term.safe import visible

if TYPE_CHECKING:
    from agentcli.ui.repl.host import ReplHost as Repl

CONTEXT_BYTES = 20_000
"""How much of a command's output is kept for the model (its head and tail)."""
SHOWN_LINES = 200
TIMEOUT_S = 24 * 3600.0
"""The user stops a command with Ctrl-C; this only bounds a forgotten one."""


def shell_argv(command: str) -> list[str]:
    shell = os.environ.get("SHELL") or "/bin/sh"
    return [shell if Path(shell).is_absolute() else "/bin/sh", "-c", command]


def context_note(command: str, exit_code: int | None, output: str) -> str:
    """What the model is told, before the user's next message, about a command they ran."""
    status = "was stopped" if exit_code is None else f"exited {exit_code}"
    return (
        f"[I ran a shell command myself in the workspace: `{command}`; it {status}. "
        f"Its output:\n```\n{output.rstrip()}\n```]"
    )


def with_context(notes: list[str], prompt: str) -> str:
    """`prompt` preceded by the notes of the commands run since the last message (emptied)."""
    if not notes:
        return prompt
    text = "\n\n".join([*notes, prompt])
    notes.clear()
    return text


async def run_command(repl: Repl, command: str) -> None:
    """Run `!command`: show what it printed, keep it for the next message."""
    if not command.strip():
        repl.error("type a command after !, e.g. !git status")
        return
    await repl.view_now()  # the command is the user's: it needs no session to run
    collector = HeadTailCollector(CONTEXT_BYTES, new_spill_path(repl.data_dir, "user-shell"))
    repl.console.print(Text(f"  $ {visible(command, keep='')}", style="bold"), soft_wrap=True)
    result, cancelled = await repl.run_cancellable(
        run_in_group(
            shell_argv(command), cwd=repl.workspace, timeout_s=TIMEOUT_S, collector=collector
        )
    )
    if result is None:
        if cancelled:
            repl.say("command stopped; nothing was added to the conversation")
        return
    output = result.output.text
    lines = output.rstrip("\n").split("\n") if output.strip() else []
    shown = Text()
    for line in lines[:SHOWN_LINES]:
        shown.append("  " + visible(line, keep="\t", crlf=False) + "\n")
    if len(lines) > SHOWN_LINES:
        shown.append(f"  … {len(lines) - SHOWN_LINES} more lines\n", style="dim")
    repl.console.print(shown, end="", soft_wrap=True)
    code = result.exit_code
    style = "green" if code == 0 else "red"
    status = "stopped (timeout)" if code is None else f"exit {code}"
    repl.console.print(Text(f"  {status} · added to the context of your next message", style=style))
    repl.shell_notes.append(context_note(command, code, output))
