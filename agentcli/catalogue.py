"""The model catalogue: every model agentcli knows, as data.

One `ModelSpec` per model: its id and aliases, context window, maximum output, prices, how it
thinks (adaptive-only, adaptive, budgeted, none), its effort levels and default effort, and the
request rules it enforces. Cost (`agentcli.usage`), context elision (`agentcli.context`),
`max_tokens` and request building (`agentcli.model.anthropic`) all read it; nothing else keeps a
table of models. `[models."ID"]` in a config file adds a model or changes one
(`Catalogue.with_overrides`).

A model that is not in the catalogue still works, with conservative defaults (`unknown_model`):
no thinking or effort parameters, a modest output limit and a 200k-token window. Its price is
unknown, and its cost is reported as unknown (null), never as 0 or a guess.

Facts are from Anthropic's model pages and migration guides (late 2026). A leaf module: it
imports only `model_spec` (the shape of an entry), so the cheapest commands can read it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import fields, replace
from typing import Any

from agentcli.model_spec import (
    EFFORTS,
    THINKING_BUDGETS,
    UNKNOWN_CONTEXT_WINDOW,
    UNKNOWN_MAX_OUTPUT,
    Effort,
    ModelSpec,
    Price,
    Rates,
    ThinkingMode,
    standard_rates,
    unknown_model,
)

# -- the models ---------------------------------------------------------------------------------
_ALL = EFFORTS
_NO_XHIGH = (Effort.LOW, Effort.MEDIUM, Effort.HIGH, Effort.MAX)
_CURRENT_RULES: dict[str, Any] = {
    "omits_thinking": True,
    "rejects_prefill": True,
    "rejects_sampling": True,
    "rejects_forced_tool_choice": True,
    "binds_thinking": True,
}
"""What the 5.5 generation and Fable 5.1 share: thinking always on and shown only on request,
no prefill or sampling parameters, no forced tool use, thinking bound to model and transcript."""


_LEGACY5_RULES: dict[str, Any] = {
    "default": Effort.HIGH,
    "omits_thinking": True,
    "rejects_prefill": True,
    "rejects_sampling": True,
    "legacy": True,
    "server_compaction": True,
}
"""Legacy 5.x: adaptive thinking (can be turned off), no prefill or sampling parameters; the
API's own compaction (`compact_20260112`, API docs `build-with-claude/compaction`)."""


def _claude5(model_id: str, name: str, *, price: Price, default: Effort, **rules: Any) -> ModelSpec:
    return ModelSpec(
        id=model_id,
        name=name,
        context_window=1_000_000,
        max_output=128_000,
        price=price,
        thinking=ThinkingMode.ADAPTIVE_ONLY,
        efforts=_ALL,
        default_effort=default,
        **rules,
    )


def _budgeted(model_id: str, name: str, *, price: Price, max_output: int, **more: Any) -> ModelSpec:
    return ModelSpec(
        id=model_id,
        name=name,
        max_output=max_output,
        price=price,
        thinking=ThinkingMode.BUDGETED,
        legacy=True,
        **more,
    )


