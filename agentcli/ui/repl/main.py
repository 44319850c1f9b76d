"""Starting the REPL on the real terminal."""

from __future__ import annotations

import asyncio
import gc

from agentcli.session.options import SessionOptions
from agentcli.ui.repl.app import Repl
from agentcli.ui.repl.opening import check_resumable


def main(options: SessionOptions | None = None, first_task: str | None = None) -> int:
    """Run the REPL on the real terminal, starting with `first_task` if given; returns the exit
    code (2 for a configuration error, e.g. a broken config file, said in one line)."""
    import sys

    if not gc.isenabled():
        # The entry point parses options with the collector off (start-up objects live for
        # the whole process); a session that runs for hours needs it back on.
        gc.freeze()
        gc.enable()
    from agentcli.errors import UsageError
    from agentcli.ui.term.safe import safe_console, visible

    console = safe_console()
    options = options or SessionOptions()
    try:
        check_resumable(options)
        repl = Repl(options, console=console)
    except UsageError as exc:
        sys.stderr.write(f"agentcli: error: {visible(exc.message)}\n")
        if exc.hint:
            sys.stderr.write(f"  hint: {visible(exc.hint)}\n")
        return 2
    return asyncio.run(repl.run(first_task))
