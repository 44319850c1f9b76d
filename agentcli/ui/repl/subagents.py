"""The REPL's view of a task's running subagents: one live line each (type, description, turn,
calls, tokens, cost, what it is doing), its calls collapsed into that line, and one line when
it ends. What a subagent asks, denials and warnings are printed labelled with its type; its
calls in full are in the journal (`/show` on the `agent` call, or Ctrl-O, lists them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.text import Text

from agentcli.events import (
    Notice,
    PermissionAsked,
    PermissionDecided,
    SubagentEvent,
    SubagentFinished,
    SubagentStarted,
    ToolCallFinished,
    ToolCallStarted,
    TurnStarted,
    UsageUpdated,
)
from agentcli.truncation import one_line
from agentcli.ui.repl.calls import call_target
from agentcli.ui.repl.status import format_cost, format_tokens
from agentcli.ui.term.safe import visible
from agentcli.usage import Usage


@dataclass
class ChildLine:
    """One running subagent, as its live line shows it."""

    agent: str
    description: str
    turn: int = 0
    calls: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float | None = 0.0
    activity: str = ""

    def render(self, width: int) -> Text:
        facts = (
            f" · turn {self.turn} · {self.calls} call{'' if self.calls == 1 else 's'} · "
            f"{format_tokens(self.usage.total_tokens)} tokens · {format_cost(self.cost)}"
        )
        doing = f" · {self.activity}" if self.activity else ""
        head = f"⤷ {self.agent}: {self.description}"
        return Text("  " + one_line(visible(head + facts + doing), max(20, width - 2)), "cyan")


class Subagents:
    """The running subagents of the task on screen, fed by its events."""

    def __init__(self) -> None:
        self.running: dict[str, ChildLine] = {}
        self._denials: dict[str, str] = {}

    def clear(self) -> None:
        self.running.clear()
        self._denials.clear()

    def lines(self, width: int) -> list[Text]:
        return [line.render(width) for line in self.running.values()]

    def update(
        self, event: SubagentStarted | SubagentEvent | SubagentFinished
    ) -> tuple[Text | None, str | None]:
        """Take `event`; return a line to print (if any) and the task's new state, `waiting`
        while a subagent asks a question, `running` once answered (None: unchanged)."""
        if isinstance(event, SubagentStarted):
            self.running[event.parent_tool_use_id] = ChildLine(
                agent=event.agent, description=one_line(event.description, 60)
            )
            return None, None
        if isinstance(event, SubagentFinished):
            self.running.pop(event.parent_tool_use_id, None)
            return _ended(event), None
        return self._inner(event)

    def _inner(self, event: SubagentEvent) -> tuple[Text | None, str | None]:
        line = self.running.get(event.parent_tool_use_id)
        inner, label = event.innermost, f"[{event.agent}]"
        if line is not None:
            if isinstance(inner, TurnStarted):
                line.turn, line.activity = inner.turn, "waiting for the model"
            elif isinstance(inner, UsageUpdated):
                line.usage, line.cost = inner.usage, inner.cost_usd
            elif isinstance(inner, ToolCallStarted):
                line.calls += 1
                line.activity = f"{inner.name} {call_target(inner.input, 30)}".strip()
            elif isinstance(inner, ToolCallFinished):
                line.activity = ""
        if isinstance(inner, PermissionAsked):
            return None, "waiting"
        if isinstance(inner, PermissionDecided):
            if inner.decision == "deny":
                self._denials[inner.call_id] = inner.reason
            return None, "running"
        if isinstance(inner, ToolCallFinished) and inner.status == "denied":
            why = self._denials.pop(inner.call_id, "") or inner.summary
            text = f"  {label} ⊘ {inner.name} · denied: {one_line(why, 160)}"
            return Text(visible(text), style="yellow"), None
        if isinstance(inner, Notice) and inner.level != "info":
            return Text(visible(f"  {label} {inner.message}"), style="yellow"), None
        return None, None


def _ended(event: SubagentFinished) -> Text:
    done = event.reason == "completed"
    how = "completed" if done else f"stopped: {event.reason}"
    text = Text("  ")
    text.append("⤶", style="green" if done else "yellow")
    text.append(visible(f" {event.agent}: {one_line(event.description, 60)} · {how}"))
    text.append(
        f" · {event.turns} turn{'' if event.turns == 1 else 's'} · {event.tool_calls} call"
        f"{'' if event.tool_calls == 1 else 's'} · {format_tokens(event.usage.total_tokens)} "
        f"tokens · {format_cost(event.cost_usd)}",
        style="dim",
    )
    if event.changed_files:
        text.append(visible(f" · changed {', '.join(event.changed_files[:5])}"), style="dim")
    if not done and event.error:
        text.append(visible(f" · {one_line(event.error, 120)}"), style="yellow")
    return text
