"""Compaction: when the context fills up (or the user asks, `/compact`), one summarization
request replaces, in what the model is sent, everything before a compaction point by a handoff
summary and the pinned items; the journal keeps every message.

The point is an assistant message, so no tool call is separated from its result; the most
recent `keep_recent` turns (fewer, when they alone would fill half the window) stay as they
are. The summary request goes to the session's model, or to `[context] compact_model`; it
offers no tools and sends the conversation as a transcript (`handoff`). After it, the system
prompt is built again with the instruction files as they are on disk now (they are not in the
summary: they are re-read), and the summary message carries the pinned items (`pins`).

Automatic compaction happens before a model request, at most once per turn, when the last
response reported a context above `auto_compact_at` of the window. It never loops: a summary
that fails (an error, a refusal, an empty or overlong answer), or a history with nothing older
than the recent turns to compact, is one notice and auto-compaction rests for the rest of the
task; three compactions in a row that each leave the context above the threshold stop it too.
A context still over the window after a compaction is said once; the request then goes as it
is and the task ends `context_exhausted` if the API refuses it. At `warn_at` one
`context_filling` event says how full the context is.

Observers (`CompactionObserver`, e.g. the PreCompact/PostCompact hooks) hear each compaction
before it starts, and may block it, and after it is recorded.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from agentcli.catalogue import Catalogue, ModelSpec
from agentcli.compaction_record import CompactionRecord, Trigger
from agentcli.context.handoff import server_instructions
from agentcli.context.pins import Pins
from agentcli.context.summary import SummaryCall, summarize
from agentcli.context.tokens import messages_chars, tokens, tools_chars
from agentcli.context.view import ContextView
from agentcli.events import CompactionFinished, CompactionStarted, ContextFilling, EventSink, Notice
from agentcli.ids import new_id
from agentcli.messages import Message, OpaqueBlock
from agentcli.model import ModelClient, ServerCompaction
from agentcli.settings import DEFAULTS, CompactionMode, ContextSection
from agentcli.usage import Usage, cost_usd

RECENT_SHARE = 0.5
"""The most of the window the turns kept as they are may fill: keep fewer when they would."""
SERVER_MIN_TRIGGER = 50_000
"""The smallest trigger the API's own compaction accepts."""
SERVER_FAILED = (
    "the API's compaction returned no summary; agentcli compacts by itself for the rest of "
    "this task"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionSettings:
    """When the conversation is compacted (`[context]`)."""

    auto: bool = DEFAULTS.context.auto_compact
    auto_at: float = DEFAULTS.context.auto_compact_at
    """Fraction of the window at which older turns are compacted (0: never on its own)."""
    warn_at: float = DEFAULTS.context.warn_at
    """Fraction of the window at which the user is told how full the context is (0: never)."""
    keep_recent: int = DEFAULTS.context.keep_recent
    """Model turns sent as they are after the summary."""
    max_summary_tokens: int = 20_000
    """A longer summary is a failed one (it would not save enough)."""
    stall_limit: int = 3
    """Compactions in a row, in one task, that leave the context above the threshold before
    auto-compaction stops for that task."""
    server: bool = False
    """Let the API compact (`compact_20260112`) where the model supports it."""

    @property
    def auto_enabled(self) -> bool:
        return self.auto and self.auto_at > 0

    @classmethod
    def of(cls, section: ContextSection) -> CompactionSettings:
        """The settings `[context]` configures."""
        return cls(
            auto=section.auto_compact,
            auto_at=section.auto_compact_at,
            warn_at=section.warn_at,
            keep_recent=section.keep_recent,
            server=section.compaction is CompactionMode.SERVER,
        )


class CompactionObserver(Protocol):
    """Hears each compaction (the PreCompact and PostCompact hooks plug in here)."""

    async def before_compaction(self, trigger: Trigger, instructions: str | None) -> str | None:
        """A reason to block this compaction, or None to let it go on."""
        ...

    async def after_compaction(self, record: CompactionRecord) -> None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """What the compaction needs of the request it makes room for."""

    model: ModelClient
    """The session's model (with its retries): it writes the summary unless `compact_model`."""
    system: str
    tools: Sequence[Any]
    """The tool definitions sent (objects with `to_wire()`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionOutcome:
    """How a compaction went: its record, or why there is none; what its request cost; the
    system prompt built again (with the instruction files re-read) when it was recorded."""

    record: CompactionRecord | None = None
    error: str | None = None
    call: SummaryCall = field(default_factory=SummaryCall)
    system: str | None = None


class Compactor:
    """Compacts one conversation's context view (see the module docstring)."""

    def __init__(
        self,
        *,
        view: ContextView,
        settings: CompactionSettings,
        pins: Pins,
        record: Callable[[CompactionRecord], None],
        events: EventSink,
        catalogue: Catalogue,
        summarizer: ModelClient | None = None,
        reread_system: Callable[[], str] | None = None,
    ) -> None:
        """`record` journals a compaction (durably, before the view uses it); `summarizer`
        writes the summaries (None: the turn's model); `reread_system` builds the system
        prompt again with the instruction files as they are on disk now."""
        self.view = view
        self.settings = settings
        self.pins = pins
        self._record = record
        self._events = events
        self._catalogue = catalogue
        self._summarizer = summarizer
        self._reread_system = reread_system
        self._observers: list[CompactionObserver] = []
        self._streak = 0
        self._resting = False
        self._warned = False
        self._server_failed = False
        self._last_tokens = 0
        self._task_id: str | None = None
        self.count = 0
        """Compactions recorded in the current task."""

    def observe(self, observer: CompactionObserver) -> None:
        self._observers.append(observer)

    def begin_task(self, task_id: str | None) -> None:
        """A new task: auto-compaction starts afresh and the count starts at 0; its
        compactions are recorded with `task_id`."""
        self._task_id = task_id
        self._streak = 0
        self._resting = False
        self._server_failed = False
        self.count = 0

    # -- the API's own compaction ---------------------------------------------------------
    def server_side(self, spec: ModelSpec) -> ServerCompaction | None:
        """What to ask the API for when it compacts itself (`[context] compaction = "server"`
        and a model that supports it), else None: agentcli compacts."""
        settings = self.settings
        if not (settings.server and settings.auto_enabled and spec.server_compaction):
            return None
        if self._server_failed or self._resting:
            return None
        trigger = max(int(self.view.window * settings.auto_at), SERVER_MIN_TRIGGER)
        return ServerCompaction(
            trigger_tokens=trigger, instructions=server_instructions(self.pins.collect())
        )

    def server_compacted(self, history: Sequence[Message], usage: Usage) -> None:
        """After a response (the last of `history`): the compaction blocks the API put in it.
        One without a summary is a failed compaction: agentcli compacts itself from then on
        in this task (the API treats such a block as nothing when it is sent back)."""
        for block in history[-1].content:
            if not isinstance(block, OpaqueBlock) or block.type != "compaction":
                continue
            summary = block.raw.get("content")
            before = self._last_tokens
            self._events(CompactionStarted(trigger=Trigger.AUTO.value, tokens_before=before))
            if not isinstance(summary, str) or not summary.strip():
                self._server_failed = True
                self._failed(Trigger.AUTO, before, SERVER_FAILED, call=SummaryCall())
                continue
            self.count += 1
            self._warned = False
            self._events(
                CompactionFinished(
                    trigger=Trigger.AUTO.value,
                    tokens_before=before,
                    tokens_after=usage.total_tokens,
                    summary_length=len(summary),
                    messages_compacted=len(history) - 1,
                )
            )

    def warn_if_filling(self, history: Sequence[Message]) -> None:
        """Say once (until a compaction makes room) that the context passed `warn_at`."""
        tokens_now = self.view.observed_tokens(history)
        if tokens_now is not None:
            self._last_tokens = tokens_now
        warn_at = self.settings.warn_at
        if tokens_now is None or warn_at <= 0 or self._warned:
            return
        window = self.view.window
        if tokens_now < window * warn_at:
            return
        self._warned = True
        auto = self.settings.auto_enabled and not self._resting
        compact_at = int(window * self.settings.auto_at) if auto else None
        self._events(ContextFilling(tokens=tokens_now, window=window, compact_at=compact_at))

    async def auto(
        self, history: Sequence[Message], turn: Callable[[], Turn]
    ) -> CompactionOutcome | None:
        """Compact before the next request if the last response passed `auto_compact_at`
        (`turn` says what that request is); None when nothing was attempted."""
        if not self.settings.auto_enabled or self._resting:
            return None
        if history and history[-1].role == "assistant":
            # A paused server-tool turn is being continued (`pause_turn`): its usage sums the
            # server's own iterations, and the turn is not done. Wait for it to end.
            return None
        tokens_now = self.view.observed_tokens(history)
        if tokens_now is None:
            return None
        if tokens_now <= self.view.window * self.settings.auto_at:
            self._streak = 0
            return None
        if self._streak >= self.settings.stall_limit:
            self._rest(
                f"auto-compaction stopped for this task: {self._streak} compactions in a row "
                "left the context above its threshold"
            )
            return None
        self._streak += 1
        outcome = await self.compact(history, turn(), trigger=Trigger.AUTO)
        if outcome.record is None:
            self._rest(f"auto-compaction rests for the rest of this task: {outcome.error}")
        return outcome

    def _rest(self, why: str) -> None:
        self._resting = True
        self._events(Notice(level="warning", message=why))

    async def compact(
        self,
        history: Sequence[Message],
        turn: Turn,
        *,
        trigger: Trigger,
        instructions: str | None = None,
    ) -> CompactionOutcome:
        """Compact now. Never raises for a failed summary: the outcome says why, in a notice
        too (the caller's task goes on with what is sent unchanged)."""
        fixed = len(turn.system) + tools_chars(turn.tools)
        per_char = self.view.tokens_per_char(fixed)
        sent = self.view.messages(history)
        before = self.view.observed_tokens(history) or tokens(
            fixed + messages_chars(sent), per_char
        )
        point = self._point(history, per_char)
        if point is None:
            return self._failed(
                trigger, before, "nothing older than the most recent turns to compact", call=None
            )
        for observer in self._observers:
            veto = await observer.before_compaction(trigger, instructions)
            if veto:
                return self._failed(trigger, before, f"blocked: {veto}", call=None)
        self._events(CompactionStarted(trigger=trigger.value, tokens_before=before))
        pinned = self.pins.collect()
        model = self._summarizer or turn.model
        spec = self._catalogue.lookup(model.model)
        summary = await summarize(
            sent[: self._sent_index(history, point)],
            pinned,
            instructions,
            model=model,
            spec=spec,
            max_tokens=self.settings.max_summary_tokens,
            events=self._events,
            tokens_per_char=per_char,
        )
        if summary.text is None:
            return self._failed(trigger, before, summary.error or "no summary", call=summary.call)
        system = self._reread_system() if self._reread_system is not None else turn.system
        record = CompactionRecord(
            id=new_id(),
            point=point,
            summary=summary.text,
            pinned=pinned,
            model=spec.id,
            trigger=trigger,
            tokens_before=before,
            tokens_after=0,
            usage=summary.call.usage,
            cost_usd=cost_usd(spec.price, summary.call.usage) if summary.call.usage_known else None,
            instructions=instructions,
            task_id=self._task_id,
            created_at=time.time(),
        )
        # Estimated on a scratch view: the real one changes only once the record is journaled.
        scratch = ContextView(self.view.settings)
        scratch.compact(history, record)
        after_chars = (
            len(system) + tools_chars(turn.tools) + messages_chars(scratch.messages(history))
        )
        record = replace(record, tokens_after=tokens(after_chars, per_char))
        self._apply(history, record)
        for observer in self._observers:
            await observer.after_compaction(record)
        return CompactionOutcome(record=record, call=summary.call, system=system)

    def _apply(self, history: Sequence[Message], record: CompactionRecord) -> None:
        """Journal `record`, then send what it says from now on, and say so."""
        self._record(record)
        self.view.compact(history, record)
        self.count += 1
        self._warned = False
        after = record.tokens_after
        self._events(
            CompactionFinished(
                trigger=record.trigger.value,
                tokens_before=record.tokens_before,
                tokens_after=after,
                summary_length=len(record.summary),
                messages_compacted=record.point,
            )
        )
        if after > self.view.window:
            self._events(
                Notice(
                    level="warning",
                    message=f"the context is still ≈{after:,} tokens after compaction, over the "
                    f"model's window of {self.view.window:,}: the next request may be refused",
                )
            )

    def _failed(
        self, trigger: Trigger, before: int, why: str, *, call: SummaryCall | None
    ) -> CompactionOutcome:
        if call is not None:  # a request went out: the start was announced
            self._events(
                CompactionFinished(
                    trigger=trigger.value,
                    tokens_before=before,
                    tokens_after=before,
                    summary_length=0,
                    messages_compacted=0,
                    error=why,
                )
            )
        self._events(Notice(level="warning", message=f"no compaction ({trigger.value}): {why}"))
        return CompactionOutcome(error=why, call=call or SummaryCall())

    def _point(self, history: Sequence[Message], per_char: float) -> int | None:
        """The compaction point: the assistant message that begins the `keep_recent` turns
        kept as they are (fewer only while they alone would fill more than `RECENT_SHARE` of
        the window), or None when nothing older than them is left to compact (as right after
        a compaction)."""
        current = self.view.compaction
        start = current.point if current is not None else 0
        turns = [i for i, m in enumerate(history) if m.role == "assistant" and i >= start]
        room = self.view.window * RECENT_SHARE
        keep = self.settings.keep_recent
        while keep > 1:
            first = turns[-keep] if len(turns) >= keep else start
            if tokens(messages_chars(history[first:]), per_char) <= room:
                break
            keep -= 1
        return turns[-keep] if len(turns) > keep else None

    def _sent_index(self, history: Sequence[Message], point: int) -> int:
        """Where `point` is in what is sent now (a compaction before it sends one message for
        everything before its own point)."""
        current = self.view.compaction
        if current is None:
            return point
        return point - current.point + 1
