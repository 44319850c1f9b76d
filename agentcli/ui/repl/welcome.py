"""What the REPL says before its first prompt: its version and workspace, how to get help and
how to leave, and whether tasks can run at all (they need an Anthropic API key; slash commands
do not)."""

from __future__ import annotations

import os
from pathlib import Path

from rich.console import Console
from rich.text import Text

from agentcli import __version__


def has_api_key() -> bool:
    """Whether there are credentials for the Anthropic API (tasks need them)."""
    return bool(os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN"))


def welcome(console: Console, workspace: Path, *, needs_key: bool = True) -> None:
    """Greet, and say so at once when tasks cannot run for want of an Anthropic API key
    (`needs_key`: the session is on Anthropic's API)."""
    head = Text()
    head.append(f"agentcli {__version__}", style="bold")
    head.append(f" · {workspace}\n", style="dim")
    head.append("Type a task. /help lists commands, Ctrl-D exits.", style="dim")
    console.print(head)
    if needs_key and not has_api_key():
        console.print(
            Text(
                "ANTHROPIC_API_KEY is not set: slash commands work, but tasks need it.\n"
                "Set it (export ANTHROPIC_API_KEY=sk-ant-…) and start agentcli again.",
                style="yellow",
            )
        )
