"""What `agentcli` and `agentcli "TASK"` start: the REPL in a terminal, else one run (the
root command's options, parsed by `ui/cli.py`, turned into the one typed `SessionOptions`)."""

from __future__ import annotations

import sys
from typing import Any

from agentcli.errors import UsageError
from agentcli.session.options import SessionOptions


def interactive_or_run(task: str | None, params: dict[str, Any]) -> int:
    """The REPL (first running `task`) when stdin is a terminal; else one run, as
    `agentcli run [TASK]` would (the task, or stdin, or both). `params`: the root command's
    parsed options (typer's context, whose values are typed by the signature of `root`)."""
    options = SessionOptions(
        cwd=params["cwd"],
        model=params["model"],
        effort=params["effort"],
        permission_mode=params["permission_mode"],
        allow=list(params["allow"]),
        deny=list(params["deny"]),
        accept=list(params["accept"]),
        mcp_config=list(params["mcp_config"]),
        resume=params["resume"],
        continue_=params["continue_"],
        provider=params["provider"],
        trust_project=params["trust_project"],
        max_turns=params["max_turns"],
        max_cost=params["max_cost"],
        max_tokens=params["max_tokens"],
        timeout=params["timeout"],
        accept_retries=params["accept_retries"],
        output_format=params["output_format"],
        quiet=params["quiet"],
    )
    if sys.stdin is not None and sys.stdin.isatty():
        if options.quiet or options.output_format != "text":
            raise UsageError(
                "-q and --output-format are for a run without a terminal: the REPL shows its "
                "work on the terminal",
                hint='for one task in this terminal: agentcli run "TASK" --output-format json',
            )
        from agentcli.ui.repl.main import main as repl_main

        return repl_main(options, first_task=task)
    from agentcli.ui.run import run_command

    options.task = task
    return run_command(options)
