"""Real MCP servers for the tests (`servers/`, written with the SDK) and ways to configure them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcli.events import Event
from agentcli.mcp.hub import McpHub, process_hub

SERVERS = Path(__file__).resolve().parent / "servers"
DEMO = str(SERVERS / "demo.py")
BROKEN = str(SERVERS / "broken.py")


def stdio(script: str, *args: str, **extra: Any) -> dict[str, Any]:
    """A `.mcp.json` entry that runs `script` with this interpreter."""
    return {"command": sys.executable, "args": [script, *args], **extra}


def write_servers(path: Path, servers: dict[str, dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def user_config(text: str) -> Path:
    path = Path(os.environ["AGENTCLI_CONFIG_DIR"]) / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture(autouse=True)
def hub() -> Iterator[McpHub]:
    """The process's hub (what sessions use), closed after each test: its servers stopped."""
    made = process_hub()
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def events() -> list[Event]:
    return []


TOKEN = "s3cret-token"


def _serve(*args: str) -> Iterator[int]:
    """The demo server over HTTP on 127.0.0.1, on the port the OS picked for it."""
    process = subprocess.Popen(
        [sys.executable, DEMO, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        yield int(process.stdout.readline())
    finally:
        process.terminate()
        process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """Streamable HTTP, every request needing `Authorization: Bearer TOKEN`."""
    for port in _serve("--http", "--token", TOKEN):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def sse_url() -> Iterator[str]:
    """The legacy SSE transport."""
    for port in _serve("--sse"):
        yield f"http://127.0.0.1:{port}/sse"
