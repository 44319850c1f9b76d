"""What the session core asks of MCP: start the configured servers (in parallel), then take their
tools, and tell the user about servers that did not start.

With no server configured nothing here loads the SDK: `configured_servers` reads config only,
and the hub (which imports the SDK) is imported only when there is a server to start.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentcli.events import EventSink, McpServerFailed
from agentcli.mcp.config import Configured
from agentcli.tools.base import Tool

if TYPE_CHECKING:
    from agentcli.mcp.hub import McpHub, Server, ServerProblem


@dataclass(kw_only=True)
class StartingServers:
    """Servers on their way up; `tools()` waits for them."""

    configured: Configured
    hub: McpHub | None = None
    servers: Sequence[Server] = ()
    report: Callable[[ServerProblem], None] = lambda _problem: None
    say: Callable[[str], None] = lambda _notice: None

    def tools(self) -> list[Tool[Any]]:
        """Every ready server's tools (after waiting for each to start or fail); a server that
        failed is reported, and the session goes on without it."""
        if self.hub is None:
            return []
        from agentcli.mcp.tool import make_tool, schema_problem, tool_name

        self.hub.wait(self.servers)
        tools: list[Tool[Any]] = []
        names: set[str] = set()
        for server in self.servers:
            if server.status != "ready":
                self.report(server.problem())
                continue
            server.reporters = [self.report]  # this session's (the REPL's /clear makes a new one)
            for remote in server.tools:
                name = tool_name(server.name, remote.name)
                problem = schema_problem(remote.input_schema)
                if problem:  # the API would refuse every request that offers it
                    self.say(f"MCP server {server.name}: tool {remote.name!r} left out: {problem}")
                    continue
                if name in names:
                    self.say(
                        f"MCP server {server.name}: tool {remote.name!r} left out: its name "
                        f"{name} is taken by another tool"
                    )
                    continue
                names.add(name)
                tools.append(make_tool(self.hub, server, remote, name))
        return tools


def start_servers(
    configured: Configured,
    workspace: Path,
    *,
    report: Callable[[ServerProblem], None],
    say: Callable[[str], None],
    hub: McpHub | None = None,
) -> StartingServers:
    """Start the servers `configured_servers` found; returns at once. An untrusted workspace's
    `.mcp.json` was ignored: `say` names what it held."""
    notice = configured.notice()
    if notice:
        say(notice)
    if not configured.servers:
        return StartingServers(configured=configured)
    from agentcli.mcp.hub import process_hub

    hub = hub or process_hub()
    servers = hub.start(list(configured.servers.values()), server_directory(configured, workspace))
    return StartingServers(configured=configured, hub=hub, servers=servers, report=report, say=say)


def server_directory(configured: Configured, workspace: Path) -> Path:
    """Where stdio servers start: the workspace once it is trusted; else the user's home. A
    launcher takes its program from its working directory (`npx` from `node_modules/.bin`,
    `python -m` from the directory itself): in an untrusted repository, the repository would
    choose what the user's own server entry runs."""
    if configured.trusted:
        return workspace
    home = Path.home()
    return home if home.is_dir() else Path("/")


def problem_reporter(
    events: EventSink, say: Callable[[str], None]
) -> Callable[[ServerProblem], None]:
    """A server problem as the user hears of it: a line on stderr (`say`) and an event."""

    def report(problem: ServerProblem) -> None:
        events(
            McpServerFailed(
                server=problem.server,
                source=problem.source,
                error=problem.error,
                stderr_tail=problem.stderr_tail,
            )
        )
        say(problem.message())

    return report
