"""What `/context` shows: what the model is sent now, part by part, each with its tokens.

The parts are the system prompt (agentcli's own text, then each instruction file in it), the
tool definitions, the compaction's summary and each item pinned with it, and the messages sent
after it; and, said plainly, which earlier messages are compacted and how many old tool results
are sent as stubs. Token counts are estimates (`agentcli.context.tokens`), at the rate the last
response's reported prompt size gives, so they add up to about what the API counted.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentcli.context.tokens import message_chars, tokens, tools_chars
from agentcli.context.view import ContextView
from agentcli.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from agentcli.truncation import one_line

LISTED_MESSAGES = 30
"""The most recent messages listed one by one; earlier ones sent are counted together."""
_INSTRUCTIONS = re.compile(r'<instructions source="(.*?)">\n(.*?)\n</instructions>', re.DOTALL)


@dataclass(frozen=True, slots=True)
class ContextPart:
    label: str
    tokens: int
    detail: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextReport:
    window: int
    reported: int | None
    """The context the last response reported (None: none since the last change)."""
    parts: tuple[ContextPart, ...]
    """System prompt, instruction files, tools, summary, pinned items: what precedes the
    messages."""
    messages: tuple[ContextPart, ...]
    """The messages sent, one by one (the oldest of them counted together)."""
    compacted: str | None
    """Which earlier messages a summary stands for (None: nothing is compacted)."""
    elided: int
    """Messages sent with old tool results as stubs."""
    compactions_this_task: int = 0

    @property
    def total(self) -> int:
        return sum(p.tokens for p in self.parts) + sum(m.tokens for m in self.messages)

    def lines(self) -> list[str]:
        """The report as lines of text (untrusted parts: the caller makes them visible)."""
        share = f" ({self.total / self.window:.0%} of the {self.window:,}-token window)"
        out = [f"what the model is sent now: ≈{self.total:,} tokens{share}"]
        if self.reported is not None:
            out.append(f"  the last response reported a context of {self.reported:,} tokens")
        for part in self.parts:
            out.append(_row(part))
        out.append(f"  messages ({len(self.messages)} shown):")
        out.extend("  " + _row(m) for m in self.messages)
        if self.compacted:
            out.append(f"  compacted: {self.compacted}")
        if self.elided:
            out.append(
                f"  {self.elided} older messages are sent with their long tool results as stubs"
            )
        return out


def _row(part: ContextPart) -> str:
    detail = f"  {part.detail}" if part.detail else ""
    return f"  {part.label:<34} ≈{part.tokens:>8,}{detail}"


def context_report(
    *,
    view: ContextView,
    history: Sequence[Message],
    system: str,
    instruction_files: Sequence[Path],
    tools: Sequence[Any],
    compactions_this_task: int = 0,
) -> ContextReport:
    """The report of what `view` sends of `history` now, with `system` and `tools`."""
    per_char = view.tokens_per_char(len(system) + tools_chars(tools))
    sent = view.messages(history)
    parts = [*_system_parts(system, instruction_files, per_char)]
    parts.append(
        ContextPart("tools", tokens(tools_chars(tools), per_char), f"{len(tools)} definitions")
    )
    record = view.compaction
    body = sent
    compacted = None
    if record is not None:
        summary, body = sent[0], sent[1:]
        # The summary's part is the whole message but the pinned items' own text.
        framing = message_chars(summary) - sum(len(item.text) for item in record.pinned)
        parts.append(
            ContextPart(
                "summary",
                tokens(framing, per_char),
                f"{record.trigger.value}, by {record.model}, {_when(record.created_at)}",
            )
        )
        parts.extend(
            ContextPart(f"pinned: {item.kind}", tokens(len(item.text), per_char), item.title)
            for item in record.pinned
        )
        compacted = (
            f"messages 1–{record.point} of the history ({_count(record.point, 'message')}) are "
            f"sent as the summary and pinned items above (≈"
            f"{tokens(message_chars(summary), per_char):,} tokens); the session's journal keeps "
            "them in full (`agentcli sessions show`)"
        )
    start = record.point if record is not None else 0
    return ContextReport(
        window=view.window,
        reported=view.observed_tokens(history),
        parts=tuple(parts),
        messages=tuple(_message_parts(body, start, per_char)),
        compacted=compacted,
        elided=sum(1 for i, m in enumerate(body) if m is not history[start + i]),
        compactions_this_task=compactions_this_task,
    )


def _system_parts(system: str, files: Sequence[Path], per_char: float) -> list[ContextPart]:
    found = list(_INSTRUCTIONS.finditer(system))
    own = system
    parts = []
    for match in found:
        own = own.replace(match.group(0), "")
        parts.append(
            ContextPart(
                f"instructions: {Path(match.group(1)).name}",
                tokens(len(match.group(0)), per_char),
                match.group(1),
            )
        )
    if files and not found:
        parts.append(ContextPart("instructions", 0, "none read"))
    return [ContextPart("system prompt", tokens(len(own), per_char), "agentcli's own"), *parts]


def _message_parts(body: Sequence[Message], start: int, per_char: float) -> list[ContextPart]:
    listed = body[-LISTED_MESSAGES:]
    earlier = body[: len(body) - len(listed)]
    out = []
    if earlier:
        chars = sum(message_chars(m) for m in earlier)
        out.append(ContextPart(f"{len(earlier)} earlier messages", tokens(chars, per_char)))
    first = start + len(earlier)
    for offset, message in enumerate(listed):
        label = f"#{first + offset + 1} {message.role}"
        out.append(ContextPart(label, tokens(message_chars(message), per_char), _what(message)))
    return out


def _what(message: Message) -> str:
    calls = [b.name for b in message.content if isinstance(b, ToolUseBlock)]
    results = [b for b in message.content if isinstance(b, ToolResultBlock)]
    text = " ".join(b.text for b in message.content if isinstance(b, TextBlock))
    bits = []
    if text.strip():
        bits.append(one_line(text, 50))
    if calls:
        bits.append("calls " + ", ".join(calls))
    if results:
        bits.append(_count(len(results), "tool result"))
    return " · ".join(bits)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _when(stamp: float) -> str:
    return time.strftime("%H:%M", time.localtime(stamp)) if stamp else "-"
