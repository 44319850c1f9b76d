"""Token usage, the per-model price table and budgets.

Prices are USD per million tokens from Anthropic's published price list. Prompt-cache writes
(5-minute TTL) cost 1.25x the input price and cache reads 0.1x. A model that is not in the table
has an unknown cost: we report `None`, never a guess.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

MILLION = 1_000_000


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens
            + other.cache_creation_input_tokens,
        )

    @property
    def total_tokens(self) -> int:
        """Every token billed: uncached input, cache reads and writes, and output."""
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_input_tokens
            + self.cache_creation_input_tokens
        )

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
        }


@dataclass(frozen=True, slots=True)
class Price:
    input_per_mtok: float
    output_per_mtok: float

    def cost(self, usage: Usage) -> float:
        return (
            usage.input_tokens * self.input_per_mtok
            + usage.cache_creation_input_tokens * self.input_per_mtok * 1.25
            + usage.cache_read_input_tokens * self.input_per_mtok * 0.1
            + usage.output_tokens * self.output_per_mtok
        ) / MILLION


# Longest prefix wins, so dated ids ("claude-sonnet-4-5-20250929") find their family.
PRICES: dict[str, Price] = {
    "claude-opus-4-6": Price(5.0, 25.0),
    "claude-opus-4-5": Price(5.0, 25.0),
    "claude-opus-4-1": Price(15.0, 75.0),
    "claude-opus-4-0": Price(15.0, 75.0),
    "claude-opus-4-2": Price(15.0, 75.0),  # claude-opus-4-20250514
    "claude-sonnet-4-6": Price(3.0, 15.0),
    "claude-sonnet-4-5": Price(3.0, 15.0),
    "claude-sonnet-4-0": Price(3.0, 15.0),
    "claude-sonnet-4-2": Price(3.0, 15.0),  # claude-sonnet-4-20250514
    "claude-3-7-sonnet": Price(3.0, 15.0),
    "claude-3-5-sonnet": Price(3.0, 15.0),
    "claude-haiku-4-5": Price(1.0, 5.0),
    "claude-3-5-haiku": Price(0.8, 4.0),
    "claude-3-haiku": Price(0.25, 1.25),
}


def price_for(model: str) -> Price | None:
    best: str | None = None
    for prefix in PRICES:
        if model.startswith(prefix) and (best is None or len(prefix) > len(best)):
            best = prefix
    return PRICES[best] if best is not None else None


def cost_usd(model: str, usage: Usage) -> float | None:
    price = price_for(model)
    return None if price is None else round(price.cost(usage), 6)


@dataclass(frozen=True, slots=True, kw_only=True)
class Budget:
    """Limits checked before every model call. `None` means unlimited."""

    max_turns: int | None = None
    """Model calls allowed in one task."""
    max_tokens: int | None = None
    """Cumulative billed tokens (input incl. cache, and output) allowed in one task."""
    max_cost_usd: float | None = None
    """Cumulative cost allowed in one task; needs a known price for the model."""
    timeout_s: float | None = None
    """Wall-clock seconds for the whole task."""


class Clock:
    """Monotonic time; a seam so tests can control deadlines."""

    def now(self) -> float:
        return time.monotonic()
