"""What part of the history the model sees: old, large tool results are sent as short stubs,
and after a compaction a summary stands for everything before its point.

The history itself is never changed: the journal, session exports, `/diff` and resume all see
every message and result in full. Only the copy sent to the model (`ContextView.messages`)
changes:

- Elision: each tool_result before an elision watermark (a message index), and longer than
  `min_chars`, is replaced by a stub naming the call that produced it, so the model knows what
  it no longer sees and can ask again. The watermark only moves forward, and only once a
  response reports a context (its input, cache and output tokens) above `elide_at` of the
  window; it then jumps to just before the `keep_recent`-th most recent tool-result message.
  Moving in batches instead of every turn keeps the sent prefix byte-stable between moves, so
  the prompt cache keeps hitting.
- Compaction (`agentcli.context.compaction` decides when and writes the summary): the
  messages before a compaction's point are sent as one user message, the summary and the items
  pinned with it (`CompactionRecord.message`). The point is always an assistant message, so a
  tool call is never separated from its result.

Never changed: assistant messages' blocks (thinking signatures must go back byte for byte), text
blocks, and the tool_use/tool_result pairing (a stub keeps its `tool_use_id` and `is_error`).
Which thinking blocks are sent at all is `agentcli.context.thinking`'s: `state` is part of the
key it binds them to, so an elision move or a compaction stops earlier ones being sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from agentcli.catalogue import UNKNOWN_CONTEXT_WINDOW
from agentcli.compaction_record import CompactionRecord
from agentcli.context.tokens import TOKENS_PER_CHAR, messages_chars
from agentcli.messages import ContentBlock, Message, ToolResultBlock, ToolUseBlock
from agentcli.settings import DEFAULTS
from agentcli.truncation import shorten
from agentcli.usage import Usage, prompt_tokens

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
    """The elision watermark and the latest compaction of one conversation, and the messages
    they let the model see."""

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
        self._observed: tuple[_Mark, Usage] | None = None
        """The last response and the usage it reported."""
        self._compaction: tuple[_Mark, CompactionRecord, Message] | None = None
        """The latest compaction: history[point], the record, and the message sent in place of
        history[:point]."""
        self._last_sent: list[Message] = []
        """The messages the last request was sent (for estimates of what is sent)."""

    @property
    def window(self) -> int:
        """The context window in force: the settings', else the model's."""
        return self.settings.window_tokens or self.model_window

    @property
    def threshold_tokens(self) -> float:
        return self.window * self.settings.elide_at

    @property
    def state(self) -> str:
        """What decides the elided and compacted part of what is sent: the same history with
        the same state is always sent the same way (stubs depend only on the messages they
        replace, a summary message only on its record)."""
        elided = f"{self.watermark}:{self.settings.min_chars}"
        return elided if self._compaction is None else f"{elided}:{self._compaction[1].id}"

    @property
    def compaction(self) -> CompactionRecord | None:
        """The compaction in force (None: the whole history is sent, elided)."""
        return self._compaction[1] if self._compaction is not None else None

    def messages(self, history: Sequence[Message]) -> list[Message]:
        """The history as sent to the model: a compaction's summary in place of what came
        before its point, results before the watermark elided."""
        self._check(history)
        start, head = 0, []
        if self._compaction is not None:
            start, head = self._compaction[0].index, [self._compaction[2]]
        if self.watermark > start:
            body = [*self._prefix[start:], *history[self.watermark :]]
        else:
            body = list(history[start:])
        self._last_sent = [*head, *body]
        return list(self._last_sent)

    def observe(self, history: Sequence[Message], usage: Usage) -> None:
        """Note the usage a response (the last message of `history`) reported."""
        if history:
            self._observed = (_Mark(len(history) - 1, history[-1]), usage)

    def observed_tokens(self, history: Sequence[Message]) -> int | None:
        """The context the last response reported (its input, cache and output tokens), if it
        is still the last thing that happened to `history` (no move or compaction since)."""
        self._check(history)
        if self._observed is None or not self._observed[0].holds(history):
            return None
        return self._observed[1].total_tokens

    def tokens_per_char(self, fixed_chars: int) -> float:
        """Tokens per character of what the last request sent (`fixed_chars`: its system prompt
        and tools), from the prompt size its response reported; the rule of thumb when there
        is no such response."""
        if self._observed is None or not self._last_sent:
            return TOKENS_PER_CHAR
        chars = fixed_chars + messages_chars(self._last_sent)
        reported = prompt_tokens(self._observed[1])
        if chars <= 0 or reported <= 0:
            return TOKENS_PER_CHAR
        # A response's usage covers what was really sent; thinking blocks left out and the
        # JSON framing make it differ a little from the characters counted here.
        return min(max(reported / chars, TOKENS_PER_CHAR / 4), TOKENS_PER_CHAR * 4)

    def advance(self, history: Sequence[Message]) -> Elision | None:
        """Move the watermark if the last observed context passed the threshold."""
        self._check(history)
        if self._observed is None:
            return None
        mark, usage = self._observed
        tokens = usage.total_tokens
        if not mark.holds(history) or tokens <= self.threshold_tokens:
            return None
        return self._move(history, tokens)

    def make_room(self, history: Sequence[Message]) -> Elision | None:
        """Move the watermark as far as allowed, whatever the size (the request was refused as
        too long). None when that elides nothing more."""
        self._check(history)
        return self._move(history, None)

    def compact(self, history: Sequence[Message], record: CompactionRecord) -> None:
        """Send `record`'s summary (and pinned items) in place of `history[:record.point]` from
        now on (also to rebuild the view of a resumed session). ValueError when the point is
        not an assistant message of `history`."""
        self._check(history)
        point = record.point
        if not 0 < point < len(history) or history[point].role != "assistant":
            raise ValueError(f"compaction point {point} is not an assistant message")
        self._compaction = (_Mark(point, history[point]), record, record.message())
        self._observed = None  # that size was measured before the compaction

    def _move(self, history: Sequence[Message], tokens: int | None) -> Elision | None:
        target = self._target(history)
        if target <= self.watermark:
            return None
        segment, results, saved = _elide(history, self.watermark, target, self.settings.min_chars)
        self._prefix.extend(segment)
        self.watermark = target
        self._anchor = _Mark(target - 1, history[target - 1])
        self._observed = None  # that size was measured before this move
        start = self._compaction[0].index if self._compaction is not None else 0
        if results == 0 or target <= start:
            return None
        return Elision(results=results, chars_saved=saved, context_tokens=tokens)

    def _target(self, history: Sequence[Message]) -> int:
        """Just before the keep_recent-th most recent message carrying tool results."""
        carrying = [i for i, m in enumerate(history) if m.role == "user" and m.tool_results]
        keep = self.settings.keep_recent
        return carrying[-keep] if len(carrying) >= keep else 0

    def _check(self, history: Sequence[Message]) -> None:
        """Start over when the history is not the one the watermark or the compaction was set
        on (a resume or `/clear` swapped it)."""
        if self._anchor is not None and not self._anchor.holds(history):
            self.watermark = 0
            self._anchor = None
            self._prefix = []
            self._observed = None
        if self._compaction is not None and not self._compaction[0].holds(history):
            self._compaction = None
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
