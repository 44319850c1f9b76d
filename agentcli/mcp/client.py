"""The one module that speaks to MCP servers, through the official `mcp` SDK (2.x), and maps
what the SDK gives and raises to agentcli's own small types in one place.

`serve` connects to one server (a program started over stdio in its own process group, or a
streamable HTTP / SSE endpoint), lists its tools, hands a `Connection` to `on_ready`, then holds
the connection open until `stop` is set; leaving it stops a stdio server (stdin closed, then its
whole process group signalled: the SDK's shutdown). Importing this module loads the SDK
(~0.5 s): only `agentcli.mcp.hub` does, and only once a server is configured.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import anyio
import httpx2
import mcp_types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from agentcli.environment import without_own_credentials
from agentcli.mcp_entry import ServerEntry

# What goes wrong is reported by agentcli, naming the server; the SDK's own log lines would
# only reach the terminal as unformatted noise.
logging.getLogger("mcp").addHandler(logging.NullHandler())
logging.getLogger("mcp").propagate = False


@dataclass(frozen=True, slots=True)
class RemoteTool:
    """A tool as the server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool
    """The server's `readOnlyHint` (a hint: it only counts where the user trusts it)."""


@dataclass(frozen=True, slots=True)
class Reply:
    text: str
    is_error: bool


class ServerGone(Exception):
    """The connection is closed: the server exited or hung up."""


class CallTimedOut(Exception):
    """The server did not answer a call in time."""


class CallRefused(Exception):
    """The server answered a call with a protocol error (e.g. invalid parameters)."""


class Connection:
    """A live connection to one server, used from the event loop that `serve` runs on."""

    def __init__(self, client: Client, tools: list[RemoteTool]) -> None:
        self._client = client
        self.tools = tools

    async def call(self, name: str, arguments: dict[str, Any], timeout_s: float) -> Reply:
        try:
            result = await self._client.call_tool(name, arguments, read_timeout_seconds=timeout_s)
        except MCPError as exc:
            if exc.code == mcp_types.CONNECTION_CLOSED:
                raise ServerGone(str(exc)) from exc
            if exc.code == mcp_types.REQUEST_TIMEOUT:
                raise CallTimedOut(str(exc)) from exc
            raise CallRefused(str(exc)) from exc
        except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            raise ServerGone("the connection is closed") from exc
        return Reply(text=result_text(result), is_error=result.is_error)


async def serve(
    entry: ServerEntry,
    *,
    cwd: Path,
    errlog: IO[str] | None,
    startup_timeout_s: float,
    on_ready: Callable[[Connection], None],
    stop: asyncio.Event,
) -> None:
    """Connect, list the tools, call `on_ready`, wait for `stop`, disconnect. Raises what went
    wrong (`describe` says it in a line); TimeoutError when the server took too long."""
    refused = _Refusals()
    ready = False
    try:
        with anyio.CancelScope(deadline=anyio.current_time() + startup_timeout_s) as scope:
            async with AsyncExitStack() as stack:
                client = await stack.enter_async_context(
                    Client(_transport(entry, cwd, errlog, refused), client_info=_INFO)
                )
                tools = await _list_tools(client)
                scope.deadline = math.inf  # started: from now on it runs until stopped
                on_ready(Connection(client, tools))
                ready = True
                await stop.wait()
    except Exception as exc:
        if (
            refused.status and not ready
        ):  # what the SDK reports of an HTTP error says less than the status
            raise HttpRefused(f"it answered {refused.status}") from exc
        raise
    if scope.cancelled_caught:
        raise TimeoutError(f"it did not start within {startup_timeout_s:g} s")


_INFO = mcp_types.Implementation(name="agentcli", version="1")


class HttpRefused(Exception):
    """An HTTP server answered with an error status."""


