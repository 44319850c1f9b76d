"""The REPL's task view: streamed markdown, tool lines, real diffs of edits, retries, checks,
and the closing verdict — rendered on a plain 80-column console (as under NO_COLOR)."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from agentcli.events import (
    AcceptanceFinished,
    ModelResponded,
    ModelRetrying,
    PermissionDecided,
    TextDelta,
    ThinkingDelta,
    ToolCallFinished,
    ToolCallProposed,
    ToolCallStarted,
    UsageUpdated,
)
from agentcli.tasks import CheckEvidence, TaskResult, TaskState
from agentcli.terminal_reason import TerminalReason
from agentcli.ui.repl.status import Status, format_tokens
from agentcli.ui.repl.stream import TaskView
from agentcli.ui.repl.verdict import verdict_text
from agentcli.ui.term.diffs import file_diff
from agentcli.usage import Usage


def plain_console(width: int = 80) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=width, markup=False, highlight=False, no_color=True), out


def view(workspace: Path) -> tuple[TaskView, io.StringIO, Status]:
    con, out = plain_console()
    status = Status(model="claude-sonnet-4-5", mode="default")
    return TaskView(con, status, workspace), out, status


def responded(text: str = "") -> ModelResponded:
    return ModelResponded(turn=1, stop_reason="end_turn", usage=Usage(), text=text, tool_calls=0)


def test_streamed_markdown_is_printed_once_in_order(workspace: Path) -> None:
    task, out, _ = view(workspace)
    task.start()
    answer = (
        "# Plan\n\n" + "".join(f"- step {n}\n" for n in range(1, 30)) + "\n```python\nx = 1\n```\n"
    )
    for start in range(0, len(answer), 5):
        task(TextDelta(text=answer[start : start + 5]))
    task(responded(answer))
    task.stop()
    text = out.getvalue()
    for n in range(1, 30):
        assert text.count(f"step {n}\n") == 1, n
    assert text.index("step 3") < text.index("step 29") < text.index("x = 1")
    assert "```" not in text  # rendered, not raw markdown
    assert "\n\n\n" not in text  # block margins are squeezed to one blank line


def finished(
    call_id: str, name: str, summary: str, duration_s: float, *, failed: bool = False
) -> ToolCallFinished:
    """A call's end as the runtime reports it."""
    return ToolCallFinished(
        call_id=call_id,
        name=name,
        status="failed" if failed else "succeeded",
        is_error=failed,
        summary=summary,
        duration_s=duration_s,
    )


def test_tool_line_and_denial(workspace: Path) -> None:
    task, out, status = view(workspace)
    task.start()
    task(ToolCallProposed(call_id="c1", name="read_file", input={"path": "src/app.py"}))
    task(ToolCallStarted(call_id="c1", name="read_file", input={"path": "src/app.py"}))
    assert status.activity == "read_file src/app.py"
    task(finished("c1", "read_file", "1\tx", 0.02))
    task(ToolCallStarted(call_id="c3", name="shell", input={"command": "make"}))
    task(finished("c3", "shell", "exit code 0; 1.50 s; 3 lines", 1.5))
    task(ToolCallProposed(call_id="c2", name="shell", input={"command": "rm -rf build"}))
    task(PermissionDecided(call_id="c2", name="shell", decision="deny", reason="user said no"))
    task(
        ToolCallFinished(
            call_id="c2",
            name="shell",
            status="denied",
            is_error=True,
            summary="permission denied: user said no",
            duration_s=0.0,
        )
    )
    task.stop()
    lines = out.getvalue().splitlines()
    assert "  ✓ read_file src/app.py · 0.02s" in lines
    assert "  ✓ shell make · 1.50s · exit code 0" in lines
    assert any(
        line.startswith("  ⊘ shell rm -rf build") and "denied" in line and "user said no" in line
        for line in lines
    )
    assert (task.proposed, task.executed, task.denied) == (2, 2, 1)


