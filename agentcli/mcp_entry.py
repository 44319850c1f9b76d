"""One MCP server's configuration, in the keys of Claude Code's `.mcp.json` (`command`, `args`,
`env` for a program spoken to over stdio; `type` `http` or `sse`, `url`, `headers` for a server
reached over HTTP) plus agentcli's own (`trust_read_only`, the timeouts). The same model checks
a `[mcp_servers.NAME]` table of a config file and an entry of a `.mcp.json` file, so an unknown
or missing key is the same error wherever it is written.

A leaf: pydantic only, so `agentcli.settings` can use it without loading anything else.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
"""A server's name becomes part of its tools' names (`mcp__NAME__TOOL`), which the model API
accepts only in these characters."""

Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False, strict=False)]


class ServerEntry(BaseModel):
    """One MCP server: a program agentcli starts (stdio) or a URL it connects to (HTTP)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)

    type: Literal["stdio", "http", "sse"] | None = None
    """`stdio` (the default with `command`), `http` (streamable HTTP, the default with `url`) or
    `sse` (the legacy HTTP transport)."""
    command: str | None = None
    """The program to start (stdio), found on PATH; it runs in the workspace once that is
    trusted, else in the user's home (`mcp.session.server_directory`)."""
    args: list[str] = []
    """Its arguments."""
    env: dict[str, str] = {}
    """Environment variables it gets on top of yours (agentcli's own API keys left out)."""
    url: str | None = None
    """The server's endpoint (http, sse)."""
    headers: dict[str, str] = {}
    """HTTP headers sent with every request (e.g. `Authorization`)."""
    trust_read_only: bool = False
    """Let the tools this server marks read-only (`readOnlyHint`) run without asking, as reads."""
    startup_timeout_s: Seconds = 30.0
    """Seconds the server has to start and list its tools; after that the session goes on
    without it."""
    tool_timeout_s: Seconds = 600.0
    """Seconds one tool call may take before it is abandoned (its outcome is then unknown)."""

    @model_validator(mode="after")
    def _one_transport(self) -> ServerEntry:
        if self.transport == "stdio":
            if not self.command:
                raise ValueError("a stdio server needs `command` (or give `url` for HTTP)")
            if self.url is not None:
                raise ValueError("give either `command` (stdio) or `url` (http), not both")
        else:
            if not self.url:
                raise ValueError(f"a `{self.transport}` server needs `url`")
            if self.command is not None:
                raise ValueError(f"a `{self.transport}` server takes `url`, not `command`")
        return self

    @property
    def transport(self) -> str:
        if self.type is not None:
            return self.type
        return "http" if self.url is not None and self.command is None else "stdio"

    @property
    def target(self) -> str:
        """What it runs or reaches, for listings: the command line or the URL."""
        if self.transport == "stdio":
            return " ".join([self.command or "", *self.args])
        return self.url or ""


MAX_SERVER_NAME = 40
"""Tool names are at most 64 characters (`mcp__NAME__TOOL`): a longer server name would leave
no room for the tool's, and a rule on the server would no longer match its tools."""


def check_server_name(name: str) -> str | None:
    """Why `name` cannot name a server, or None. The name must read back unambiguously from
    `mcp__NAME__TOOL`: no `__` in it, and no `_` at either end (`mcp__a___x` would be server
    `a`'s tool `_x` and server `a_`'s tool `x` alike, and a rule on one would cover the other)."""
    if not SERVER_NAME.fullmatch(name):
        return "a server name may only have letters, digits, `_` and `-`"
    if "__" in name:
        return "a server name may not contain `__` (it separates the parts of `mcp__NAME__TOOL`)"
    if name.startswith("_") or name.endswith("_"):
        return "a server name may not start or end with `_` (`mcp__NAME__TOOL` would be ambiguous)"
    if len(name) > MAX_SERVER_NAME:
        return f"a server name may have at most {MAX_SERVER_NAME} characters (tool names have 64)"
    return None
