"""The REPL's live view of a running task, fed by the loop's typed events.

Assistant text streams as markdown (`markdown.MarkdownStream`): lines that can no longer change
are printed once, above a small live area that holds the unfinished tail and the status line, so
long answers scroll normally and nothing flickers or repeats. Tool calls, denials, retries and
acceptance checks get one compact line each; file edits get their diff. The model's summarized
thinking shows in the status line while it arrives, and as one dim line before the tool calls
it led to (on the newest models, what the model says between tool calls arrives there).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.segment import Segment, Segments
from rich.text import Text

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
    PermissionAsked,
    PermissionDecided,
    SubagentEvent,
    SubagentFinished,
    SubagentStarted,
    TextDelta,
    ThinkingDelta,
    TodoUpdated,
    ToolCallFinished,
    ToolCallProposed,
    ToolCallStarted,
    TurnStarted,
    UsageUpdated,
)
from agentcli.truncation import one_line, shorten
from agentcli.ui.repl.calls import FILE_TOOLS, call_line, call_target, read_image
from agentcli.ui.repl.escape import EscapeWatcher
from agentcli.ui.repl.markdown import MarkdownStream
from agentcli.ui.repl.status import Status
from agentcli.ui.repl.subagents import Subagents
from agentcli.ui.term.diffs import diff_text, file_diff
from agentcli.ui.term.long_session import compaction_text, context_filling_text
from agentcli.ui.term.safe import visible

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

ERROR_DETAIL_CHARS = 1000
"""How much of a failed call's error its line shows (its whole message, in practice)."""


