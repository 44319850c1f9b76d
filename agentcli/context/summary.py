"""One summarization request: the handoff prompt over what the model is sent now, no tools, and
the summary it returns, or why there is none (an error, a refusal, an empty or overlong answer).

What it cost is returned either way (a refused or overlong summary was billed too), so the task
counts it in its usage and `--max-cost`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from agentcli.catalogue import ModelSpec
from agentcli.compaction_record import PinnedItem
from agentcli.context.handoff import HANDOFF_SYSTEM, summary_request
from agentcli.context.tokens import TOKENS_PER_CHAR, tokens
from agentcli.errors import ModelError
from agentcli.events import Event, EventSink, Notice
from agentcli.messages import Message
from agentcli.model import ModelClient, ModelRequest, StopReason
from agentcli.usage import Usage

OUTPUT_ROOM = 0.25
"""The part of the summarizing model's window left for its answer (thinking included): the
transcript gets the rest."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryCall:
    """What the summarization request cost (nothing, when none was sent)."""

    spec: ModelSpec | None = None
    """The model that was asked (its price and window)."""
    usage: Usage = field(default_factory=Usage)
    usage_known: bool = True
    api_s: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Summary:
    text: str | None
    """The summary; None when there is none (`error` says why)."""
    error: str | None
    call: SummaryCall


async def summarize(
    messages: Sequence[Message],
    pinned: Sequence[PinnedItem],
    instructions: str | None,
    *,
    model: ModelClient,
    spec: ModelSpec,
    max_tokens: int,
    events: EventSink,
    tokens_per_char: float = TOKENS_PER_CHAR,
) -> Summary:
    """Ask `model` for a handoff summary of `messages` (what the model is sent of the history
    before the compaction point). The answer's text must be non-empty and within `max_tokens`
    (estimated); its streamed text never reaches the user's output, only notices do. The
    transcript is made to fit the model's window at `tokens_per_char` (what the session's last
    response gave), or the rule of thumb where that is fewer tokens."""
    per_char = max(tokens_per_char, TOKENS_PER_CHAR)
    budget_chars = int(spec.context_window * (1 - OUTPUT_ROOM) / per_char)
    request = ModelRequest(
        system=HANDOFF_SYSTEM,
        messages=(summary_request(messages, pinned, instructions, budget_chars=budget_chars),),
        tools=(),
        spec=spec,
    )
    started = time.monotonic()

    def notices_only(event: Event) -> None:
        if isinstance(event, Notice):
            events(event)

    try:
        response = await model.complete(request, notices_only)
    except ModelError as exc:
        call = SummaryCall(spec=spec, api_s=time.monotonic() - started)
        return Summary(text=None, error=f"the summary request failed: {exc.message}", call=call)
    call = SummaryCall(
        spec=spec,
        usage=response.usage,
        usage_known=response.usage_known,
        api_s=time.monotonic() - started,
    )
    text = response.message.text.strip()
    error = None
    if response.stop_reason == StopReason.REFUSAL:
        error = "the model declined to write the summary (refusal)"
    elif response.stop_reason == StopReason.MAX_TOKENS:
        error = "the summary was cut at the model's output limit"
    elif not text:
        error = "the summary came back empty"
    elif tokens(len(text)) > max_tokens:
        error = f"the summary is over its budget of {max_tokens:,} tokens (≈{tokens(len(text)):,})"
    return Summary(text=None if error else text, error=error, call=call)
