"""`agentcli hooks [approve]`: the workspace's hooks from the command line (`agentcli.hooks`):
every hook with where it is configured and whether it runs; approving the repository's set."""

from __future__ import annotations

import sys
from pathlib import Path

from agentcli.config import load_settings
from agentcli.hooks.approval import approve as record_approval
from agentcli.hooks.listing import approved_lines, hook_lines, workspace_catalog
from agentcli.paths import resolve_workspace
from agentcli.ui.term.safe import visible


def hooks_command(cwd: Path | None, *, approve: bool = False) -> int:
    """List the hooks of the workspace `cwd` (default: the current directory), or approve
    the repository's current set of them."""
    workspace = resolve_workspace(cwd)
    catalog = workspace_catalog(load_settings(workspace), workspace)
    if approve and catalog.digest is not None:
        record_approval(workspace, catalog.digest)
        catalog = catalog.approved_now()
    lines = approved_lines(catalog) if approve else hook_lines(catalog)
    for line in lines:
        sys.stdout.write(visible(line) + "\n")
    return 0
