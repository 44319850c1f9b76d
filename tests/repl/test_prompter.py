"""TerminalPrompter: single-key answers, the optional reason, one question at a time, Ctrl-C
cancels the task — driven through prompt-toolkit's pipe input, as a terminal would type."""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import Iterator

import pytest
from prompt_toolkit.data_structures import Size
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from prompt_toolkit.output.vt100 import Vt100_Output
from rich.console import Console

from agentcli.confinement import UNCONFINED, WORKSPACE_WRITE, Confinement, Profile
from agentcli.permissions import Answer, PermissionRequest
from agentcli.tools.base import PermissionTarget, Risk
from agentcli.tools.edit_match import small_diff
from agentcli.ui.term.prompter import TerminalPrompter


def request(*, rule: str | None = "shell(pytest *)", preview: str = "") -> PermissionRequest:
    return PermissionRequest(
        call_id="call-1",
        tool="shell",
        risk=Risk.EXECUTE,
        target=PermissionTarget(rule_class="shell", subject="pytest -q", summary="run pytest -q"),
        suggested_rule=rule,
        preview=preview,
    )


def console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=80, markup=False, highlight=False), out


@pytest.mark.parametrize(
    ("keys", "answer"),
    [("y", Answer.YES), ("Y", Answer.YES), ("a", Answer.ALWAYS), ("zzy", Answer.YES)],
)
async def test_single_key_answers(keys: str, answer: Answer) -> None:
    con, out = console()
    with create_pipe_input() as pipe:
        prompter = TerminalPrompter(con, input=pipe, output=DummyOutput())
        pipe.send_text(keys)
        result = await asyncio.wait_for(prompter.ask(request()), 5)
    assert result.answer is answer
    assert result.reason is None
    shown = out.getvalue()
    assert "shell wants to run pytest -q" in shown
    assert "[execute]" in shown
    assert "a always allow shell(pytest *)" in shown


async def test_no_with_a_reason_for_the_model() -> None:
    con, _ = console()
    with create_pipe_input() as pipe:
        prompter = TerminalPrompter(con, input=pipe, output=DummyOutput())
        pipe.send_text("n")
        pipe.send_text("use the fast tests only\r")
        result = await asyncio.wait_for(prompter.ask(request()), 5)
    assert result.answer is Answer.NO
    assert result.reason == "use the fast tests only"


async def test_no_without_reason() -> None:
    con, _ = console()
    with create_pipe_input() as pipe:
        prompter = TerminalPrompter(con, input=pipe, output=DummyOutput())
        pipe.send_text("n\r")
        result = await asyncio.wait_for(prompter.ask(request()), 5)
    assert (result.answer, result.reason) == (Answer.NO, None)


async def test_always_is_not_offered_without_a_rule() -> None:
    con, out = console()
    with create_pipe_input() as pipe:
        prompter = TerminalPrompter(con, input=pipe, output=DummyOutput())
        pipe.send_text("ay")  # `a` means nothing here: only y/n are accepted
        result = await asyncio.wait_for(prompter.ask(request(rule=None)), 5)
    assert result.answer is Answer.YES
    assert "always" not in out.getvalue()


async def test_preview_diff_is_shown_and_remembered() -> None:
    con, out = console()
    previewed: set[str] = set()
    diff = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-old line\n+new line\n"
    with create_pipe_input() as pipe:
        prompter = TerminalPrompter(con, input=pipe, output=DummyOutput(), previewed=previewed)
        pipe.send_text("y")
        await asyncio.wait_for(prompter.ask(request(preview=diff)), 5)
    shown = out.getvalue()
    assert "-old line" in shown and "+new line" in shown
    assert previewed == {"call-1"}


async def test_command_preview_is_shown_but_not_taken_for_a_diff() -> None:
    con, out = console()
    previewed: set[str] = set()
    with create_pipe_input() as pipe:
        prompter = TerminalPrompter(con, input=pipe, output=DummyOutput(), previewed=previewed)
        pipe.send_text("y")
        await asyncio.wait_for(prompter.ask(request(preview="$ pytest -q\nin /work/ws")), 5)
    assert "    $ pytest -q\n    in /work/ws\n" in out.getvalue()
    assert previewed == set()


async def test_a_long_command_is_never_shown_split_into_lines() -> None:
    con, out = console()
    command = "pytest -q " + " ".join(f"tests/test_module_{n}.py" for n in range(8))
    with create_pipe_input() as pipe:
        prompter = TerminalPrompter(con, input=pipe, output=DummyOutput())
        pipe.send_text("y")
        await asyncio.wait_for(prompter.ask(request(preview=f"$ {command}\nin /w")), 5)
    assert f"    $ {command}\n" in out.getvalue()  # the terminal wraps it, not a newline


async def test_ctrl_c_cancels_the_task_that_asked() -> None:
    con, out = console()
    with create_pipe_input() as pipe:
        prompter = TerminalPrompter(con, input=pipe, output=DummyOutput())
        pipe.send_text("\x03")
        task = asyncio.create_task(prompter.ask(request()))
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 5)
    assert task.cancelled()
    assert "cancelling the task" in out.getvalue()


async def test_questions_are_asked_one_at_a_time() -> None:
    con, _ = console()
    trace: list[str] = []

    @contextlib.contextmanager
    def suspend() -> Iterator[None]:
        trace.append("show")
        yield
        trace.append("done")

    with create_pipe_input() as pipe:
        prompter = TerminalPrompter(con, input=pipe, output=DummyOutput(), suspend=suspend)
        pipe.send_text("yn\r")
        first, second = await asyncio.wait_for(
            asyncio.gather(prompter.ask(request()), prompter.ask(request())), 5
        )
    assert (first.answer, second.answer) == (Answer.YES, Answer.NO)
    assert trace == ["show", "done", "show", "done"]


