"""Seeing a tool call's whole output without leaving the REPL: `/calls`, `/show N`, and Ctrl-O,
which opens the latest call and keeps the half-typed line instead of sending it."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest
from prompt_toolkit.data_structures import Size
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output.vt100 import Vt100_Output

from agentcli.testing import ScriptedModel, respond, text, tool_use
from agentcli.tools.base import Risk, Tool, ToolContext, ToolInput, ToolOutput
from tests.repl.test_repl import Harness


class CountInput(ToolInput):
    lines: int


class Count(Tool[CountInput]):
    """A read tool with long output, the last line hostile."""

    name = "count"
    description = "Print numbered lines."
    input_model = CountInput
    risk = Risk.READ

    async def call(self, args: CountInput, ctx: ToolContext) -> ToolOutput:
        body = "\n".join(f"output line {n}" for n in range(1, args.lines + 1))
        return ToolOutput(text=body + "\nend \x1b]0;pwned\x07")


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")


async def run(workspace: Path, model: ScriptedModel, keys: str) -> tuple[str, str]:
    """The REPL's transcript and everything drawn on its 24×100 terminal."""
    drawn = io.StringIO()
    with create_pipe_input() as pipe:
        harness = Harness(workspace, model, pipe)
        harness.manager_tools = [Count()]
        harness.repl.io["output"] = Vt100_Output(
            drawn, lambda: Size(rows=24, columns=100), term="xterm"
        )
        pipe.send_text(keys)
        assert await asyncio.wait_for(harness.repl.run(), 30) == 0
    return harness.text, drawn.getvalue()


async def test_calls_lists_and_show_pages_through_a_whole_output(workspace: Path) -> None:
    model = ScriptedModel([respond(tool_use("count", {"lines": 150})), respond(text("counted"))])
    keys = "count to 150\r" + "/calls\r" + "/show 1\r" + "G" + "q" + "/show 7\r" + "/exit\r"
    out, drawn = await run(workspace, model, keys)
    assert "  1 ✓ count · 151 lines" in out
    assert "/show N opens one in full" in out
    assert "output line 150" in drawn  # the end of the output, paged to
    assert "end \\x1b]0;pwned\\x07" in drawn  # escaped, never sent to the terminal
    assert "\x1b]0;pwned" not in drawn
    assert "/show takes a call number from 1 to 1" in out


async def test_ctrl_o_opens_the_latest_call_and_keeps_the_typed_line(workspace: Path) -> None:
    model = ScriptedModel(
        [
            respond(tool_use("count", {"lines": 3})),
            respond(text("counted")),
            respond(text("second answer")),
        ]
    )
    keys = "count to 3\r" + "half typed" + "\x0f" + "q" + " more\r" + "/exit\r"
    out, drawn = await run(workspace, model, keys)
    assert "output line 3" in drawn
    assert "second answer" in out
    asked = model.requests[2].messages[-1]
    assert asked.text == "half typed more"  # Ctrl-O sent nothing; the draft came back


async def test_help_says_how_to_see_a_calls_output(workspace: Path) -> None:
    out, _ = await run(workspace, ScriptedModel([]), "/help\r" + "/show\r" + "/exit\r")
    assert "Ctrl-O or /show opens the latest tool call's full output" in out
    assert "/calls" in out
    assert "no tool calls yet in this session" in out


async def test_bang_runs_a_command_and_its_output_goes_with_the_next_message(
    workspace: Path,
) -> None:
    (workspace / "notes.txt").write_text("alpha\n")
    model = ScriptedModel([respond(text("seen"))])
    keys = (
        "!cat notes.txt; printf 'x\\033]0;pwned\\007\\n'; exit 3\r" + "what failed?\r" + "/exit\r"
    )
    out, _ = await run(workspace, model, keys)
    assert "$ cat notes.txt;" in out
    assert "  alpha\n" in out
    assert "x\\x1b]0;pwned\\x07" in out and "\x1b]0;pwned" not in out
    assert "exit 3 · added to the context of your next message" in out
    sent = model.requests[0].messages[-1].text
    assert "`cat notes.txt;" in sent and "exited 3" in sent and "alpha" in sent
    assert sent.endswith("what failed?")


async def test_bang_needs_no_session(workspace: Path) -> None:
    """`!cmd` is the user's own command: it runs without opening a session (which would load
    the loop, start MCP servers and snapshot the workspace first), as fast as their shell."""
    drawn = io.StringIO()
    with create_pipe_input() as pipe:
        harness = Harness(workspace, ScriptedModel([]), pipe)
        harness.repl.io["output"] = Vt100_Output(
            drawn, lambda: Size(rows=24, columns=100), term="xterm"
        )
        pipe.send_text("!echo quick\r/exit\r")
        assert await asyncio.wait_for(harness.repl.run(), 30) == 0
    assert "  quick\n" in harness.text and "exit 0 · added to the context" in harness.text
    assert harness.managers == []  # no session was opened


def test_the_pager_footer_fits_the_terminal_and_says_how_to_leave_first() -> None:
    """At 100 columns the footer was cut mid-word (`q or Es`): how to leave comes first, and
    what does not fit whole is left out."""
    from rich.text import Text

    from agentcli.ui.term.pager import Pager

    pager = Pager(Text("\n".join(f"line {n}" for n in range(150))), "#3 shell pytest -q", 100)
    for width in (100, 60, 30):
        ((_style, line),) = pager.status(width)
        assert len(line) <= width and line.startswith(" q/Esc back")
    assert "lines 1-20 of 150" in pager.status(60)[0][1]
    assert pager.status(10_000)[0][1].rstrip().endswith("g/G top/end")
