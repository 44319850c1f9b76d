"""`/mcp` in the REPL: the session's servers, where each came from, status and tools."""

from __future__ import annotations

import asyncio
import functools
import io
from pathlib import Path

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from agentcli.session.options import SessionOptions
from agentcli.testing import ScriptedModel
from agentcli.ui.repl.app import Repl
from agentcli.ui.repl.backend import open_repl_session
from tests.mcp.conftest import BROKEN, DEMO, stdio, write_servers


async def test_mcp_lists_the_sessions_servers(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    config = write_servers(
        workspace.parent / "servers.json",
        {"demo": stdio(DEMO, trust_read_only=True), "crashes": stdio(BROKEN, "crash")},
    )
    write_servers(workspace / ".mcp.json", {"planted": stdio(BROKEN, "crash")})
    out = io.StringIO()
    model = ScriptedModel([])
    with create_pipe_input() as pipe:
        repl = Repl(
            SessionOptions(cwd=workspace, mcp_config=[config]),
            console=Console(file=out, width=400, markup=False, highlight=False),  # no wrapping
            input=pipe,
            output=DummyOutput(),
            build=functools.partial(open_repl_session, model_factory=lambda _name: model),
        )
        pipe.send_text("/mcp\r/exit\r")
        assert await asyncio.wait_for(repl.run(), 60) == 0
    shown = out.getvalue()
    assert f"demo  (--mcp-config {config})" in shown
    assert "status: ready, 11 tools" in shown
    assert "mcp__demo__lookup  (read-only: runs without asking)" in shown
    assert "mcp__demo__echo\n" in shown
    assert "crashes  (" in shown and "status: failed: it closed the connection" in shown
    assert "cannot read its settings" in shown  # its stderr tail
    assert "planted  (" in shown and "ignored: the workspace is not trusted" in shown


async def test_trust_project_applies_the_workspaces_mcp_json_in_the_repl(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    write_servers(workspace / ".mcp.json", {"project": stdio(DEMO)})
    shown = {}
    for trust in (False, True):
        out = io.StringIO()
        with create_pipe_input() as pipe:
            repl = Repl(
                SessionOptions(cwd=workspace, trust_project=trust),
                console=Console(file=out, width=400, markup=False, highlight=False),
                input=pipe,
                output=DummyOutput(),
                build=functools.partial(
                    open_repl_session, model_factory=lambda _name: ScriptedModel([])
                ),
            )
            pipe.send_text("/mcp\r/exit\r")
            assert await asyncio.wait_for(repl.run(), 60) == 0
        shown[trust] = out.getvalue()
    assert "ignored: the workspace is not trusted" in shown[False]
    assert "status: ready, 11 tools" in shown[True] and "mcp__project__echo" in shown[True]
    assert "not trusted" not in shown[True]


async def test_tools_lists_mcp_tools_whatever_their_descriptions(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found in review: a description that starts with ". " made /tools an internal error."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    odd = workspace.parent / "odd.py"
    odd.write_text(
        "from mcp.server.mcpserver import MCPServer\n"
        "server = MCPServer('odd')\n"
        "@server.tool(description='. starts with a dot')\n"
        "def dot() -> str:\n    return 'x'\n"
        "@server.tool(description='')\n"
        "def blank() -> str:\n    return 'x'\n"
        "server.run()\n"
    )
    config = write_servers(
        workspace.parent / "servers.json", {"demo": stdio(DEMO), "odd": stdio(str(odd))}
    )
    out = io.StringIO()
    with create_pipe_input() as pipe:
        repl = Repl(
            SessionOptions(cwd=workspace, mcp_config=[config]),
            console=Console(file=out, width=400, markup=False, highlight=False),
            input=pipe,
            output=DummyOutput(),
            build=functools.partial(
                open_repl_session, model_factory=lambda _name: ScriptedModel([])
            ),
        )
        pipe.send_text("/tools\r/exit\r")
        assert await asyncio.wait_for(repl.run(), 60) == 0
    shown = out.getvalue()
    assert "internal error" not in shown
    assert "mcp__demo__echo" in shown and "mcp__odd__dot" in shown and "mcp__odd__blank" in shown
    for line in shown.splitlines():  # each name stands apart from its risk, in one column
        if line.startswith("  mcp__"):
            name, gap, _rest = line[2:].partition("  ")
            assert gap and name.startswith("mcp__") and " " not in name, line
