"""The REPL's status line: model, permission mode, tokens and cost so far, and the task state.

One `Status` object is shared by the prompt (bottom toolbar) and the task renderer (live line
under the streamed answer). Session totals are the finished tasks' usage plus the running task's
usage so far, so the numbers never jump backwards when a task ends.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from agentcli.truncation import shorten
from agentcli.ui.term.safe import visible
from agentcli.usage import SessionTotals, Usage


def format_tokens(count: int) -> str:
    """Compact token counts for an 80-column line: 950, 12.3k, 1.20M."""
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        return f"{count / 1000:.1f}k"
    return f"{count / 1_000_000:.2f}M"


def format_cost(cost: float | None) -> str:
    return "cost unknown" if cost is None else f"${cost:.4f}"


@dataclass
class Status:
    model: str
    mode: str
    state: str = "idle"
    """idle, running, waiting (for a permission answer), or the last task's final state."""
    activity: str = ""
    """What the running task is doing right now (e.g. `shell pytest -q`)."""
    done_usage: Usage = field(default_factory=Usage)
    done_cost: float | None = 0.0
    """Cost of finished tasks; None once any task's cost was unknown (never guessed)."""
    tasks: int = 0
    task_usage: Usage = field(default_factory=Usage)
    task_cost: float | None = 0.0
    task_started: float | None = None
    context: str = ""
    """How full the context is, once past `[context] warn_at` (`ctx 78%`); empty below."""
    todos: list[dict[str, str]] = field(default_factory=list)
    """The todo list as `todo_write` last saved it."""
    show_todos: bool = True
    """Whether the checklist is shown (Ctrl-T toggles it)."""

    @property
    def usage(self) -> Usage:
        return self.done_usage + self.task_usage

    @property
    def cost(self) -> float | None:
        if self.done_cost is None or self.task_cost is None:
            return None
        return self.done_cost + self.task_cost

    def task_began(self) -> None:
        self.state = "running"
        self.activity = ""
        self.task_usage = Usage()
        self.task_cost = 0.0
        self.task_started = time.monotonic()

    def task_usage_updated(self, usage: Usage, cost: float | None) -> None:
        self.task_usage = usage
        self.task_cost = cost

    def task_ended(self, state: str, usage: Usage, cost: float | None) -> None:
        self.done_usage = self.done_usage + usage
        self.done_cost = None if self.done_cost is None or cost is None else self.done_cost + cost
        self.task_usage = Usage()
        self.task_cost = 0.0
        self.tasks += 1
        self.state = state
        self.activity = ""
        self.task_started = None

    def add_usage(self, usage: Usage, cost: float | None) -> None:
        """Usage outside a task (`/compact`'s summary request) joins the session's totals."""
        self.done_usage = self.done_usage + usage
        self.done_cost = None if self.done_cost is None or cost is None else self.done_cost + cost

    def reset_session(self, totals: SessionTotals | None = None) -> None:
        """Another session (`/clear`, `/resume`, `--resume`): its totals are its own, those of
        the tasks it recorded (none for a new one)."""
        totals = totals or SessionTotals()
        self.done_usage = totals.usage
        self.done_cost = totals.cost_usd
        self.tasks = totals.tasks
        self.state = "idle"
        self.context = ""
        self.todos = []

    def checklist(self, *, idle: bool) -> list[str]:
        """The todo list's lines to show above the prompt (while a task runs; at the prompt,
        while items are left to do), unless hidden (Ctrl-T)."""
        if not self.show_todos or not self.todos:
            return []
        if idle and all(item.get("status") == "completed" for item in self.todos):
            return []
        marks = {"completed": "☒", "in_progress": "▶"}
        lines = []
        for item in self.todos:
            status = item.get("status", "")
            shown = item.get("activeForm" if status == "in_progress" else "content", "")
            lines.append(f"{marks.get(status, '☐')} {shown}")
        return lines

    def line(self, width: int = 80) -> str:
        """The prompt's status line: model, mode, tokens, cost, last task state."""
        parts = [
            self.model,
            self.mode,
            f"{format_tokens(self.usage.total_tokens)} tok",
            format_cost(self.cost),
            *([self.context] if self.context else []),
            self.state,
        ]
        return _fit(" · ".join(parts), width)

    def live_line(self, width: int = 80) -> str:
        """The running task's line: state and time, what it does now, tokens and cost."""
        elapsed = 0.0 if self.task_started is None else time.monotonic() - self.task_started
        head = f"{self.state} {elapsed:.0f}s"
        tail = f"{format_tokens(self.usage.total_tokens)} tok · {format_cost(self.cost)}"
        if self.context:
            tail += f" · {self.context}"
        room = width - len(head) - len(tail) - 6
        activity = _fit(self.activity, room) if self.activity and room >= 8 else ""
        middle = f" · {activity} · " if activity else " · "
        return _fit(head + middle + tail, width)


def _fit(text: str, width: int) -> str:
    """One line of at most `width` characters, with anything untrusted in it (a command, a
    model name) made visible."""
    return shorten(visible(text, keep=""), width)