@pytest.mark.parametrize(
    ("confinement", "shown", "alarm"),
    [
        (WORKSPACE_WRITE, "runs in the sandbox (workspace writes only, no network)", False),
        (
            Confinement(profile=Profile.WORKSPACE_WRITE, network=True),
            "runs in the sandbox, with the network opened",
            False,
        ),
        (UNCONFINED, "⚠ runs OUTSIDE the sandbox (unconfined", True),
    ],
)
async def test_the_prompt_says_how_the_command_will_run(
    confinement: Confinement, shown: str, alarm: bool
) -> None:
    con, out = console()
    asked = PermissionRequest(
        call_id="call-1",
        tool="shell",
        risk=Risk.EXECUTE,
        target=PermissionTarget(rule_class="shell", subject="make", summary="run make"),
        suggested_rule=None,
        preview="$ make\nin /w",
        reason="it asks to run OUTSIDE the sandbox, unconfined",
        confinement=confinement,
    )
    with create_pipe_input() as pipe:
        prompter = TerminalPrompter(con, input=pipe, output=DummyOutput())
        pipe.send_text("n\r")
        await asyncio.wait_for(prompter.ask(asked), 5)
    text = out.getvalue()
    assert shown in text
    assert ("why: it asks to run OUTSIDE" in text) is alarm


def screen() -> tuple[Vt100_Output, io.StringIO]:
    """A terminal output that keeps what the pager draws, 24 rows by 100 columns."""
    drawn = io.StringIO()
    return Vt100_Output(drawn, lambda: Size(rows=24, columns=100), term="xterm"), drawn


def rewrite_request(lines: int) -> PermissionRequest:
    old = "".join(f"old line {n}\n" for n in range(lines))
    new = "".join(f"new line {n}\n" for n in range(lines))
    return PermissionRequest(
        call_id="call-w",
        tool="write_file",
        risk=Risk.WRITE,
        target=PermissionTarget(rule_class="write_file", subject="big.py", summary="write big.py"),
        suggested_rule=None,
        preview=small_diff(old, new, "big.py", max_lines=None),
    )


async def test_a_new_file_shows_its_content() -> None:
    con, out = console()
    req = PermissionRequest(
        call_id="call-n",
        tool="write_file",
        risk=Risk.WRITE,
        target=PermissionTarget(rule_class="write_file", subject="n.py", summary="create n.py"),
        suggested_rule=None,
        preview=small_diff(None, "import os\nprint(os.sep)\n", "n.py", max_lines=None),
    )
    with create_pipe_input() as pipe:
        prompter = TerminalPrompter(con, input=pipe, output=DummyOutput())
        pipe.send_text("y")
        await asyncio.wait_for(prompter.ask(req), 5)
    shown = out.getvalue()
    assert "+import os" in shown and "+print(os.sep)" in shown
    assert "+2 -0 lines" in shown
    assert "page through" not in shown  # short: nothing to page


async def test_a_long_rewrite_shows_both_sides_with_exact_counts() -> None:
    con, out = console()
    with create_pipe_input() as pipe:
        prompter = TerminalPrompter(con, input=pipe, output=DummyOutput())
        pipe.send_text("y")
        await asyncio.wait_for(prompter.ask(rewrite_request(300)), 5)
    shown = out.getvalue()
    assert "+300 -300 lines" in shown
    assert "-old line 0" in shown and "+new line 0" in shown
    removed = shown.count("-old line ")
    added = shown.count("+new line ")
    assert f"… {300 - removed} more removed lines" in shown
    assert f"… {300 - added} more added lines" in shown
    assert "/diff" not in shown
    assert "d page through all of it" in shown


async def test_d_pages_through_the_whole_diff_then_asks_again() -> None:
    con, _ = console()
    output, drawn = screen()
    with create_pipe_input() as pipe:
        prompter = TerminalPrompter(con, input=pipe, output=output)
        pipe.send_text("d")
        pipe.send_text("G")  # to the end of the diff
        pipe.send_text("q")
        pipe.send_text("y")
        result = await asyncio.wait_for(prompter.ask(rewrite_request(300)), 5)
    assert result.answer is Answer.YES
    paged = drawn.getvalue()
    assert "new line 299" in paged  # the last line of the diff, never shown at the prompt
    assert "of 604 · " in paged  # the status line: stat, 3 header lines, 600 changed


async def test_a_preview_never_pushes_the_question_off_a_small_screen() -> None:
    """A 60-line new file scrolled the question off a 24-row terminal: the preview is cut to
    what fits above the question, and `d` pages through the rest."""
    out = io.StringIO()
    con = Console(file=out, width=80, height=24, markup=False, highlight=False)
    content = "".join(f"line {n}\n" for n in range(60))
    req = PermissionRequest(
        call_id="call-s",
        tool="write_file",
        risk=Risk.WRITE,
        target=PermissionTarget(rule_class="write_file", subject="n.py", summary="create n.py"),
        suggested_rule=None,
        preview=small_diff(None, content, "n.py", max_lines=None),
    )
    with create_pipe_input() as pipe:
        prompter = TerminalPrompter(con, input=pipe, output=DummyOutput())
        pipe.send_text("y")
        await asyncio.wait_for(prompter.ask(req), 5)
    shown = out.getvalue().splitlines()
    assert len(shown) <= 24 - 1  # the `allow?` prompt's line still fits below
    assert "d page through all of it" in shown[-1]
    assert "+60 -0 lines" in out.getvalue()
