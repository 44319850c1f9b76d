"""`agentcli skills lint [PATH]`: the problems of skill and command files (`agentcli.skills.lint`)
on stdout, one line each, and exit 1 when there is any; the count of files checked on stderr."""

from __future__ import annotations

import sys
from pathlib import Path

from agentcli.paths import resolve_workspace
from agentcli.skills.lint import lint
from agentcli.ui.term.safe import visible


def lint_command(cwd: Path | None, path: Path | None, *, strict: bool = False) -> int:
    report = lint(resolve_workspace(cwd), path, strict=strict)
    for problem in report.problems:
        sys.stdout.write(visible(problem, keep="") + "\n")
    files = f"{report.checked} file{'' if report.checked == 1 else 's'} checked"
    count = len(report.problems)
    found = f"{count} problem{'' if count == 1 else 's'}" if count else "no problems"
    sys.stderr.write(f"agentcli: {files}: {found}\n")
    return 1 if report.problems else 0
