"""`agentcli mcp list`: the MCP servers configured for a workspace, where each came from, and,
once started, their status and tools (`--no-connect`: without starting them)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from agentcli.config import load_settings
from agentcli.mcp.config import configured_servers
from agentcli.mcp.listing import server_lines
from agentcli.paths import resolve_workspace
from agentcli.ui.term.safe import visible


def mcp_list(
    cwd: Path | None,
    mcp_config: Sequence[Path] = (),
    *,
    connect: bool = True,
) -> int:
    """Print each server's block (see `agentcli.mcp.listing`); 0, or 2 for a broken config."""
    workspace = resolve_workspace(cwd)
    settings = load_settings(workspace)
    configured = configured_servers(settings, workspace, mcp_config)
    if connect and configured.servers:
        from agentcli.mcp.hub import McpHub

        hub = McpHub()
        try:
            hub.wait(hub.start(list(configured.servers.values()), workspace))
            lines = server_lines(configured, hub.servers)
        finally:
            hub.close()
    else:
        lines = server_lines(configured)
    sys.stdout.write("".join(f"{visible(line)}\n" for line in lines))
    return 0
