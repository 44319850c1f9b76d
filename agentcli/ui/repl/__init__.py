"""The interactive REPL (`agentcli` with no arguments). See `app.py` for how it works.

Importing this package is cheap: the heavy parts load in the background after the prompt is up.
"""

from __future__ import annotations

import asyncio

from agentcli.ui.repl.app import Repl, ReplSettings

__all__ = ["Repl", "ReplSettings", "main"]


def main(settings: ReplSettings | None = None) -> int:
    """Run the REPL on the real terminal; returns the exit code."""
    from rich.console import Console

    console = Console(highlight=False, markup=False, emoji=False)
    repl = Repl(settings or ReplSettings(), console=console)
    return asyncio.run(repl.run())
