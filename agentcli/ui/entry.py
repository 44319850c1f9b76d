"""Console-script entry point. `--version` answers before anything heavy is imported."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--version"]:
        from agentcli import __version__

        sys.stdout.write(f"agentcli {__version__}\n")
        return 0
    from agentcli.ui.cli import run_app

    return run_app(args)
