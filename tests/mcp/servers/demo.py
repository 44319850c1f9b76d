"""A real MCP server for the tests, written with the SDK (MCPServer, FastMCP's 2.x name).

`python demo.py` serves over stdio; `python demo.py --http` serves streamable HTTP (`--sse`:
the legacy SSE transport) on 127.0.0.1 on a port the OS picks, printed as the first line of
stdout; with `--token T` every HTTP request must carry `Authorization: Bearer T`.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Image, MCPServer
from mcp_types import ToolAnnotations
from pydantic import BaseModel

server = MCPServer("demo")


class Item(BaseModel):
    label: str
    tags: list[str] = []


class Order(BaseModel):
    customer: str
    items: list[Item]


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def place_order(order: Order, priority: int = 0) -> str:
    """Place an order (a nested input schema)."""
    labels = ",".join(f"{item.label}[{'/'.join(item.tags)}]" for item in order.items)
    return f"order for {order.customer}: {labels} (priority {priority})"


@server.tool()
def explode() -> str:
    """A tool that raises."""
    raise ValueError("the widget is jammed")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def lookup(key: str) -> str:
    """A tool the server says is read-only."""
    return f"value of {key}"


@server.tool()
def picture() -> Image:
    """A tool that returns an image."""
    return Image(data=b"\x89PNG\r\n\x1a\n" + b"0" * 100, format="png")


@server.tool()
def touch(name: str) -> str:
    """Add a line to a file in the server's working directory (a side effect)."""
    with Path(name).open("a") as handle:
        handle.write("touched\n")
    return f"touched {name}"


@server.tool()
def crash() -> str:
    """Exit the server process at once."""
    print("demo server: crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
def pid() -> str:
    """This server's process id."""
    return str(os.getpid())


@server.tool()
def spawn() -> str:
    """Start a background process that outlives the call (in the server's process group)."""
    quiet = subprocess.DEVNULL
    child = subprocess.Popen(["sleep", "300"], stdin=quiet, stdout=quiet, stderr=quiet)
    return str(child.pid)


@server.tool()
def environment(name: str) -> str:
    """The value of an environment variable in the server."""
    return os.environ.get(name, "<unset>")


@server.tool()
async def wait(seconds: float) -> str:
    """Wait, then answer."""
    import anyio

    await anyio.sleep(seconds)
    return f"waited {seconds} s"


def serve_http(transport: str, token: str | None) -> None:
    """Streamable HTTP (or the legacy SSE transport) on 127.0.0.1; with a token, every request
    must carry `Authorization: Bearer TOKEN`."""
    import anyio
    import uvicorn

    app = server.sse_app() if transport == "sse" else server.streamable_http_app()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers", []))
        if scope["type"] == "http" and headers.get(b"authorization") != f"Bearer {token}".encode():
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"no entry"})
            return
        await app(scope, receive, send)

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # connections wait in the backlog until uvicorn serves them
    print(sock.getsockname()[1], flush=True)
    config = uvicorn.Config(guarded if token else app, log_level="warning", lifespan="on")
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    print("demo server starting", file=sys.stderr, flush=True)
    token = sys.argv[sys.argv.index("--token") + 1] if "--token" in sys.argv else None
    if "--http" in sys.argv or "--sse" in sys.argv:
        serve_http("sse" if "--sse" in sys.argv else "http", token)
    else:
        server.run()
