"""What part of the history the model sees: old, large tool results are sent as short stubs.

The history itself is never changed: the journal, session exports, `/diff` and resume all see
every result in full. Only the copy sent to the model (`ContextView.messages`) replaces each
tool_result before an elision watermark (a message index), and longer than `min_chars`, with a
stub naming the call that produced it, so the model knows what it no longer sees and can ask
again.

The watermark only moves forward, and only once a response reports a context (its input, cache
and output tokens) above `elide_at` of the window; it then jumps to just before the
`keep_recent`-th most recent tool-result message. Moving in batches instead of every turn
keeps the sent prefix byte-stable between moves, so the prompt cache keeps hitting.

Never changed: assistant messages' blocks (thinking signatures must go back byte for byte), text
blocks, and the tool_use/tool_result pairing (a stub keeps its `tool_use_id` and `is_error`).

Thinking blocks may be left out, never altered (`bound_thinking`): a model reads back only the
thinking its own responses carried, and a model that binds thinking to the transcript (Opus 5.5,
Fable 5.1, …) rejects a block once anything before it changed (the system prompt, the tools, an
elided result). Each assistant message records its `Producer` (the model and `context_key`);
a block goes back only to the same model, and for a binding model only under the same key. An
elision move, another day's system prompt or a resumed session changes the key, so all earlier
blocks stop being sent together, and every later request leaves them out the same way.
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agentcli.catalogue import UNKNOWN_CONTEXT_WINDOW
from agentcli.messages import (
    ContentBlock,
    Message,
    Producer,
    ToolResultBlock,
    ToolUseBlock,
    canonical_json,
    is_thinking,
)
from agentcli.settings import DEFAULTS
from agentcli.truncation import shorten
from agentcli.usage import Usage

# The stub names the call; long inputs (a whole file's content) are cut to stay a stub.
_VALUE_CHARS = 60
_SUMMARY_CHARS = 160


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextSettings:
    """When old tool results stop being sent to the model in full."""

    window_tokens: int | None = DEFAULTS.context.window_tokens
    """The context window, in tokens; None: the model's (`ContextView.model_window`)."""
    elide_at: float = DEFAULTS.context.elide_at
    """Fraction of the window a response's context may reach before old results are elided."""
    keep_recent: int = DEFAULTS.context.keep_recent
    """The most recent user messages carrying tool results are always sent in full."""
    min_chars: int = 1_000
    """Tool results shorter than this are always sent in full (a stub would save little)."""

    def __post_init__(self) -> None:
        # keep_recent 0 would elide the newest results before the model has read them.
        window_ok = self.window_tokens is None or self.window_tokens >= 1
        valid = window_ok and 0 < self.elide_at <= 1 and self.keep_recent >= 1
        if not valid or self.min_chars < 0:
            raise ValueError(f"invalid context settings: {self}")


@dataclass(frozen=True, slots=True)
class Elision:
    """One move of the watermark: what it took out of the sent messages."""

    results: int
    chars_saved: int
    context_tokens: int | None
    """The context size that triggered the move (None when forced by a too-long request)."""

    def describe(self) -> str:
        why = (
            f"the context reached {self.context_tokens:,} tokens"
            if self.context_tokens is not None
            else "the request was too long for the model"
        )
        return (
            f"{why}: {self.results} older tool result{'s' if self.results != 1 else ''} "
            f"({self.chars_saved:,} chars) are no longer sent to the model (the session keeps "
            "them in full)"
        )


@dataclass(frozen=True, slots=True)
class _Mark:
    """A position in a history, checked by identity: a swapped history (the REPL's /resume)
    does not hold the same message object there."""

    index: int
    message: Message

    def holds(self, history: Sequence[Message]) -> bool:
        return self.index < len(history) and history[self.index] is self.message


class ContextView:
    """The elision watermark of one conversation, and the messages it lets the model see."""

    def __init__(self, settings: ContextSettings | None = None) -> None:
        self.settings = settings or ContextSettings()
        self.model_window = UNKNOWN_CONTEXT_WINDOW
        """The context window of the model being called (the loop sets it from the catalogue
        before each request); `settings.window_tokens` overrides it."""
        self.watermark = 0
        self._anchor: _Mark | None = None
        """history[watermark - 1] when the watermark moved."""
        self._prefix: list[Message] = []
        """history[:watermark] as sent (stubs in place), computed once per move."""
        self._observed: tuple[_Mark, int] | None = None
        """The last response and the context size it reported."""

    @property
    def threshold_tokens(self) -> float:
        window = self.settings.window_tokens or self.model_window
        return window * self.settings.elide_at

    @property
    def state(self) -> str:
        """What decides the elided part of what is sent: the same history with the same state
        is always sent the same way (stubs depend only on the messages they replace)."""
        return f"{self.watermark}:{self.settings.min_chars}"

    def messages(self, history: Sequence[Message]) -> list[Message]:
        """The history as sent to the model: results before the watermark elided."""
        self._check(history)
        return [*self._prefix, *history[self.watermark :]]

    def observe(self, history: Sequence[Message], usage: Usage) -> None:
        """Note the context size a response (the last message of `history`) reported."""
        if history:
            self._observed = (_Mark(len(history) - 1, history[-1]), usage.total_tokens)

    def advance(self, history: Sequence[Message]) -> Elision | None:
        """Move the watermark if the last observed context passed the threshold."""
        self._check(history)
        if self._observed is None:
            return None
        mark, tokens = self._observed
        if not mark.holds(history) or tokens <= self.threshold_tokens:
            return None
        return self._move(history, tokens)

    def make_room(self, history: Sequence[Message]) -> Elision | None:
        """Move the watermark as far as allowed, whatever the size (the request was refused as
        too long). None when that elides nothing more."""
        self._check(history)
        return self._move(history, None)

    def _move(self, history: Sequence[Message], tokens: int | None) -> Elision | None:
        target = self._target(history)
        if target <= self.watermark:
            return None
        segment, results, saved = _elide(history, self.watermark, target, self.settings.min_chars)
        self._prefix.extend(segment)
        self.watermark = target
        self._anchor = _Mark(target - 1, history[target - 1])
        self._observed = None  # that size was measured before this move
        if results == 0:
            return None
        return Elision(results=results, chars_saved=saved, context_tokens=tokens)

    def _target(self, history: Sequence[Message]) -> int:
        """Just before the keep_recent-th most recent message carrying tool results."""
        carrying = [i for i, m in enumerate(history) if m.role == "user" and m.tool_results]
        keep = self.settings.keep_recent
        return carrying[-keep] if len(carrying) >= keep else 0

    def _check(self, history: Sequence[Message]) -> None:
        """Start over when the history is not the one the watermark was set on."""
        if self._anchor is not None and not self._anchor.holds(history):
            self.watermark = 0
            self._anchor = None
            self._prefix = []
            self._observed = None


