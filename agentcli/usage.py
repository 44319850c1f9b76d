"""Token usage, what it costs, and budgets.

Prices come from the model catalogue (`agentcli.catalogue`), in USD per million tokens, with the
model's own prompt-cache write (5-minute lifetime) and read rates. A model whose price is
unknown has an unknown cost: we report `None`, never a guess.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from agentcli.catalogue import Price

MILLION = 1_000_000
MAX_TOKEN_COUNT = 10**12
"""More tokens than any one response is: a server that reports more sent garbage."""


def token_count(value: object) -> int | None:
    """A token count as a server reported it, or None when it is not one: not a number (a
    string, a boolean, null), not finite (JSON's `1e999`, `NaN`), negative or absurdly large.
    Such a value counts as missing, never as a crash nor as a number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return int(value) if 0 <= value <= MAX_TOKEN_COUNT else None


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


def prompt_tokens(usage: Usage) -> int:
    """The prompt of a request: uncached input, cache reads and cache writes."""
    return usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens


def cost_usd(price: Price | None, usage: Usage) -> float | None:
    """What one request's `usage` cost at `price` (the model's, from the catalogue), unrounded;
    None when the price is unknown. Per request, because some prices depend on the length of
    the request's prompt: a task's cost is the sum over its responses."""
    if price is None:
        return None
    rates = price.rates_for(prompt_tokens(usage))
    return (
        usage.input_tokens * rates.input
        + usage.cache_creation_input_tokens * rates.cache_write
        + usage.cache_read_input_tokens * rates.cache_read
        + usage.output_tokens * rates.output
    ) / MILLION


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


USAGE_FIELDS = frozenset(Usage.__dataclass_fields__)
"""The token counts a usage record holds (`Usage`'s fields)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionTotals:
    """What a session's finished tasks used and cost, as the journal recorded them."""

    tasks: int = 0
    usage: Usage = Usage()
    cost_usd: float | None = 0.0
    """None when any task's cost is unknown (never guessed)."""
