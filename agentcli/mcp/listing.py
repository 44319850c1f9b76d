"""What `agentcli mcp list` and the REPL's `/mcp` show: each configured server, where it came
from, its status and its tools (as the model sees them), and the servers of a `.mcp.json` that
was ignored because the workspace is not trusted."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from agentcli.mcp.config import Configured

if TYPE_CHECKING:
    from agentcli.mcp.hub import Server


def server_lines(configured: Configured, running: Mapping[str, Server] | None = None) -> list[str]:
    """One block per server: `NAME  (source)`, what it runs, its status and tools. `running`:
    the hub's servers (None: not connected, every server is `configured`)."""
    from agentcli.mcp.tool import tool_name

    lines: list[str] = []
    for name, config in configured.servers.items():
        entry = config.entry
        lines.append(f"{name}  ({config.source})")
        lines.append(f"  {entry.transport}: {entry.target}")
        server = (running or {}).get(name)
        if server is None or server.config != config:
            lines.append("  status: configured (not started)")
            continue
        if server.status != "ready":
            lines.append(f"  status: {server.status}: {server.error or 'starting'}")
            tail = server.stderr_tail()
            lines.extend(f"    {line}" for line in tail.splitlines()[-5:])
            continue
        lines.append(f"  status: ready, {len(server.tools)} tools")
        for remote in server.tools:
            read = entry.trust_read_only and remote.read_only
            note = "  (read-only: runs without asking)" if read else ""
            lines.append(f"    {tool_name(name, remote.name)}{note}")
    for name in configured.ignored:
        lines.append(f"{name}  ({configured.ignored_file})")
        lines.append("  status: ignored: the workspace is not trusted (agentcli trust)")
    for held in configured.held:
        why = "changed since you approved it" if held.changed else "not approved yet"
        for name in held.names:
            lines.append(f"{name}  ({held.path})")
            lines.append(f"  status: not started: {why} (agentcli trust shows and approves it)")
    return lines or ["no MCP servers configured (see README: MCP servers)"]
