"""Renderers for `agentcli run`: progress on stderr, the answer on stdout.

- text: a compact line per tool call, retries and notices on stderr, and before a response's
  tool calls what the model said or (summarized) thought on the way; the final answer alone on
  stdout, so `agentcli run … > answer.txt` captures just the answer. Everything untrusted (the
  model's text, commands, paths, errors) goes through `agentcli.ui.term.safe` first: no control or
  escape sequence reaches the terminal.
- json: nothing while running; one JSON object on stdout at the end.
- stream-json: one JSON event per line on stdout as things happen, then the result object with
  `"type": "result"` as the last line.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
from collections import Counter
from typing import TYPE_CHECKING, Any, TextIO

from agentcli.events import (
    AcceptanceFinished,
    AcceptanceStarted,
    CompactionFinished,
    CompactionStarted,
    ContextFilling,
    Event,
    HookFinished,
    ModelResponded,
    ModelRetrying,
    Notice,
    PermissionDecided,
    RepairRound,
    SubagentEvent,
    SubagentFinished,
    SubagentStarted,
    TextDelta,
    ThinkingDelta,
    TodoUpdated,
    ToolCallFinished,
    ToolCallProposed,
    ToolCallStarted,
)
from agentcli.tasks import TaskResult
from agentcli.truncation import one_line, shorten
from agentcli.ui.term.long_session import compaction_text, context_filling_text, todo_line
from agentcli.ui.term.safe import safe_console, visible
from agentcli.words import plural

ANSWERED = frozenset({"end_turn", "stop_sequence"})
"""Stop reasons of a response that ended the model's turn: its text is the answer."""
PROGRESS_CHARS = 240
"""How much of what the model says between tool calls a progress line shows."""

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text


def _console(stream: TextIO) -> Console:
    return safe_console(file=stream, soft_wrap=True)


def _text(*parts: tuple[str, str]) -> Text:
    """A line from (text, style) pairs; the text is made visible (never read as markup)."""
    from rich.text import Text

    line = Text()
    for text, style in parts:
        line.append(visible(text), style=style)
    return line


def _target(inp: dict[str, Any]) -> str:
    """What a call is about, on one line: its path, command or pattern (a subagent's job: its
    description), else (an MCP tool's own arguments) its input as compact JSON."""
    for key in ("path", "command", "pattern", "description"):
        value = inp.get(key)
        if isinstance(value, str):
            return one_line(value, 80)
    if not inp:
        return ""
    return one_line(json.dumps(inp, ensure_ascii=False, separators=(",", ":")), 80)


CHECK_TAIL_LINES = 15
"""How much of a failed check's output text mode prints (the JSON result has its whole tail)."""


class TextProgress:
    """Human-readable progress on stderr (silent with --quiet)."""

    def __init__(self, *, quiet: bool = False, stream: TextIO | None = None) -> None:
        self.quiet = quiet
        self._stream = stream or sys.stderr
        self._console: Console | None = None
        self._inputs: dict[str, dict[str, Any]] = {}
        self._denials: dict[str, str] = {}
        """Why each denied call was denied, and how to allow it (said on its one line when it
        finishes)."""
        self._thinking: list[str] = []
        """The current response's (summarized) thinking: on the newest models, what it writes
        between tool calls arrives there."""

    @property
    def console(self) -> Console:
        if self._console is None:
            self._console = _console(self._stream)
        return self._console

    def __call__(self, event: Event) -> None:
        if isinstance(event, ThinkingDelta):
            self._thinking.append(event.text)
        if self.quiet or isinstance(event, TextDelta | ThinkingDelta):
            return
        if isinstance(event, ModelResponded | ModelRetrying):
            thought = "".join(self._thinking).strip()
            self._thinking.clear()
            if isinstance(event, ModelResponded) and event.tool_calls and thought:
                self.console.print(_text(("∴ " + one_line(thought, PROGRESS_CHARS), "dim")))
        line = self._line(event)
        if line is not None:
            self.console.print(line)

    def _line(self, event: Event) -> Text | None:
        if isinstance(event, SubagentStarted | SubagentFinished | SubagentEvent):
            return subagent_line(event, self._denials)
        return self._own_line(event)

    def _own_line(self, event: Event) -> Text | None:
        if isinstance(event, ToolCallProposed | ToolCallStarted):
            self._inputs[event.call_id] = event.input
            return None
        if isinstance(event, ToolCallFinished):
            target = _target(self._inputs.pop(event.call_id, {}))
            named = f" {event.name} {target}".rstrip()
            if event.status == "denied":
                why = self._denials.pop(event.call_id, "") or event.summary
                return _text(("⊘", "yellow"), (named, ""), (f" · denied: {why}", "yellow"))
            mark = ("✗", "red") if event.is_error else ("✓", "green")
            detail = (f" {event.summary}", "dim") if event.is_error else ("", "")
            return _text(mark, (named + " ", ""), (f"({event.duration_s:.2f}s)", "dim"), detail)
        if isinstance(event, ModelResponded) and event.tool_calls and event.text.strip():
            return _text((event.text.strip(), "dim"))
        if isinstance(event, ModelRetrying):
            return _text(
                (
                    f"model request failed ({event.reason}); retry {event.attempt} "
                    f"in {event.delay_s:.1f}s",
                    "yellow",
                )
            )
        if isinstance(event, PermissionDecided) and event.decision == "deny":
            allow = f" (to allow it: --allow '{event.rule}')" if event.rule else ""
            self._denials[event.call_id] = event.reason + allow  # said when the call finishes
            return None
        if isinstance(event, HookFinished) and event.blocked:
            return _text(*hook_block_line(event))
        if isinstance(event, Notice):
            return _text((event.message, "dim" if event.level == "info" else "yellow"))
        if isinstance(event, AcceptanceStarted):
            return _text(("checking", "cyan"), (f" {event.command}", ""))
        if isinstance(event, RepairRound):
            failed = ", ".join(event.failed)
            given = (
                "nothing changed since, the same evidence goes back to the model"
                if event.unchanged
                else "the model gets the evidence"
            )
            return _text(
                (f"repair round {event.round} of {event.of}", "magenta"),
                (f": {failed} failed; {given}", ""),
            )
        if isinstance(event, AcceptanceFinished):
            verdict = ("passed", "green") if event.passed else ("failed", "red")
            ran = f" {event.command} (exit {event.exit_code}, {event.duration_s:.1f}s)"
            return _text(verdict, (ran, ""))
        return _long_session_line(event)


