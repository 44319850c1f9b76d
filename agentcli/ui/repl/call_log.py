"""`/calls` and `/show`: every tool call of the session, and any one of them in full.

The transcript shows one line per call; its whole output (what the model received) is read back
from the conversation and opened in the in-terminal pager (`agentcli.ui.term.pager`), so nothing
needs leaving the REPL. Ctrl-O at the prompt opens the latest call the same way and keeps
whatever was typed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.text import Text

from agentcli.messages import ToolResultBlock, ToolUseBlock
from agentcli.ui.repl.calls import call_target
from agentcli.ui.term.pager import page
from agentcli.ui.term.safe import visible

if TYPE_CHECKING:
    from agentcli.ui.repl.host import ReplHost as Repl

LISTED = 20


class ShowLatestCall(Exception):
    """Ctrl-O at the prompt: open the latest tool call, then come back with `draft` typed."""

    def __init__(self, draft: str) -> None:
        super().__init__(draft)
        self.draft = draft


@dataclass(frozen=True, slots=True)
class LoggedCall:
    id: str
    name: str
    input: dict[str, Any]
    output: str | None
    is_error: bool


def logged_calls(messages: list[Any]) -> list[LoggedCall]:
    """The session's tool calls in order, each with its result (None: no result yet)."""
    results: dict[str, ToolResultBlock] = {}
    uses: list[ToolUseBlock] = []
    for message in messages:
        for block in message.content:
            if isinstance(block, ToolUseBlock):
                uses.append(block)
            elif isinstance(block, ToolResultBlock):
                results[block.tool_use_id] = block
    calls = []
    for use in uses:
        result = results.get(use.id)
        calls.append(
            LoggedCall(
                id=use.id,
                name=use.name,
                input=dict(use.input),
                output=None if result is None else result.content,
                is_error=bool(result and result.is_error),
            )
        )
    return calls


async def _calls_of(repl: Repl) -> list[LoggedCall]:
    live = await repl.session_or_none()
    return [] if live is None else logged_calls(list(live.messages))


async def list_calls(repl: Repl, arg: str) -> None:
    """`/calls`: the latest tool calls, numbered for `/show N`."""
    calls = await _calls_of(repl)
    if not calls:
        repl.say("no tool calls yet in this session")
        return
    text = Text()
    first = max(0, len(calls) - LISTED)
    for number, call in enumerate(calls[first:], start=first + 1):
        mark, style = ("✗", "red") if call.is_error else ("✓", "green")
        if call.output is None:
            mark, style = ("…", "yellow")
        lines = 0 if call.output is None else call.output.count("\n") + 1
        text.append(f"  {number:>3} ")
        text.append(mark, style=style)
        text.append(f" {visible(call.name, keep='')}", style="bold")
        target = call_target(call.input)
        if target:
            text.append(f" {visible(target, keep='')}")
        text.append(f" · {lines} line{'' if lines == 1 else 's'}\n", style="dim")
    text.append("  /show N opens one in full · Ctrl-O opens the latest\n", style="dim")
    repl.console.print(text, end="")


def call_text(number: int, call: LoggedCall) -> Text:
    """One call in full: its input, then its whole output, every character made visible."""
    text = Text()
    text.append(f"#{number} {visible(call.name, keep='')}\n", style="bold")
    for line in json.dumps(call.input, indent=2, ensure_ascii=False).split("\n"):
        text.append(visible(line, keep="") + "\n", style="cyan")
    text.append("\n")
    if call.output is None:
        text.append("(no result: the call did not finish)\n", style="yellow")
    else:
        style = "red" if call.is_error else ""
        for line in call.output.split("\n"):
            text.append(visible(line, keep="\t", crlf=False) + "\n", style=style)
    return text


async def show_call(repl: Repl, arg: str) -> None:
    """`/show [N]`: call N (the latest without N) in the pager."""
    calls = await _calls_of(repl)
    if not calls:
        repl.say("no tool calls yet in this session")
        return
    number = len(calls)
    if arg:
        if not arg.isdigit() or not 1 <= int(arg) <= len(calls):
            repl.error(f"/show takes a call number from 1 to {len(calls)} (see /calls)")
            return
        number = int(arg)
    call = calls[number - 1]
    title = visible(f"#{number} {call.name} {call_target(call.input)}", keep="")
    text = call_text(number, call)
    live = await repl.session_or_none()
    if call.name == "agent" and live is not None:
        text.append_text(subagent_text(logged_calls(live.subagent_messages(call.id))))
    await page(text, title=title, **repl.io)


def subagent_text(calls: list[LoggedCall]) -> Text:
    """A subagent's calls, each in full, after its `agent` call (collapsed while it ran)."""
    text = Text()
    text.append(f"\nthe subagent's {len(calls)} tool call(s):\n", style="bold")
    for number, call in enumerate(calls, start=1):
        text.append("\n")
        text.append_text(call_text(number, call))
    return text
