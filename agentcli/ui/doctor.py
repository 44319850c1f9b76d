"""`agentcli doctor`: what agentcli will use here, and what is missing.

Reports the model configuration (without importing the SDK), whether an API key is present
(never its value), the config files found, git and ripgrep, and what the OS sandbox can
enforce on this kernel, i.e. what auto mode will do.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

from agentcli import __version__
from agentcli.config import DEFAULT_MODEL, load_file_config
from agentcli.sandbox.support import sandbox_report
from agentcli.tools.ripgrep import find_rg


def doctor_lines(workspace: Path) -> list[str]:
    files = load_file_config(workspace)
    model = os.environ.get("AGENTCLI_MODEL") or files.get("model") or DEFAULT_MODEL
    key = "ANTHROPIC_API_KEY" if os.environ.get("ANTHROPIC_API_KEY") else None
    key = key or ("ANTHROPIC_AUTH_TOKEN" if os.environ.get("ANTHROPIC_AUTH_TOKEN") else None)
    lines = [
        f"agentcli {__version__} on Python {platform.python_version()} ({sys.executable})",
        f"workspace: {workspace}",
        f"model: {model}"
        + (
            f" (API at {os.environ['ANTHROPIC_BASE_URL']})"
            if "ANTHROPIC_BASE_URL" in os.environ
            else ""
        ),
        f"API key: {key} is set" if key else "API key: missing (export ANTHROPIC_API_KEY=…)",
        "config files: " + (", ".join(str(p) for p in files.sources) or "none"),
        f"permission mode: {files.get('permission_mode', 'default')}",
        f"git: {_git_version()}",
        f"ripgrep: {find_rg() or 'not found (grep and glob use the slower Python fallback)'}",
    ]
    return lines + sandbox_report()


def _git_version() -> str:
    try:
        done = subprocess.run(
            ["git", "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return "not found"
    return done.stdout.strip() or "not working"


def doctor_command(cwd: Path | None) -> int:
    workspace = (cwd or Path.cwd()).expanduser().resolve()
    for line in doctor_lines(workspace):
        sys.stdout.write(line + "\n")
    return 0
