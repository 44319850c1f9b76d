"""What the catalogue says of one model (`ModelSpec`): its limits, prices, how it thinks and
the request rules it enforces; and the conservative stand-in for a model nobody described
(`unknown_model`). A leaf module: it imports nothing from agentcli."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass


class Effort(enum.StrEnum):
    """`output_config.effort`: how much the model thinks and writes, lowest first."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    XHIGH = "xhigh"
    MAX = "max"


EFFORTS: tuple[Effort, ...] = tuple(Effort)
"""Every level, lowest first."""


class ThinkingMode(enum.StrEnum):
    """How a model thinks, and so which `thinking` parameter it accepts."""

    ADAPTIVE_ONLY = "adaptive-only"
    """`{"type": "adaptive"}` only; budgeted thinking (`"enabled"`) is rejected (Opus 4.7+, 5.x)."""
    ADAPTIVE = "adaptive"
    """Adaptive thinking, or budgeted thinking (deprecated) (the 4.6 models)."""
    BUDGETED = "budgeted"
    """Only `{"type": "enabled", "budget_tokens": N}`; adaptive is rejected (before 4.6)."""
    NONE = "none"
    """No thinking parameter at all."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Rates:
    """USD per million tokens."""

    input: float
    output: float
    cache_write: float
    """A prompt-cache write with the 5-minute lifetime (the one agentcli asks for)."""
    cache_read: float


def standard_rates(input: float, output: float) -> Rates:
    """Rates with Anthropic's usual cache multipliers: writes 1.25x input, reads 0.1x input."""
    return Rates(input=input, output=output, cache_write=input * 1.25, cache_read=input * 0.1)


@dataclass(frozen=True, slots=True, kw_only=True)
class Price:
    """What a model's tokens cost. Some models charge a whole request at a higher rate when its
    prompt (input, cache reads and cache writes) is longer than `long_prompt_above` tokens."""

    rates: Rates
    long_prompt: Rates | None = None
    long_prompt_above: int | None = None

    def rates_for(self, prompt_tokens: int) -> Rates:
        """The rates of one request whose prompt has `prompt_tokens` tokens."""
        above = self.long_prompt_above
        if self.long_prompt is not None and above is not None and prompt_tokens > above:
            return self.long_prompt
        return self.rates


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSpec:
    """One model: what it costs, what fits in it, and what requests it accepts."""

    id: str
    """The id sent to the API (`claude-opus-5-5`)."""
    name: str = ""
    """Its human name (`Claude Opus 5.5`)."""
    aliases: tuple[str, ...] = ()
    """Other names that resolve to this id (`opus`)."""
    context_window: int = 200_000
    max_output: int = 16_384
    """The largest `max_tokens` the model accepts; every request asks for this much."""
    price: Price | None = None
    """None: the price is unknown, and so is the cost."""
    thinking: ThinkingMode = ThinkingMode.NONE
    efforts: tuple[Effort, ...] = ()
    """The `output_config.effort` levels it accepts (empty: it takes no effort parameter)."""
    default_effort: Effort | None = None
    """The level the API uses when none is sent."""
    omits_thinking: bool = False
    """Thinking text comes back empty unless `thinking.display` asks for it (Opus 4.7 and
    later); text written between tool calls may arrive inside those thinking blocks."""
    rejects_prefill: bool = False
    """A request whose last message is the assistant's is rejected."""
    rejects_sampling: bool = False
    """Non-default `temperature`, `top_p` or `top_k` are rejected."""
    rejects_forced_tool_choice: bool = False
    """`tool_choice` of type `any` or `tool` is rejected."""
    binds_thinking: bool = False
    """A thinking block is valid only for the model that produced it and only while everything
    before it (system prompt, tools, earlier messages) is unchanged."""
    server_compaction: bool = False
    """The API can compact its context itself (`compact_20260112`, `[context] compaction =
    "server"`)."""
    legacy: bool = False
    """Still served, but superseded by a current model."""
    known: bool = True
    """False for the conservative stand-in of a model the catalogue does not have."""

    def effort_for(self, wanted: Effort | None) -> Effort | None:
        """The effort level to send for `wanted` (None: the model's default), or None when the
        model takes no effort parameter. A level the model lacks becomes the highest one it has
        below it (or its lowest)."""
        if not self.efforts:
            return None
        if wanted is None:
            return self.default_effort
        if wanted in self.efforts:
            return wanted
        below = [e for e in self.efforts if EFFORTS.index(e) < EFFORTS.index(wanted)]
        return max(below, key=EFFORTS.index) if below else min(self.efforts, key=EFFORTS.index)


THINKING_BUDGETS: Mapping[Effort, int] = {
    Effort.LOW: 4_000,
    Effort.MEDIUM: 10_000,
    Effort.HIGH: 20_000,
    Effort.XHIGH: 32_000,
    Effort.MAX: 48_000,
}
"""`budget_tokens` for an effort level on a model with budgeted thinking only (capped below
the request's `max_tokens`)."""

UNKNOWN_CONTEXT_WINDOW = 200_000
UNKNOWN_MAX_OUTPUT = 16_384


def unknown_model(model_id: str) -> ModelSpec:
    """The conservative stand-in for a model the catalogue does not have: nothing a model might
    reject (no thinking or effort parameter, no prefill), a modest output limit, and its
    thinking blocks treated as bound (the safe assumption). Its price is unknown."""
    return ModelSpec(
        id=model_id,
        name=model_id,
        context_window=UNKNOWN_CONTEXT_WINDOW,
        max_output=UNKNOWN_MAX_OUTPUT,
        rejects_prefill=True,
        rejects_sampling=True,
        rejects_forced_tool_choice=True,
        binds_thinking=True,
        known=False,
    )