class TaskView:
    """An EventSink that draws one task at a time on a rich Console."""

    def __init__(
        self, console: Console, status: Status, workspace: Path, *, watch_escape: bool = False
    ) -> None:
        self.console = console
        self.status = status
        self.escape = EscapeWatcher(enabled=watch_escape, on_ctrl_t=self.toggle_todos)
        self.workspace = workspace
        self.markdown = MarkdownStream(console)
        self.previewed: set[str] = set()
        """Calls whose diff the user already saw in a permission prompt."""
        self._live: Live | None = None
        self._inputs: dict[str, dict[str, object]] = {}
        self._before: dict[str, bytes | None] = {}
        self.proposed = 0
        self.executed = 0
        self.denied = 0
        self.first_images: dict[str, bytes | None] = {}
        """Each file the task's file tools changed, as it was before the task touched it."""
        self._thinking: list[str] = []
        """The current response's summarized thinking so far."""
        self.subagents = Subagents()
        """The task's running subagents: a live line each."""

    # -- the live area ---------------------------------------------------------------------
    def _renderable(self) -> RenderableType:
        tail = [seg for line in self.markdown.visible_tail() for seg in (*line, Segment.line())]
        frame = SPINNER[int(time.monotonic() * 10) % len(SPINNER)]
        width = max(20, self.console.width)
        hint = " · Esc or Ctrl-C cancels"
        line = self.status.live_line(width - 2 - len(hint))
        todos = [
            Text(f"  {visible(item, keep='')}"[:width], no_wrap=True)
            for item in self.status.checklist(idle=False)
        ]
        return Group(
            Segments(tail),
            *todos,
            *self.subagents.lines(width),
            Text(f"{frame} {line}{hint}", style="dim", no_wrap=True),
        )

    def toggle_todos(self) -> None:
        """Ctrl-T: show or hide the todo list."""
        self.status.show_todos = not self.status.show_todos

    def begin_task(self) -> None:
        """Counters and file images start again for a new task."""
        self.proposed = self.executed = self.denied = 0
        self.first_images.clear()
        self.subagents.clear()

    def start(self) -> None:
        self._resume_live()
        self.escape.start()

    def _resume_live(self) -> None:
        if self._live is None and self.console.is_terminal:
            self._live = Live(
                console=self.console,
                get_renderable=self._renderable,
                refresh_per_second=8,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()

    def _stop_live(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def stop(self) -> None:
        self.escape.stop()
        self.markdown.finish()
        self._stop_live()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Hand the terminal to something else (a permission prompt) for a while."""
        self.markdown.finish()
        was_live = self._live is not None
        self._stop_live()
        try:
            with self.escape.paused():
                yield
        finally:
            if was_live:
                self._resume_live()

    # -- events ----------------------------------------------------------------------------
    def __call__(self, event: Event) -> None:
        if isinstance(event, SubagentStarted | SubagentEvent | SubagentFinished):
            self._subagent(event)
        elif isinstance(event, TextDelta):
            self.status.activity = "writing"
            self.markdown.add(event.text)
        elif isinstance(event, ThinkingDelta):
            self._thinking.append(event.text)
            latest = "".join(self._thinking).strip().splitlines()
            self.status.activity = "thinking" + (f": {latest[-1][-60:]}" if latest else "")
        elif isinstance(event, TurnStarted):
            self.status.activity = f"waiting for the model (turn {event.turn})"
        elif isinstance(event, UsageUpdated):
            self.status.task_usage_updated(event.usage, event.cost_usd)
        elif isinstance(event, ModelResponded):
            self.markdown.finish()
            self.status.activity = ""
            thought = "".join(self._thinking).strip()
            self._thinking.clear()
            if event.tool_calls and thought:
                line = one_line(visible(thought), 200)
                self.console.print(Text(f"  ∴ {line}", style="dim"))
        elif isinstance(event, ModelRetrying):
            self._thinking.clear()
            self._retrying(event)
        elif isinstance(event, TodoUpdated | ContextFilling | CompactionStarted):
            self._long_session(event)
        elif isinstance(event, CompactionFinished):
            self._compacted(event)
        else:
            self._tool_or_check(event)

    def _subagent(self, event: SubagentStarted | SubagentEvent | SubagentFinished) -> None:
        line, state = self.subagents.update(event)
        if state is not None:
            self.status.state = state
        if line is not None:
            self.markdown.finish()
            self.console.print(line)

    def _long_session(self, event: TodoUpdated | ContextFilling | CompactionStarted) -> None:
        if isinstance(event, TodoUpdated):
            self.status.todos = list(event.todos)
        elif isinstance(event, ContextFilling):
            share = event.tokens / event.window if event.window else 0.0
            self.status.context = f"ctx {share:.0%}"
            self.console.print(Text(f"  {visible(context_filling_text(event))}", style="yellow"))
        else:
            self.markdown.finish()
            self.status.activity = f"compacting the context ({event.trigger})"

    def _compacted(self, event: CompactionFinished) -> None:
        self.status.activity = ""
        if event.error is not None:
            return  # the notice that follows says why
        self.status.context = ""
        self.console.print(Text(f"  ⇣ compacted {visible(compaction_text(event))}", style="cyan"))

    def _retrying(self, event: ModelRetrying) -> None:
        shown = self.markdown.discard()
        void = "; the text above is void" if shown else ""
        reason = visible(shorten(event.reason, 40))
        self.console.print(
            Text(
                f"  ↻ retry {event.attempt} in {event.delay_s:.1f}s ({reason}){void}",
                style="yellow",
            )
        )

    def _tool_or_check(self, event: Event) -> None:
        if isinstance(event, ToolCallProposed):
            self.proposed += 1
            self._inputs[event.call_id] = event.input
        elif isinstance(event, PermissionAsked):
            self.status.state = "waiting"
        elif isinstance(event, PermissionDecided):
            self.status.state = "running"
        elif isinstance(event, ToolCallStarted):
            self.executed += 1
            self._inputs[event.call_id] = event.input
            self.status.activity = f"{event.name} {call_target(event.input, 30)}".strip()
            if event.name in FILE_TOOLS:
                image = read_image(self.workspace, event.input)
                self._before[event.call_id] = image
                self.first_images.setdefault(str(event.input.get("path", "")), image)
        elif isinstance(event, ToolCallFinished):
            self._finished(event)
        elif isinstance(event, Notice):
            style = "red" if event.level == "error" else "yellow"
            self.console.print(Text(f"  {visible(event.message)}", style=style))
        elif isinstance(event, HookFinished) and event.blocked:
            self.markdown.finish()
            what = "stopped" if event.decision == "stop" else "blocked"
            line = f"{event.event} `{shorten(event.command, 60)}` ({event.source}): {event.reason}"
            self.console.print(Text(f"  ⊘ {what} by hook {one_line(visible(line), 240)}", "red"))
        elif isinstance(event, AcceptanceStarted):
            self.markdown.finish()
            self.status.activity = f"checking {event.command}"
        elif isinstance(event, AcceptanceFinished):
            self._check_line(event)

    def _finished(self, event: ToolCallFinished) -> None:
        self.markdown.finish()
        self.status.activity = ""
        if event.status == "denied":
            self.denied += 1
        inp = self._inputs.pop(event.call_id, {})
        diff = None
        if event.call_id in self._before:
            before = self._before.pop(event.call_id)
            path = str(inp.get("path", ""))
            diff = file_diff(path, before, read_image(self.workspace, inp))
        detail = event.summary if event.is_error else (diff.stat if diff else "")
        if not event.is_error and event.summary.startswith(("exit code", "killed by")):
            detail = event.summary.split(";")[0]  # a command's status line: "exit code 0"
        self.console.print(
            call_line(
                event.name,
                call_target(inp),
                status=event.status,
                is_error=event.is_error,
                duration_s=event.duration_s,
                # An error is said whole (as `run` says it): cut, "read it with read_file
                # first, then retry (so nothing you have no" left the user guessing.
                detail=one_line(detail, ERROR_DETAIL_CHARS if event.is_error else 120),
            )
        )
        if diff is not None and event.call_id not in self.previewed:
            self.console.print(diff_text(diff.lines), end="", soft_wrap=True)

    def _check_line(self, event: AcceptanceFinished) -> None:
        self.status.activity = ""
        mark, style, verdict = ("✓", "green", "passed") if event.passed else ("✗", "red", "failed")
        line = Text("  ")
        line.append(f"{mark} check {verdict}", style=style)
        line.append(f" {visible(event.command, keep='')}")
        version = f" · on {event.artifact_version[:10]}" if event.artifact_version else ""
        line.append(f" · exit {event.exit_code} · {event.duration_s:.1f}s{version}", style="dim")
        self.console.print(line)