def _long_session_line(event: Event) -> Text | None:
    """The todo list and the context's compaction, one line each."""
    if isinstance(event, TodoUpdated):
        return _text(("todo", "cyan"), (f" {todo_line(event.todos)}", ""))
    if isinstance(event, ContextFilling):
        return _text((context_filling_text(event), "yellow"))
    if isinstance(event, CompactionStarted):
        return _text(
            (f"compacting the context ({event.trigger})", "cyan"),
            (f": {event.tokens_before:,} tokens", ""),
        )
    if isinstance(event, CompactionFinished) and event.error is None:
        return _text(("compacted", "cyan"), (f" {compaction_text(event)}", ""))
    return None


def subagent_line(
    event: SubagentStarted | SubagentFinished | SubagentEvent, denials: dict[str, str]
) -> Text | None:
    """A subagent's lines in text progress: when it starts, its warnings and denied calls,
    and how it ended with what it spent (its other calls stay collapsed)."""
    if isinstance(event, SubagentStarted):
        return _text(("⤷ ", "cyan"), (f"{event.agent}: {one_line(event.description, 80)}", ""))
    if isinstance(event, SubagentFinished):
        mark = ("⤶ ", "green") if event.reason == "completed" else ("⤶ ", "yellow")
        how = event.reason if event.reason == "completed" else f"stopped: {event.reason}"
        cost = "cost unknown" if event.cost_usd is None else f"${event.cost_usd:.4f}"
        return _text(
            mark,
            (f"{event.agent}: {one_line(event.description, 80)} · {how}", ""),
            (
                f" · {plural(event.turns, 'turn')} · {plural(event.tool_calls, 'tool call')}"
                f" · {event.usage.total_tokens} tokens · {cost}",
                "dim",
            ),
        )
    inner, label = event.innermost, f"[{event.agent}] "
    if isinstance(inner, PermissionDecided) and inner.decision == "deny":
        denials[inner.call_id] = inner.reason
    elif isinstance(inner, ToolCallFinished) and inner.status == "denied":
        why = denials.pop(inner.call_id, "") or inner.summary
        return _text(
            (f"  {label}⊘", "yellow"), (f" {inner.name}", ""), (f" · denied: {why}", "yellow")
        )
    elif isinstance(inner, Notice) and inner.level != "info":
        return _text((f"  {label}{inner.message}", "yellow"))
    return None


def hook_block_line(event: HookFinished) -> tuple[tuple[str, str], ...]:
    """The one line a blocking hook gets (text progress, the REPL), as (text, style) parts."""
    what = "stopped" if event.decision == "stop" else "blocked"
    return (
        (f"{what} by hook", "red"),
        (f" {event.event} `{shorten(event.command, 80)}` ({event.source}): ", ""),
        (one_line(event.reason, PROGRESS_CHARS), ""),
    )


STREAM_SCHEMA_VERSION = 1
"""Bumped when an event's meaning or a field changes incompatibly (new event types and new
fields are not changes)."""


def timestamp() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")