BUILTIN: tuple[ModelSpec, ...] = (
    # The current lineup.
    _claude5(
        "claude-opus-5-5",
        "Claude Opus 5.5",
        price=Price(rates=Rates(input=4.0, output=20.0, cache_write=5.0, cache_read=0.20)),
        default=Effort.MEDIUM,
        aliases=("opus",),
        **_CURRENT_RULES,
    ),
    _claude5(
        "claude-sonnet-5-5",
        "Claude Sonnet 5.5",
        # Cache reads were cut from $0.20 to $0.10 on 2026-10-07.
        price=Price(rates=Rates(input=2.0, output=10.0, cache_write=2.50, cache_read=0.10)),
        default=Effort.HIGH,
        aliases=("sonnet",),
        **_CURRENT_RULES,
    ),
    _claude5(
        "claude-haiku-5-5",
        "Claude Haiku 5.5",
        # A request whose prompt is over 100,000 tokens pays 5x on every token, output included.
        price=Price(
            rates=Rates(input=0.10, output=0.50, cache_write=0.125, cache_read=0.01),
            long_prompt=Rates(input=0.50, output=2.50, cache_write=0.625, cache_read=0.05),
            long_prompt_above=100_000,
        ),
        default=Effort.MEDIUM,
        aliases=("haiku",),
        **_CURRENT_RULES,
    ),
    _claude5(
        "claude-fable-5-1",
        "Claude Fable 5.1",
        price=Price(rates=Rates(input=10.0, output=50.0, cache_write=12.50, cache_read=0.25)),
        default=Effort.HIGH,
        aliases=("fable",),
        **_CURRENT_RULES,
    ),
    # Legacy 5.x: adaptive thinking (can be turned off), no prefill or sampling parameters.
    _claude5(
        "claude-opus-5",
        "Claude Opus 5",
        price=Price(rates=standard_rates(5.0, 25.0)),
        **_LEGACY5_RULES,
    ),
    _claude5(
        "claude-sonnet-5",
        "Claude Sonnet 5",
        price=Price(rates=standard_rates(2.0, 10.0)),
        **_LEGACY5_RULES,
    ),
    _claude5(
        "claude-fable-5",
        "Claude Fable 5",
        price=Price(rates=standard_rates(10.0, 50.0)),
        **_LEGACY5_RULES,
    ),
    # 4.x, still served.
    ModelSpec(
        id="claude-opus-4-7",
        name="Claude Opus 4.7",
        context_window=1_000_000,
        max_output=128_000,
        price=Price(rates=standard_rates(5.0, 25.0)),
        thinking=ThinkingMode.ADAPTIVE_ONLY,
        efforts=_ALL,
        default_effort=Effort.HIGH,
        omits_thinking=True,
        rejects_prefill=True,
        legacy=True,
        server_compaction=True,
    ),
    ModelSpec(
        id="claude-opus-4-6",
        name="Claude Opus 4.6",
        max_output=128_000,
        price=Price(rates=standard_rates(5.0, 25.0)),
        thinking=ThinkingMode.ADAPTIVE,
        efforts=_NO_XHIGH,
        default_effort=Effort.HIGH,
        rejects_prefill=True,
        legacy=True,
        server_compaction=True,
    ),
    ModelSpec(
        id="claude-sonnet-4-6",
        name="Claude Sonnet 4.6",
        max_output=64_000,
        price=Price(rates=standard_rates(3.0, 15.0)),
        thinking=ThinkingMode.ADAPTIVE,
        efforts=_NO_XHIGH,
        default_effort=Effort.HIGH,
        rejects_prefill=True,
        legacy=True,
        server_compaction=True,
    ),
    _budgeted(
        "claude-opus-4-5",
        "Claude Opus 4.5",
        price=Price(rates=standard_rates(5.0, 25.0)),
        max_output=64_000,
        efforts=(Effort.LOW, Effort.MEDIUM, Effort.HIGH),
        default_effort=Effort.HIGH,
    ),
    _budgeted(
        "claude-sonnet-4-5",
        "Claude Sonnet 4.5",
        price=Price(rates=standard_rates(3.0, 15.0)),
        max_output=64_000,
    ),
    _budgeted(
        "claude-haiku-4-5",
        "Claude Haiku 4.5",
        price=Price(rates=standard_rates(1.0, 5.0)),
        max_output=64_000,
    ),
    _budgeted(
        "claude-opus-4-1",
        "Claude Opus 4.1",
        price=Price(rates=standard_rates(15.0, 75.0)),
        max_output=32_000,
    ),
    _budgeted(
        "claude-opus-4-0",
        "Claude Opus 4",
        aliases=("claude-opus-4",),
        price=Price(rates=standard_rates(15.0, 75.0)),
        max_output=32_000,
    ),
    _budgeted(
        "claude-sonnet-4-0",
        "Claude Sonnet 4",
        aliases=("claude-sonnet-4",),
        price=Price(rates=standard_rates(3.0, 15.0)),
        max_output=64_000,
    ),
    _budgeted(
        "claude-3-7-sonnet",
        "Claude Sonnet 3.7",
        price=Price(rates=standard_rates(3.0, 15.0)),
        max_output=64_000,
    ),
    ModelSpec(
        id="claude-3-5-haiku",
        name="Claude Haiku 3.5",
        max_output=8_192,
        price=Price(rates=standard_rates(0.8, 4.0)),
        legacy=True,
    ),
    ModelSpec(
        id="claude-3-haiku",
        name="Claude Haiku 3",
        max_output=4_096,
        price=Price(rates=Rates(input=0.25, output=1.25, cache_write=0.30, cache_read=0.03)),
        legacy=True,
    ),
)

DEFAULT_MODEL = "claude-opus-5-5"
"""The model agentcli uses unless told otherwise (see README, "Models")."""

# A dated snapshot (`claude-sonnet-4-5-20250929`), `-latest`, or a `[1m]` context marker name the
# same model as the id they extend.
_SUFFIX = re.compile(r"(?:-\d{8}|-latest)?(?:\[1m\])?$")


