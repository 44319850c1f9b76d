"""`run`'s text mode as a user reads it on stderr: one line per call with what it was about
(denied and MCP calls too), counts in words that agree with their numbers, why a task failed
without repeating itself, and the output of a check that failed."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcli.events import PermissionDecided, ToolCallFinished, ToolCallProposed
from agentcli.tasks import CheckEvidence, TaskResult, TaskState
from agentcli.terminal_reason import TerminalReason
from agentcli.ui import render
from agentcli.ui.render import TextProgress, print_result
from agentcli.usage import Usage


def progress_of(*events: object) -> str:
    out = io.StringIO()
    progress = TextProgress(stream=out)
    for event in events:
        progress(event)  # type: ignore[arg-type]
    return out.getvalue()


def test_a_denied_call_is_one_line_with_its_command_and_why() -> None:
    text = progress_of(
        ToolCallProposed(call_id="c1", name="shell", input={"command": "rm -rf build"}),
        PermissionDecided(call_id="c1", name="shell", decision="deny", reason="no terminal"),
        ToolCallFinished(
            call_id="c1", name="shell", status="denied", is_error=True, summary="x", duration_s=0
        ),
    )
    assert text.strip().splitlines() == ["⊘ shell rm -rf build · denied: no terminal"]


def test_an_mcp_call_shows_its_arguments() -> None:
    text = progress_of(
        ToolCallProposed(call_id="c2", name="mcp__notes__add", input={"title": "groceries"}),
        ToolCallFinished(
            call_id="c2",
            name="mcp__notes__add",
            status="succeeded",
            is_error=False,
            summary="ok",
            duration_s=0.01,
        ),
    )
    assert text.strip() == '✓ mcp__notes__add {"title":"groceries"} (0.01s)'


def result(**changes: object) -> TaskResult:
    base: dict[str, object] = {
        "session_id": "S",
        "task_id": "T",
        "state": TaskState.UNVERIFIED,
        "reason": TerminalReason.COMPLETED,
        "final_text": "the answer",
        "turns": 1,
        "duration_s": 1.0,
        "usage": Usage(),
        "cost_usd": 0.0,
        "tool_calls": [{"id": "c", "name": "read_file", "input": {}, "status": "succeeded"}],
        "stop_reason": "end_turn",
    }
    return TaskResult(**{**base, **changes})  # type: ignore[arg-type]


def test_counts_agree_with_their_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    print_result(result(), "text")
    err = capsys.readouterr().err
    assert "proposed: 1 tool call ·" in err and "1 turn ·" in err
    assert "1 tool calls" not in err and "1 turns" not in err


def test_a_failed_check_shows_its_output_and_the_reason_is_said_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    failing = CheckEvidence(
        command="pytest -q",
        exit_code=1,
        passed=False,
        artifact_version="files:abc",
        output_tail="collected 3 items\nFAILED test_calc.py::test_add - assert 1 == 3\n",
        duration_s=0.5,
    )
    done = result(
        state=TaskState.FAILED,
        acceptance=[failing],
        error="acceptance checks failed after 3 repair rounds",
    )
    print_result(done, "text")
    out, err = capsys.readouterr()
    assert out == "the answer\n"
    assert "    FAILED test_calc.py::test_add - assert 1 == 3" in err
    assert "task failed (acceptance checks failed)" in err and "(completed)" not in err
    assert err.count("acceptance checks failed after 3 repair rounds") == 1
    assert err.rstrip().splitlines()[-1].startswith("agentcli: task failed: ")


@pytest.mark.parametrize(
    "reason", [TerminalReason.ABORTED, TerminalReason.TIMEOUT, TerminalReason.MAX_TURNS]
)
def test_narration_of_a_task_that_did_not_end_is_not_printed_as_the_answer(
    reason: TerminalReason, capsys: pytest.CaptureFixture[str]
) -> None:
    state = TaskState.ABORTED if reason is TerminalReason.ABORTED else TaskState.BUDGET_EXHAUSTED
    stopped = result(
        state=state, reason=reason, final_text="Running a slow command.", stop_reason="tool_use"
    )
    print_result(stopped, "text")
    out, err = capsys.readouterr()
    assert out == ""  # `agentcli run … > answer.txt` gets no narration for an answer
    assert err.rstrip().splitlines()[-1].startswith(f"agentcli: task {state.value}: ")


def test_a_denied_call_says_the_whole_rule_that_would_allow_it() -> None:
    """The hint was the model's text cut at 200 characters (`--allow 'mcp__notes__add_no`)."""
    rule = "mcp__notes__add_note_with_a_rather_long_name"
    text = progress_of(
        ToolCallProposed(call_id="c3", name=rule, input={"title": "x"}),
        PermissionDecided(
            call_id="c3", name=rule, decision="deny", reason="no terminal", rule=rule
        ),
        ToolCallFinished(
            call_id="c3", name=rule, status="denied", is_error=True, summary="x", duration_s=0
        ),
    )
    assert text.strip().endswith(f"denied: no terminal (to allow it: --allow '{rule}')")
    assert "Do not retry" not in text


@settings(max_examples=300)
@given(
    st.lists(
        st.lists(
            st.tuples(st.text(), st.sampled_from(["", "dim", "red", "green"])),
            min_size=1,
            max_size=4,
        ),
        max_size=4,
    )
)
def test_lines_written_without_rich_are_what_rich_writes(
    parts: list[list[tuple[str, str]]],
) -> None:
    """Where no style can show (not a terminal), the verdict skips rich's import: the
    characters must be the ones rich itself writes there (the oracle), whatever the text."""
    lines = [tuple(line) for line in parts]
    plain, through_rich = io.StringIO(), io.StringIO()
    render._print_lines(plain, lines)
    console = render._console(through_rich)
    for line in lines:
        console.print(render._text(*line))
    assert plain.getvalue() == through_rich.getvalue()
