"""What `agentcli` and `agentcli "TASK"` start: the REPL in a terminal, else one run (the
root command's options, parsed by `ui/cli.py`, turned into the REPL's or the run's)."""

from __future__ import annotations

import sys
from typing import Any


def interactive_or_run(task: str | None, options: dict[str, Any]) -> int:
    """The REPL (first running `task`) when stdin is a terminal; else one run, as
    `agentcli run [TASK]` would (the task, or stdin, or both)."""
    shared: dict[str, Any] = {
        "cwd": options.get("cwd"),
        "model": options.get("model"),
        "permission_mode": options.get("permission_mode"),
        "allow": list(options.get("allow") or []),
        "deny": list(options.get("deny") or []),
        "accept": list(options.get("accept") or []),
        "effort": options.get("effort"),
        "mcp_config": list(options.get("mcp_config") or []),
        "resume": options.get("resume"),
        "continue_": bool(options.get("continue_")),
        "provider": options.get("provider"),
        "trust_project": bool(options.get("trust_project")),
    }
    if sys.stdin is not None and sys.stdin.isatty():
        from agentcli.ui.repl.main import main as repl_main
        from agentcli.ui.repl.settings import ReplSettings

        return repl_main(ReplSettings(**shared), first_task=task)
    from agentcli.ui.run import RunOptions, run_command

    return run_command(RunOptions(task=task, **shared))