def test_an_edit_shows_the_real_diff_from_disk(workspace: Path) -> None:
    target = workspace / "app.py"
    target.write_text("a = 1\nb = 2\nc = 3\n")
    task, out, _ = view(workspace)
    task.start()
    args = {"path": "app.py", "old_string": "b = 2", "new_string": "b = 20"}
    task(ToolCallStarted(call_id="e1", name="edit_file", input=args))
    target.write_text("a = 1\nb = 20\nc = 3\n")  # what the tool did on disk
    task(finished("e1", "edit_file", "edited app.py", 0.01))
    task.stop()
    text = out.getvalue()
    assert "✓ edit_file app.py" in text and "+1 -1" in text
    assert "    -b = 2\n" in text and "    +b = 20\n" in text


def test_a_previewed_edit_is_not_shown_twice(workspace: Path) -> None:
    (workspace / "n.txt").write_text("x\n")
    task, out, _ = view(workspace)
    task.previewed.add("e2")
    task.start()
    task(ToolCallStarted(call_id="e2", name="write_file", input={"path": "n.txt"}))
    (workspace / "n.txt").write_text("y\n")
    task(finished("e2", "write_file", "", 0.0))
    task.stop()
    assert "+1 -1" in out.getvalue()
    assert "+y" not in out.getvalue()


def test_file_diff_new_file_and_binary() -> None:
    created = file_diff("new.py", None, b"print(1)\n")
    assert created is not None and created.stat == "+1 -0"
    assert created.lines[0] == "--- /dev/null"
    assert file_diff("x.bin", b"\x00\xff", b"\xfe\xff\x00") is None
    assert file_diff("same.py", b"a\n", b"a\n") is None


def test_retry_voids_the_partial_answer(workspace: Path) -> None:
    task, out, _ = view(workspace)
    task.start()
    task(TextDelta(text="".join(f"para {n}\n\n" for n in range(12))))
    task.markdown.add("", force=True)
    task(ModelRetrying(attempt=1, delay_s=0.5, reason="stream broke"))
    task(TextDelta(text="fresh answer"))
    task(responded())
    task.stop()
    text = out.getvalue()
    assert "↻ retry 1 in 0.5s (stream broke); the text above is void" in text
    assert text.rstrip().endswith("fresh answer")


def test_thinking_between_tool_calls_is_shown_once_and_never_drives_the_terminal(
    workspace: Path,
) -> None:
    task, out, status = view(workspace)
    task.start()
    task(ThinkingDelta(text="Checking the tests\x1b[2J first."))
    assert status.activity.startswith("thinking: Checking the tests")
    task(ModelResponded(turn=1, stop_reason="tool_use", usage=Usage(), text="", tool_calls=1))
    task(ThinkingDelta(text="Now the answer."))
    task(responded("done"))  # no tool calls: the answer follows, no progress line
    task.stop()
    text = out.getvalue()
    assert text.count("∴") == 1 and "∴ Checking the tests\\x1b[2J first." in text
    assert "Now the answer" not in text


def test_usage_and_checks(workspace: Path) -> None:
    task, out, status = view(workspace)
    status.task_began()
    task.start()
    task(UsageUpdated(usage=Usage(input_tokens=1200, output_tokens=300), cost_usd=0.0081))
    assert status.usage.total_tokens == 1500 and status.cost == 0.0081
    task(
        AcceptanceFinished(
            command="pytest -q",
            passed=False,
            exit_code=1,
            duration_s=1.25,
            artifact_version="git:0123456789abcdef",
        )
    )
    task.stop()
    assert "✗ check failed pytest -q · exit 1 · 1.2s · on git:012345" in out.getvalue()


def result(state: TaskState, reason: TerminalReason, **extra: object) -> TaskResult:
    fields: dict[str, object] = {
        "session_id": "s",
        "task_id": "t",
        "state": state,
        "reason": reason,
        "final_text": None,
        "turns": 2,
        "duration_s": 3.5,
        "usage": Usage(input_tokens=1000, output_tokens=234),
        "cost_usd": 0.0065,
        **extra,
    }
    return TaskResult(**fields)  # type: ignore[arg-type]