class _Refusals:
    """The last HTTP error status a server answered with."""

    def __init__(self) -> None:
        self.status = ""

    async def __call__(self, response: httpx2.Response) -> None:
        if response.status_code >= 400:
            self.status = f"HTTP {response.status_code} {response.reason_phrase}".strip()

    def client(
        self,
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            headers=headers,
            timeout=timeout or httpx2.Timeout(30.0, read=300.0),
            auth=auth,
            event_hooks={"response": [self]},
        )


def _transport(entry: ServerEntry, cwd: Path, errlog: IO[str] | None, refused: _Refusals) -> Any:
    if entry.transport == "stdio":
        assert entry.command is not None and errlog is not None
        # The user's own program, started as their shell would: their environment, without
        # agentcli's own API keys, plus the server's `env`.
        env = {**without_own_credentials(os.environ), **entry.env}
        params = StdioServerParameters(command=entry.command, args=entry.args, env=env, cwd=cwd)
        return stdio_client(params, errlog=errlog)  # type: ignore[arg-type]
    assert entry.url is not None
    if entry.transport == "sse":
        return sse_client(
            entry.url, headers=dict(entry.headers), httpx_client_factory=refused.client
        )
    http = refused.client(headers=dict(entry.headers))
    return _owning(http, streamable_http_client(entry.url, http_client=http))


class _owning:
    """A transport that also closes the HTTP client it was given."""

    def __init__(self, http: httpx2.AsyncClient, transport: Any) -> None:
        self._http = http
        self._transport = transport

    async def __aenter__(self) -> Any:
        await self._http.__aenter__()
        try:
            return await self._transport.__aenter__()
        except BaseException:
            await self._http.aclose()
            raise

    async def __aexit__(self, *exc: Any) -> None:
        try:
            await self._transport.__aexit__(*exc)
        finally:
            await self._http.aclose()


async def _list_tools(client: Client) -> list[RemoteTool]:
    tools: list[RemoteTool] = []
    cursor: str | None = None
    for _ in range(100):  # a server whose pages never end cannot hang the start
        page = await client.list_tools(cursor=cursor)
        for tool in page.tools:
            annotations = tool.annotations
            tools.append(
                RemoteTool(
                    name=tool.name,
                    description=tool.description or "",
                    input_schema=dict(tool.input_schema),
                    read_only=bool(annotations and annotations.read_only_hint),
                )
            )
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def result_text(result: mcp_types.CallToolResult) -> str:
    """A tool result as text: text as is, everything else as a line saying what it was
    (agentcli's tool results are text: an image or a file is described, not shown)."""
    parts = [_content_text(block) for block in result.content]
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=1))
    return "\n".join(parts)


def _content_text(block: Any) -> str:
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
        kind = "image" if isinstance(block, mcp_types.ImageContent) else "audio"
        size = len(block.data) * 3 // 4
        return (
            f"[{kind} ({block.mime_type}, about {size} bytes) returned by the tool; agentcli "
            f"passes tool results on as text, so the {kind} itself is not shown]"
        )
    if isinstance(block, mcp_types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, mcp_types.TextResourceContents):
            return f"[resource {resource.uri}]\n{resource.text}"
        return (
            f"[binary resource {resource.uri} ({resource.mime_type or 'unknown type'}): not shown]"
        )
    if isinstance(block, mcp_types.ResourceLink):
        return f"[resource link: {block.uri} ({block.name})]"
    return f"[{getattr(block, 'type', 'unknown')} content: not shown]"


def describe(exc: BaseException) -> str:
    """What went wrong with a server, in one line."""
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return describe(exc.exceptions[0])
    if isinstance(exc, HttpRefused):
        return str(exc)
    if isinstance(exc, FileNotFoundError):
        return f"cannot start it: {exc.strerror or exc} ({exc.filename})"
    if isinstance(exc, MCPError) and exc.code == mcp_types.CONNECTION_CLOSED:
        return "it closed the connection (the program exited)"
    if isinstance(exc, httpx2.HTTPError):
        return f"cannot reach it: {type(exc).__name__}: {exc}"
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, TimeoutError | OSError) else f"{type(exc).__name__}: {text}"