def _elide(
    history: Sequence[Message], start: int, stop: int, min_chars: int
) -> tuple[list[Message], int, int]:
    """history[start:stop] with every long tool_result in a user message made a stub; also
    how many results that elided and how many chars it saved."""
    out: list[Message] = []
    results = saved = 0
    for index in range(start, stop):
        message = history[index]
        if message.role != "user" or not message.tool_results:
            out.append(message)
            continue
        previous = history[index - 1] if index > 0 else None
        calls = {u.id: u for u in previous.tool_uses} if previous is not None else {}
        content: list[ContentBlock] = []
        stubbed = 0
        for block in message.content:
            stub = _stub_for(block, calls, min_chars)
            if stub is None or not isinstance(block, ToolResultBlock):
                content.append(block)
                continue
            content.append(stub)
            stubbed += 1
            saved += len(block.content) - len(stub.content)
        results += stubbed
        out.append(replace(message, content=tuple(content)) if stubbed else message)
    return out, results, saved


def _stub_for(
    block: ContentBlock, calls: dict[str, ToolUseBlock], min_chars: int
) -> ToolResultBlock | None:
    """The stub to send instead of `block`, or None to send it as it is."""
    if not isinstance(block, ToolResultBlock) or len(block.content) < min_chars:
        return None
    stub = stub_text(calls.get(block.tool_use_id), block)
    if len(stub) >= len(block.content):
        return None
    return ToolResultBlock(tool_use_id=block.tool_use_id, content=stub, is_error=block.is_error)


def stub_text(call: ToolUseBlock | None, result: ToolResultBlock) -> str:
    """What the model sees instead of an old result: which call, how big, how to get it back."""
    what = f"{call.name}({summarize_input(call)})" if call is not None else "a tool call"
    verb = "failed with" if result.is_error else "returned"
    return (
        f"[elided to save context: {what} {verb} {len(result.content):,} chars; "
        "call the tool again if you need it]"
    )


def summarize_input(call: ToolUseBlock) -> str:
    """`path='src/a.py', limit=50`: each value cut to a few dozen chars, the whole to a line."""
    parts = []
    for key, value in call.input.items():
        parts.append(f"{key}={shorten(repr(value), _VALUE_CHARS, marker='...')}")
    return shorten(", ".join(parts), _SUMMARY_CHARS, marker="...")


def context_key(system: str, tools: Iterable[Any], view_state: str) -> str:
    """A key of everything a thinking block depends on besides the messages before it: the
    system prompt, the tool definitions (objects with `to_wire()`) and the view's state."""
    digest = hashlib.sha256()
    for part in (system, canonical_json([tool.to_wire() for tool in tools]), view_state):
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    return digest.hexdigest()[:20]


def _has_thinking(message: Message) -> bool:
    return any(is_thinking(b) for b in message.content)


def bound_thinking(messages: Sequence[Message], caller: Producer, *, binds: bool) -> list[Message]:
    """`messages` with thinking blocks only where `caller` may read them: those produced by the
    same model, and, when the model binds thinking to the transcript (`binds`), under the same
    context key. An assistant message left with no content is not sent at all."""
    out: list[Message] = []
    for message in messages:
        if message.role != "assistant" or not message.memo(_has_thinking):
            out.append(message)
            continue
        producer = message.producer
        readable = (
            producer is not None
            and producer.model == caller.model
            and (not binds or producer.context == caller.context)
        )
        if readable:
            out.append(message)
            continue
        content = tuple(b for b in message.content if not is_thinking(b))
        if content:
            out.append(replace(message, content=content))
    return out


@dataclass
class ThinkingBound:
    """`bound_thinking`, remembered from one request to the next. A loop's history only grows
    at its end (and the context view's elided prefix changes rarely), so each request filters
    just the messages added since the last one, not the whole history again."""

    _key: tuple[Producer, bool] | None = None
    _seen: list[Message] = field(default_factory=list)
    _out: list[Message] = field(default_factory=list)

    def __call__(
        self, messages: Sequence[Message], caller: Producer, *, binds: bool
    ) -> list[Message]:
        seen = len(self._seen)
        grown = (
            self._key == (caller, binds)
            and len(messages) >= seen
            and all(map(operator.is_, self._seen, messages))
        )
        if grown:
            self._out.extend(bound_thinking(messages[seen:], caller, binds=binds))
        else:
            self._out = bound_thinking(messages, caller, binds=binds)
        self._key, self._seen = (caller, binds), list(messages)
        return list(self._out)
