"""A server's tool whose input schema the model API would refuse is left out, with a notice:
offered, it would make the API refuse every request of the session (found in review)."""

from __future__ import annotations

from typing import Any

import pytest

from agentcli.mcp.client import RemoteTool
from agentcli.mcp.config import Configured, ConfiguredServer
from agentcli.mcp.hub import McpHub, Server
from agentcli.mcp.session import StartingServers
from agentcli.mcp.tool import schema_problem
from agentcli.mcp_entry import ServerEntry

GOOD = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        (GOOD, None),
        ({}, None),  # no keywords: any object
        ({"type": "string"}, "does not describe an object"),
        ({"type": "object", "properties": {"q": {"type": "strin"}}}, "not valid JSON Schema"),
        ({"type": "object", "required": "q"}, "not valid JSON Schema"),
        ({"type": "object", "properties": []}, "not valid JSON Schema"),
    ],
)
def test_schema_problem(schema: dict[str, Any], problem: str | None) -> None:
    found = schema_problem(schema)
    assert (found is None) if problem is None else (found is not None and problem in found)


def test_a_tool_with_a_broken_schema_is_left_out_and_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(McpHub, "wait", staticmethod(lambda _servers: None))
    config = ConfiguredServer("srv", ServerEntry(command="x"), "test")
    server = Server(
        config=config,
        status="ready",
        tools=[
            RemoteTool("good", "fine", GOOD, read_only=False),
            RemoteTool("bad", "broken", {"type": "object", "required": 3}, read_only=False),
        ],
    )
    said: list[str] = []
    starting = StartingServers(
        configured=Configured(), hub=McpHub(), servers=[server], say=said.append
    )
    assert [tool.name for tool in starting.tools()] == ["mcp__srv__good"]
    assert len(said) == 1 and "tool 'bad' left out" in said[0] and "JSON Schema" in said[0]