class Catalogue:
    """The models by id and alias; `lookup` never fails (an unknown id gets `unknown_model`)."""

    def __init__(self, specs: Iterable[ModelSpec]) -> None:
        self.specs: tuple[ModelSpec, ...] = tuple(specs)
        self._by_name: dict[str, ModelSpec] = {}
        for spec in self.specs:
            self._by_name[spec.id] = spec
        for spec in self.specs:
            for alias in spec.aliases:
                self._by_name.setdefault(alias, spec)

    def find(self, name: str) -> ModelSpec | None:
        """The model `name` (an id, an alias, or a dated or `-latest` id) names, or None."""
        key = name.strip().lower()
        found = self._by_name.get(key)
        if found is None:
            found = self._by_name.get(_SUFFIX.sub("", key, count=1))
        return found

    def lookup(self, name: str) -> ModelSpec:
        """The model `name` names, or the conservative stand-in for an unknown one."""
        return self.find(name) or unknown_model(name)

    def resolve(self, name: str) -> str:
        """The id to send for `name`: an alias becomes its model's id; any other name (a dated
        id pins a snapshot, an unknown id is the user's) is sent as given."""
        key = name.strip()
        spec = self._by_name.get(key.lower())
        if spec is not None and key.lower() in spec.aliases:
            return spec.id
        return key

    def closest(self, name: str, n: int = 3) -> list[str]:
        """The ids and aliases nearest `name` (a typo such as `opus-4.6`), best first."""
        wanted = name.strip().lower().replace(".", "-").replace("_", "-")
        names = sorted(self._by_name)
        return difflib.get_close_matches(wanted, names, n=n, cutoff=0.6)

    def aliases(self) -> dict[str, str]:
        """Alias → model id."""
        return {alias: spec.id for spec in self.specs for alias in spec.aliases}

    def with_overrides(self, overrides: Mapping[str, Mapping[str, Any]]) -> Catalogue:
        """This catalogue with `[models."ID"]` entries applied: the fields given replace the
        model's (a new id starts from the unknown-model defaults); `input`/`output` (and
        optionally `cache_write`/`cache_read`) set a flat price."""
        if not overrides:
            return self
        specs = {spec.id: spec for spec in self.specs}
        for model_id, change in overrides.items():
            base = self.find(model_id)
            start = base if base is not None else replace(unknown_model(model_id), known=True)
            specs[start.id] = _overridden(start, change)
        return Catalogue(specs.values())


_SPEC_FIELDS = frozenset(f.name for f in fields(ModelSpec)) - {"id", "price", "known"}
PRICE_FIELDS = ("input", "output", "cache_write", "cache_read")


def _overridden(spec: ModelSpec, change: Mapping[str, Any]) -> ModelSpec:
    values = {key: value for key, value in change.items() if key in _SPEC_FIELDS}
    for key in ("aliases", "efforts"):
        if key in values:
            values[key] = tuple(values[key])
    prices = {key: change[key] for key in PRICE_FIELDS if change.get(key) is not None}
    if prices:
        values["price"] = Price(rates=_rates(spec.price, prices))
    return replace(spec, **values)


def _rates(current: Price | None, given: Mapping[str, float]) -> Rates:
    """A flat price from the fields given over the model's current base rates; cache rates not
    given (and not known) follow the standard multipliers of the input price."""
    base = current.rates if current is not None else None
    if base is None and ("input" not in given or "output" not in given):
        raise ValueError("a model without a known price needs both `input` and `output`")
    input_rate = float(given.get("input", base.input if base else 0.0))
    output_rate = float(given.get("output", base.output if base else 0.0))
    standard = standard_rates(input_rate, output_rate)
    keep = base is not None and "input" not in given
    return Rates(
        input=input_rate,
        output=output_rate,
        cache_write=float(
            given.get("cache_write", base.cache_write if keep and base else standard.cache_write)
        ),
        cache_read=float(
            given.get("cache_read", base.cache_read if keep and base else standard.cache_read)
        ),
    )


def choice_notices(
    spec: ModelSpec, effort: Effort | None, catalogue: Catalogue | None = None
) -> list[str]:
    """What the user should hear about running `spec` at `effort`: a model the catalogue does
    not know (its cost is unknown; the closest names it knows, in case of a typo), and an
    effort level the model cannot take as asked."""
    notices: list[str] = []
    if not spec.known:
        close = (catalogue or CATALOGUE).closest(spec.id)
        guess = ""
        if close:
            guess = f" (did you mean {', '.join(close[:-1])}{' or ' if len(close) > 1 else ''}"
            guess += f"{close[-1]}?)"
        notices.append(
            f"model {spec.id!r} is not in agentcli's catalogue{guess}: its cost is reported as "
            f"unknown, and requests use conservative defaults (no thinking or effort "
            f"parameters, max_tokens {spec.max_output}, a {spec.context_window:,}-token "
            f'context window); describe it under [models."{spec.id}"] in a config file to '
            "change that"
        )
    if effort is None:
        return notices
    used = spec.effort_for(effort)
    if used is None and spec.thinking is not ThinkingMode.BUDGETED:
        notices.append(f"{spec.id} takes no effort level: effort {effort} is ignored")
    elif used is not None and used is not effort:
        notices.append(
            f"{spec.id} has no effort level {effort} (it has "
            f"{', '.join(e.value for e in spec.efforts)}): using {used}"
        )
    return notices


CATALOGUE = Catalogue(BUILTIN)
"""The built-in catalogue (without a config file's `[models]`)."""

__all__ = [
    "BUILTIN",
    "CATALOGUE",
    "DEFAULT_MODEL",
    "EFFORTS",
    "PRICE_FIELDS",
    "THINKING_BUDGETS",
    "UNKNOWN_CONTEXT_WINDOW",
    "UNKNOWN_MAX_OUTPUT",
    "Catalogue",
    "Effort",
    "ModelSpec",
    "Price",
    "Rates",
    "ThinkingMode",
    "choice_notices",
    "standard_rates",
    "unknown_model",
]
