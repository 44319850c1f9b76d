"""What the REPL says when a task ends: what was proposed, what was executed, and what was
verified, kept apart so a model's "done" is never mistaken for a passed check; then whatever
the permission policy wants the user to hear."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from agentcli.tasks import TaskResult, TaskState
from agentcli.truncation import shorten
from agentcli.ui.repl.status import Status, format_cost, format_tokens
from agentcli.ui.term.safe import visible
from agentcli.words import plural

ERROR_LINE_CHARS = 200
"""The task's error in the verdict: its first line, cut here with `…` (the verdict stays short)."""

_HEADLINE = {
    TaskState.SUCCEEDED: ("✓", "green", "succeeded"),
    TaskState.UNVERIFIED: ("●", "yellow", "unverified"),
    TaskState.FAILED: ("✗", "red", "failed"),
    TaskState.BUDGET_EXHAUSTED: ("✗", "red", "stopped at a limit"),
    TaskState.ABORTED: ("■", "yellow", "cancelled"),
}


def _verification(result: TaskResult) -> str:
    checks = result.acceptance
    if not checks:
        if result.state is TaskState.UNVERIFIED:
            return "no acceptance checks set (/accept CMD)"
        return "no checks ran"
    passed = sum(1 for c in checks if c.passed)
    version = f" on {result.artifact_version[:10]}" if result.artifact_version else ""
    return f"verified {passed}/{len(checks)} checks passed{version}"


def verdict_text(result: TaskResult, *, proposed: int, executed: int) -> Text:
    """Two short lines: the task state with why, then the numbers."""
    mark, style, word = _HEADLINE.get(result.state, ("✗", "red", result.state.value))
    text = Text()
    text.append(f"{mark} task {word}", style=f"bold {style}")
    if result.state is TaskState.ABORTED:
        text.append(" · history kept; continue with a new message", style="dim")
    elif result.state is not TaskState.SUCCEEDED and result.reason.value != "completed":
        text.append(f" ({result.reason.value})", style=style)
    text.append("\n")
    if result.error and result.state is not TaskState.ABORTED:
        first = result.error.strip().splitlines()[0] if result.error.strip() else ""
        text.append(f"  {shorten(first, ERROR_LINE_CHARS)}\n", style=style)
    text.append(
        f"  proposed {proposed} · executed {executed} · {_verification(result)}\n"
        f"  {plural(result.turns, 'turn')} · "
        f"{format_tokens(result.usage.total_tokens)} tok · "
        f"{format_cost(result.cost_usd)} · {result.duration_s:.1f}s",
        style="dim",
    )
    return text


def report_task(
    console: Console, status: Status, result: TaskResult | None, *, proposed: int, executed: int
) -> None:
    """The verdict of a task that ended (None: it ended in an internal error, already said)."""
    if result is None:
        status.task_ended("failed", status.task_usage, status.task_cost)
        return
    console.print(verdict_text(result, proposed=proposed, executed=executed))
    status.task_ended(result.state.value, result.usage, result.cost_usd)


def policy_notices(console: Console, notices: list[str]) -> None:
    """Things the permission policy wants the user to hear (e.g. a rule it could not save)."""
    for notice in notices:
        console.print(Text(f"  {visible(notice)}", style="yellow"))