def render(text: object) -> str:
    con, out = plain_console()
    con.print(text)
    return out.getvalue()


def test_verdicts_keep_proposed_executed_verified_apart() -> None:
    unverified = render(
        verdict_text(result(TaskState.UNVERIFIED, TerminalReason.COMPLETED), proposed=3, executed=2)
    )
    assert "● task unverified" in unverified
    assert "proposed 3 · executed 2 · no acceptance checks set (/accept CMD)" in unverified
    assert "2 turns · 1.2k tok · $0.0065 · 3.5s" in unverified
    one_turn = result(TaskState.ABORTED, TerminalReason.COMPLETED)
    one_turn.turns = 1
    assert "  1 turn · 1.2k tok" in render(verdict_text(one_turn, proposed=1, executed=0))
    check = CheckEvidence(
        command="pytest",
        exit_code=0,
        passed=True,
        artifact_version="git:abcdef0123456",
        output_tail="",
        duration_s=1.0,
    )
    verified = render(
        verdict_text(
            result(
                TaskState.SUCCEEDED,
                TerminalReason.COMPLETED,
                acceptance=[check],
                artifact_version="git:abcdef0123456",
            ),
            proposed=1,
            executed=1,
        )
    )
    assert "✓ task succeeded" in verified and "verified 1/1 checks passed on git:abcdef" in verified
    failed = render(
        verdict_text(
            result(TaskState.FAILED, TerminalReason.MODEL_ERROR, error="authentication failed\nx"),
            proposed=0,
            executed=0,
        )
    )
    assert "✗ task failed (model_error)" in failed and "authentication failed" in failed
    assert "Traceback" not in failed
    aborted = render(
        verdict_text(result(TaskState.ABORTED, TerminalReason.ABORTED), proposed=1, executed=1)
    )
    assert "■ task cancelled · history kept" in aborted
    for text in (unverified, verified, failed, aborted):
        assert max(len(line) for line in text.splitlines()) <= 80


def test_a_long_error_is_cut_in_the_verdict_and_says_so() -> None:
    long = "connection refused by the proxy " * 10 + "THE-END"
    failed = render(
        verdict_text(
            result(TaskState.FAILED, TerminalReason.MODEL_ERROR, error=long + "\nsecond line"),
            proposed=0,
            executed=0,
        )
    )
    joined = " ".join(line.strip() for line in failed.splitlines())
    assert "connection refused by the proxy" in joined and joined.count("…") == 1
    assert "THE-END" not in joined and "second line" not in joined


def test_status_lines_fit_80_columns() -> None:
    status = Status(model="claude-opus-4-1-20250805-with-a-long-suffix", mode="accept-edits")
    status.task_began()
    status.activity = "shell " + "x" * 200
    status.task_usage_updated(Usage(input_tokens=2_345_678), None)
    assert len(status.live_line(64)) <= 64
    assert "cost unknown" in status.live_line(64)
    assert len(status.line(78)) <= 78
    status.task_ended("unverified", Usage(input_tokens=2_345_678), None)
    assert status.cost is None  # one unknown price makes the session total unknown
    assert status.usage.total_tokens == 2_345_678
    assert [format_tokens(n) for n in (950, 12_345, 1_200_000)] == ["950", "12.3k", "1.20M"]


def test_a_failed_calls_error_is_said_whole(workspace: Path) -> None:
    task, out, _ = view(workspace)
    task.start()
    error = (
        "hello.txt exists and has not been read in this session; read it with read_file "
        "first, then retry (so nothing you have not seen is overwritten)"
    )
    task(ToolCallStarted(call_id="c1", name="write_file", input={"path": "hello.txt"}))
    task(finished("c1", "write_file", error, 0.0, failed=True))
    task.stop()
    flat = " ".join(out.getvalue().split())  # the console wraps at 80 columns
    assert f"✗ write_file hello.txt · 0.00s · {error}" in flat