class StreamJson:
    """One JSON object per line on stdout, each with its `type` and a `timestamp`. The first is
    the `init` event (`start`); what happens before it (notices while the session is built) is
    held back and follows it, and the last is the result object (`finish`)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        self._held: list[dict[str, Any]] | None = []

    def start(self, **init: Any) -> None:
        """Write the init event, then whatever was held back."""
        from agentcli import __version__

        self._write(
            {
                "type": "init",
                "schema_version": STREAM_SCHEMA_VERSION,
                "agentcli_version": __version__,
                **init,
                "timestamp": timestamp(),
            }
        )
        self._release()

    def __call__(self, event: Event) -> None:
        data = {**event.to_json(), "timestamp": timestamp()}
        if self._held is not None:
            self._held.append(data)
        else:
            self._write(data)

    def finish(self, result: TaskResult) -> None:
        """The result object, last (after anything still held back: the session never started)."""
        self._release()
        self._write({**result.to_json(), "timestamp": timestamp()})

    def _release(self) -> None:
        held, self._held = self._held or [], None
        for data in held:
            self._write(data)

    def _write(self, data: dict[str, Any]) -> None:
        self.stream.write(json.dumps(data, default=str) + "\n")
        self.stream.flush()


def print_result(
    result: TaskResult,
    output_format: str,
    *,
    quiet: bool = False,
    stream: StreamJson | None = None,
) -> None:
    if output_format == "json":
        sys.stdout.write(json.dumps(result.to_json()) + "\n")
    elif output_format == "stream-json":
        (stream or StreamJson()).finish(result)
    else:
        # Only an answer goes to stdout: the text of a response that ended the model's turn.
        # What it said on its way before a cancel, a timeout or a limit stopped it is narration
        # ("Running a slow command."), not an answer.
        if result.final_text and result.stop_reason in ANSWERED:
            sys.stdout.write(visible(result.final_text.rstrip("\n")) + "\n")
        if not quiet:
            _print_verdict(result)
        if result.exit_code:
            # The last line on stderr, even with --quiet: the answer above may claim success.
            why = result.error or _why(result).strip(" ()") or result.reason.value
            sys.stderr.write(f"agentcli: task {result.state.value}: {visible(why)}\n")
    sys.stdout.flush()


def _print_verdict(result: TaskResult) -> None:
    """Three separate things: what was proposed, what was executed, what was verified."""
    _print_lines(sys.stderr, _verdict_lines(result))


Line = tuple[tuple[str, str], ...]
"""A line as (text, style) parts."""


def _verdict_lines(result: TaskResult) -> list[Line]:
    cost = "unknown" if result.cost_usd is None else f"${result.cost_usd:.4f}"
    statuses = Counter(call["status"] for call in result.tool_calls)
    executed = ", ".join(f"{n} {status}" for status, n in sorted(statuses.items())) or "none"
    proposed = plural(len(result.tool_calls), "tool call")
    lines: list[Line] = [((f"proposed: {proposed} · executed: {executed}", "dim"),)]
    if result.acceptance:
        for number, check in enumerate(result.acceptance):
            mark = ("passed", "green") if check.passed else ("failed", "red")
            code = "timeout" if check.exit_code is None else f"exit {check.exit_code}"
            where = (check.artifact_version or "?")[:16]
            when = f"round {check.round}" if check.round else "first check"
            again = ", not run again: unchanged" if check.reused else ""
            lines.append(
                (
                    ("verified: ", ""),
                    mark,
                    (f" {check.command} ({code}) on {where}", ""),
                    (f" [{when}{again}]", "dim"),
                )
            )
            if not check.passed and _is_last_run(result, number):
                for line in check.output_tail.rstrip().splitlines()[-CHECK_TAIL_LINES:]:
                    lines.append(((f"    {line}", "dim"),))
    elif result.state.value == "unverified":
        lines.append((("verified: nothing — no acceptance checks were set (--accept)", ""),))
    color = {"succeeded": "green", "unverified": "yellow"}.get(result.state.value, "red")
    lines.append(
        (
            (f"task {result.state.value}", color),
            (
                f"{_why(result)} · {plural(result.turns, 'turn')} · "
                f"{result.usage.total_tokens} tokens · cost {cost}",
                "",
            ),
        )
    )
    if result.error and not result.exit_code:  # else it is the last line, said once below
        lines.append(((result.error, "red"),))
    return lines


def _print_lines(stream: TextIO, lines: list[Line]) -> None:
    """Through rich where styles can show (a terminal, or FORCE_COLOR/TTY_COMPATIBLE asking
    rich for them) or a tab must be laid out in cells; elsewhere rich would print the same
    characters without styles, so they are written as they are, sparing every run's exit
    rich's import (~30 ms)."""
    if _styles_show(stream) or any("\t" in text for line in lines for text, _ in line):
        console = _console(stream)
        for line in lines:
            console.print(_text(*line))
    else:
        plain = ("".join(visible(text) for text, _ in line) for line in lines)
        stream.write("".join(text.replace("\r\n", "\n") + "\n" for text in plain))


def _styles_show(stream: TextIO) -> bool:
    if os.environ.get("FORCE_COLOR") or os.environ.get("TTY_COMPATIBLE"):
        return True
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream: rich would not style it either
        return False


def _why(result: TaskResult) -> str:
    """Why the task ended, when it adds to its state: a failed task that the model completed
    failed its checks (`task failed (completed)` said nothing)."""
    reason = result.reason.value
    if reason == "completed":
        return " (acceptance checks failed)" if result.state.value == "failed" else ""
    return f" ({reason})"


def _is_last_run(result: TaskResult, number: int) -> bool:
    """Whether check `number` is the last run of its command (its output is the one to show:
    earlier rounds' failures were fixed or repeated)."""
    command = result.acceptance[number].command
    return all(later.command != command for later in result.acceptance[number + 1 :])
