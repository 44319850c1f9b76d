"""Subagents in the REPL: each one's line while it runs and when it ends, `/agents` (the types,
the limits, the last task's subagents), and `/show` of an `agent` call (or Ctrl-O), which opens
the subagent's own calls, collapsed while it ran."""

from __future__ import annotations

import asyncio
import functools
import io
from pathlib import Path

from prompt_toolkit.data_structures import Size
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output.vt100 import Vt100_Output
from rich.console import Console

from agentcli.model import ModelRequest, ModelResponse
from agentcli.session.options import SessionOptions
from agentcli.testing import FunctionModel, respond, text, tool_use
from agentcli.ui.repl.app import Repl
from agentcli.ui.repl.backend import open_repl_session
from tests.agents.conftest import agent_of, results


def answer(request: ModelRequest) -> ModelResponse:
    if agent_of(request):
        if not results(request):
            return respond(tool_use("read_file", {"path": "notes.txt"}, id="child-read"))
        return respond(text("the notes say hello"))
    if not results(request):
        return respond(
            tool_use(
                "agent",
                {"description": "read the notes", "prompt": "What do the notes say?"},
                id="p1",
            )
        )
    return respond(text("The notes say hello."))


async def test_agents_and_show_in_the_repl(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("hello from the notes file\n")
    model = FunctionModel(answer, model="claude-haiku-5-5")
    out, drawn = io.StringIO(), io.StringIO()
    keys = "what do the notes say\r" + "/agents\r" + "/show 1\r" + "G" + "q" + "/exit\r"
    with create_pipe_input() as pipe:
        repl = Repl(
            SessionOptions(cwd=workspace),
            console=Console(file=out, width=120, markup=False, highlight=False),
            input=pipe,
            output=Vt100_Output(drawn, lambda: Size(rows=40, columns=120), term="xterm"),
            build=functools.partial(open_repl_session, model_factory=lambda _name: model),
        )
        repl.io["output"] = Vt100_Output(drawn, lambda: Size(rows=40, columns=120), term="xterm")
        pipe.send_text(keys)
        assert await asyncio.wait_for(repl.run(), 60) == 0
    said, shown = out.getvalue(), drawn.getvalue()
    assert "⤶ general: read the notes · completed · 2 turns · 1 call" in said
    assert "✓ agent read the notes" in said
    assert "The notes say hello." in said
    # /agents: the types and where they come from, then the last task's subagents.
    assert "explore (built-in): read_file, glob, grep, shell · model inherit" in said
    assert "general (built-in): all tools · model inherit" in said
    assert "running: none" in said
    assert "last task: general: read the notes · completed · 2 turns · 1 call" in said
    # /show 1 (the agent call): its answer, then the subagent's own calls in full.
    assert "the subagent's 1 tool call(s):" in shown
    assert "hello from the notes file" in shown
