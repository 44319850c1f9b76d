"""Renderers for `agentcli run`: progress on stderr, the answer on stdout.

- text: a compact line per tool call, retries and notices on stderr; the final answer alone on
  stdout, so `agentcli run … > answer.txt` captures just the answer.
- json: nothing while running; one JSON object on stdout at the end.
- stream-json: one JSON event per line on stdout as things happen, then the result object with
  `"type": "result"` as the last line.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from typing import TYPE_CHECKING, Any, TextIO

from agentcli.events import (
    AcceptanceFinished,
    AcceptanceStarted,
    Event,
    ModelResponded,
    ModelRetrying,
    Notice,
    PermissionDecided,
    TextDelta,
    ThinkingDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from agentcli.tasks import TaskResult

if TYPE_CHECKING:
    from rich.console import Console


def escape(text: str) -> str:
    # rich is imported on first use: `run` prints nothing before its first request.
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def _console(stream: TextIO) -> Console:
    from rich.console import Console

    return Console(file=stream, highlight=False, soft_wrap=True)


def _target(inp: dict[str, Any]) -> str:
    for key in ("path", "command", "pattern"):
        value = inp.get(key)
        if isinstance(value, str):
            return value if len(value) <= 80 else value[:77] + "…"
    return ""


class TextProgress:
    """Human-readable progress on stderr (silent with --quiet)."""

    def __init__(self, *, quiet: bool = False, stream: TextIO | None = None) -> None:
        self.quiet = quiet
        self._stream = stream or sys.stderr
        self._console: Console | None = None
        self._inputs: dict[str, dict[str, Any]] = {}

    @property
    def console(self) -> Console:
        if self._console is None:
            self._console = _console(self._stream)
        return self._console

    def __call__(self, event: Event) -> None:
        if self.quiet or isinstance(event, TextDelta | ThinkingDelta):
            return
        out = self.console.print
        if isinstance(event, ToolCallStarted):
            self._inputs[event.call_id] = event.input
        elif isinstance(event, ToolCallFinished):
            target = escape(_target(self._inputs.get(event.call_id, {})))
            mark = "[red]✗[/red]" if event.is_error else "[green]✓[/green]"
            detail = f" [dim]{escape(event.summary)}[/dim]" if event.is_error else ""
            out(f"{mark} {event.name} {target} [dim]({event.duration_s:.2f}s)[/dim]{detail}")
        elif isinstance(event, ModelResponded) and event.tool_calls and event.text.strip():
            out(f"[dim]{escape(event.text.strip())}[/dim]")
        elif isinstance(event, ModelRetrying):
            out(
                f"[yellow]model request failed ({escape(event.reason)}); retry {event.attempt} "
                f"in {event.delay_s:.1f}s[/yellow]"
            )
        elif isinstance(event, PermissionDecided) and event.decision == "deny":
            out(f"[red]denied[/red] {event.name}: {escape(event.reason)}")
        elif isinstance(event, Notice):
            out(f"[yellow]{escape(event.message)}[/yellow]")
        elif isinstance(event, AcceptanceStarted):
            out(f"[cyan]checking[/cyan] {escape(event.command)}")
        elif isinstance(event, AcceptanceFinished):
            verdict = "[green]passed[/green]" if event.passed else "[red]failed[/red]"
            out(
                f"{verdict} {escape(event.command)} (exit {event.exit_code}, "
                f"{event.duration_s:.1f}s)"
            )


class StreamJson:
    """One JSON object per line on stdout."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout

    def __call__(self, event: Event) -> None:
        self.stream.write(json.dumps(event.to_json(), default=str) + "\n")
        self.stream.flush()


def print_result(result: TaskResult, output_format: str, *, quiet: bool = False) -> None:
    if output_format == "json":
        sys.stdout.write(json.dumps(result.to_json()) + "\n")
    elif output_format == "stream-json":
        sys.stdout.write(json.dumps({"type": "result", **result.to_json()}) + "\n")
    else:
        if result.final_text:
            sys.stdout.write(result.final_text.rstrip("\n") + "\n")
        if not quiet:
            _print_verdict(result)
    sys.stdout.flush()


def _print_verdict(result: TaskResult) -> None:
    """Three separate things: what was proposed, what was executed, what was verified."""
    console = _console(sys.stderr)
    cost = "unknown" if result.cost_usd is None else f"${result.cost_usd:.4f}"
    statuses = Counter(call["status"] for call in result.tool_calls)
    executed = ", ".join(f"{n} {status}" for status, n in sorted(statuses.items())) or "none"
    console.print(
        f"[dim]proposed: {len(result.tool_calls)} tool calls · executed: {executed}[/dim]"
    )
    if result.acceptance:
        for check in result.acceptance:
            mark = "[green]passed[/green]" if check.passed else "[red]failed[/red]"
            code = "timeout" if check.exit_code is None else f"exit {check.exit_code}"
            console.print(
                f"verified: {mark} {escape(check.command)} ({code}) on "
                f"{(check.artifact_version or '?')[:16]}"
            )
    elif result.state.value == "unverified":
        console.print("verified: nothing — no acceptance checks were set (--accept)")
    color = {"succeeded": "green", "unverified": "yellow"}.get(result.state.value, "red")
    console.print(
        f"[{color}]task {result.state.value}[/{color}] ({result.reason.value}) · "
        f"{result.turns} turns · {result.usage.total_tokens} tokens · cost {cost}"
    )
    if result.error:
        console.print(f"[red]{escape(result.error)}[/red]")
