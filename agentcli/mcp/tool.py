"""A server's tool as an agentcli `Tool`: `mcp__SERVER__TOOL`, with the server's own input schema
and description.

Its risk is `external` (it asks by default, like any action agentcli cannot see into), unless
the user set `trust_read_only = true` for the server and the server marks the tool read-only
(`readOnlyHint`): then it is a read. Permission rules match its name (`mcp__SERVER__TOOL`, or
`mcp__SERVER__*` for every tool of a server). The call goes through the journal like every tool
call (recorded `started` before it runs, so a crash leaves its outcome unknown, never re-run).
The input is checked by the server, not here: it has the schema, agentcli only passes it on.
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

from pydantic import ConfigDict

from agentcli.errors import ToolError, ToolErrorKind
from agentcli.mcp import client
from agentcli.mcp.hub import McpHub, NotRunning, Server
from agentcli.model import ToolSpec
from agentcli.tools.base import PermissionTarget, Risk, Tool, ToolContext, ToolInput, ToolOutput

PREFIX = "mcp__"
MAX_NAME = 64
"""The longest tool name every model API accepts."""
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_-]")
PREVIEW_CHARS = 2000


class McpArguments(ToolInput):
    """Whatever the model sends: the server validates it against its own schema."""

    model_config = ConfigDict(extra="allow")


def tool_name(server: str, tool: str) -> str:
    """`mcp__SERVER__TOOL`, with characters a model API refuses as `_`, at most 64 long."""
    return f"{PREFIX}{server}__{_NOT_IN_NAME.sub('_', tool)}"[:MAX_NAME]


def schema_problem(schema: Any) -> str | None:
    """Why the model API would refuse `schema` as a tool's input schema (and with it every
    request of the session), or None: it must be a valid JSON Schema of an object."""
    import jsonschema  # type: ignore[import-untyped]

    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        return "its input schema does not describe an object"
    try:
        jsonschema.validators.validator_for(
            schema, default=jsonschema.Draft202012Validator
        ).check_schema(schema)
    except jsonschema.SchemaError as exc:
        return f"its input schema is not valid JSON Schema ({exc.message})"
    return None


class McpTool(Tool[McpArguments]):
    input_model: ClassVar[type[ToolInput]] = McpArguments
    hub: ClassVar[McpHub]
    server: ClassVar[Server]
    remote: ClassVar[client.RemoteTool]

    def spec(self) -> ToolSpec:
        schema = dict(self.remote.input_schema) or {"type": "object"}
        schema.setdefault("type", "object")
        return ToolSpec(name=self.name, description=self.description, input_schema=schema)

    def permission_target(self, args: McpArguments, ctx: ToolContext) -> PermissionTarget:
        return PermissionTarget(
            rule_class=self.name,
            subject="*",
            summary=f"call {self.remote.name} on the MCP server {self.server.name}",
        )

    def preview(self, args: McpArguments, ctx: ToolContext) -> str:
        sent = json.dumps(_arguments(args), indent=2, ensure_ascii=False)
        if len(sent) > PREVIEW_CHARS:
            sent = sent[:PREVIEW_CHARS] + f"\n… ({len(sent) - PREVIEW_CHARS} more characters)"
        return f"MCP server {self.server.name} ({self.server.config.source})\n{sent}"

    async def call(self, args: McpArguments, ctx: ToolContext) -> ToolOutput:
        server, timeout = self.server.name, self.server.config.entry.tool_timeout_s
        try:
            reply = await self.hub.call(self.server, self.remote.name, _arguments(args), timeout)
        except NotRunning as exc:
            raise ToolError(
                ToolErrorKind.NOT_EXECUTED,
                f"the MCP server {server} is not running ({exc}): the call was not made. Its "
                "tools are unavailable for the rest of this session; continue without them.",
            ) from exc
        except client.ServerGone as exc:
            raise ToolError(
                ToolErrorKind.OUTCOME_UNKNOWN,
                f"the MCP server {server} stopped while this call was running ({exc}); it may "
                "or may not have taken effect, and the server's tools are gone for this session.",
            ) from exc
        except client.CallTimedOut as exc:
            raise ToolError(
                ToolErrorKind.TIMEOUT,
                f"the MCP server {server} did not answer within {timeout:g} s; the call may "
                "still have taken effect. Verify before retrying.",
            ) from exc
        except client.CallRefused as exc:
            raise ToolError(
                ToolErrorKind.INVALID_ARGUMENTS,
                f"the MCP server {server} refused the call: {exc}. Input schema: "
                f"{json.dumps(self.remote.input_schema)[:1000]}",
            ) from exc
        source = {"mcp_server": server, "tool": self.remote.name}
        return ToolOutput(text=reply.text, source=source, is_error=reply.is_error)


def _arguments(args: McpArguments) -> dict[str, Any]:
    return dict(args.model_extra or {})


def make_tool(hub: McpHub, server: Server, remote: client.RemoteTool, name: str) -> McpTool:
    """The tool `remote` of `server`, named `name` for the model."""
    read = server.config.entry.trust_read_only and remote.read_only
    description = (
        remote.description.strip() or f"The tool {remote.name} of MCP server {server.name}."
    )
    attributes = {
        "name": name,
        "description": description,
        "risk": Risk.READ if read else Risk.EXTERNAL,
        "hub": hub,
        "server": server,
        "remote": remote,
    }
    made: type[McpTool] = type(f"McpTool_{name}", (McpTool,), attributes)
    return made()
