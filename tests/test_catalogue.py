"""The model catalogue: names, prices and limits of the current lineup, unknown models, and
`[models]` overrides in config files.

Prices are checked against the numbers Anthropic publishes (USD per million tokens), written
out by hand here, not read from the catalogue."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentcli.catalogue import (
    CATALOGUE,
    DEFAULT_MODEL,
    EFFORTS,
    Effort,
    ModelSpec,
    ThinkingMode,
    choice_notices,
)
from agentcli.config import load_settings
from agentcli.errors import UsageError
from agentcli.loop import QueryLoop
from agentcli.messages import Message
from agentcli.paths import user_config_path
from agentcli.permissions import NonInteractivePrompter, PermissionMode
from agentcli.permissions.basic import ModePolicy
from agentcli.settings import Settings
from agentcli.store import MemoryJournal
from agentcli.testing import ScriptedModel, respond, text
from agentcli.tools.base import ToolContext
from agentcli.tools.runtime import ToolRuntime
from agentcli.usage import Usage, cost_usd

MTOK = 1_000_000


def test_the_default_is_the_current_opus() -> None:
    spec = CATALOGUE.lookup(DEFAULT_MODEL)
    assert DEFAULT_MODEL == "claude-opus-5-5" == Settings().model
    assert spec.known and not spec.legacy
    assert (spec.context_window, spec.max_output) == (1_000_000, 128_000)
    assert spec.thinking is ThinkingMode.ADAPTIVE_ONLY and spec.default_effort is Effort.MEDIUM


@pytest.mark.parametrize(
    ("alias", "model_id"),
    [
        ("opus", "claude-opus-5-5"),
        ("sonnet", "claude-sonnet-5-5"),
        ("haiku", "claude-haiku-5-5"),
        ("fable", "claude-fable-5-1"),
        ("Opus", "claude-opus-5-5"),
    ],
)
def test_aliases_name_the_current_models(alias: str, model_id: str) -> None:
    assert CATALOGUE.resolve(alias) == model_id
    assert CATALOGUE.lookup(alias).id == model_id


@pytest.mark.parametrize(
    ("name", "model_id"),
    [
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-sonnet-5-5-20261007", "claude-sonnet-5-5"),  # not Sonnet 5
        ("claude-opus-5-20260724", "claude-opus-5"),  # not Opus 5.5
        ("claude-opus-4-20250514", "claude-opus-4-0"),
        ("claude-opus-4-1-20250805", "claude-opus-4-1"),
        ("claude-3-7-sonnet-latest", "claude-3-7-sonnet"),
        ("claude-opus-5-5[1m]", "claude-opus-5-5"),
    ],
)
def test_dated_ids_find_their_model_and_are_sent_as_given(name: str, model_id: str) -> None:
    assert CATALOGUE.lookup(name).id == model_id
    assert CATALOGUE.resolve(name) == name


def test_an_unknown_model_is_unknown_not_a_neighbour() -> None:
    for name in ("claude-opus-6", "claude-sonnet-5-55", "gpt-9", "claude-opus-5-5-preview"):
        spec = CATALOGUE.lookup(name)
        assert not spec.known and spec.id == name and spec.price is None
        assert spec.thinking is ThinkingMode.NONE and spec.efforts == ()
        assert cost_usd(spec.price, Usage(input_tokens=1_000)) is None
    notice = choice_notices(CATALOGUE.lookup("claude-opus-6"), None)
    assert len(notice) == 1 and "cost is reported as unknown" in notice[0]


# (model, (input, output, cache write, cache read)) in USD per million tokens.
PUBLISHED = [
    ("claude-opus-5-5", (4.0, 20.0, 5.0, 0.20)),
    ("claude-sonnet-5-5", (2.0, 10.0, 2.50, 0.10)),
    ("claude-fable-5-1", (10.0, 50.0, 12.50, 0.25)),
    ("claude-opus-5", (5.0, 25.0, 6.25, 0.50)),
    ("claude-sonnet-5", (2.0, 10.0, 2.50, 0.20)),
    ("claude-opus-4-7", (5.0, 25.0, 6.25, 0.50)),
    ("claude-opus-4-6", (5.0, 25.0, 6.25, 0.50)),
    ("claude-sonnet-4-6", (3.0, 15.0, 3.75, 0.30)),
    ("claude-sonnet-4-5", (3.0, 15.0, 3.75, 0.30)),
    ("claude-haiku-4-5", (1.0, 5.0, 1.25, 0.10)),
    ("claude-opus-4-1", (15.0, 75.0, 18.75, 1.50)),
]


@pytest.mark.parametrize(("model", "rates"), PUBLISHED)
def test_each_kind_of_token_costs_the_published_price(
    model: str, rates: tuple[float, float, float, float]
) -> None:
    price = CATALOGUE.lookup(model).price
    kinds = (
        Usage(input_tokens=MTOK),
        Usage(output_tokens=MTOK),
        Usage(cache_creation_input_tokens=MTOK),
        Usage(cache_read_input_tokens=MTOK),
    )
    for usage, rate in zip(kinds, rates, strict=True):
        assert cost_usd(price, usage) == pytest.approx(rate)


def test_haiku_5_5_prices_a_long_prompt_higher_on_every_token() -> None:
    price = CATALOGUE.lookup("haiku").price
    short = Usage(input_tokens=60_000, cache_read_input_tokens=40_000, output_tokens=1_000)
    long = Usage(input_tokens=60_000, cache_read_input_tokens=40_001, output_tokens=1_000)
    assert cost_usd(price, short) == pytest.approx((60_000 * 0.10 + 40_000 * 0.01 + 500) / MTOK)
    assert cost_usd(price, long) == pytest.approx((60_000 * 0.5 + 40_001 * 0.05 + 2_500) / MTOK)


async def test_a_task_costs_the_sum_of_its_responses_each_priced_on_its_own(
    workspace: Path,
) -> None:
    """Two Haiku 5.5 requests, one over the 100k-token prompt tier: the total is not the price
    of their summed usage (which would put both in the higher tier)."""
    first = Usage(input_tokens=150_000, output_tokens=100)
    second = Usage(input_tokens=1_000, output_tokens=100)
    model = ScriptedModel(
        [
            respond(text("a"), stop_reason="max_tokens", usage=first),
            respond(text("b"), usage=second),
        ],
        model="claude-haiku-5-5",
    )
    journal = MemoryJournal()
    runtime = ToolRuntime(
        [],
        ctx=ToolContext(workspace=workspace, data_dir=workspace / "data"),
        policy=ModePolicy(mode=PermissionMode.DEFAULT),
        prompter=NonInteractivePrompter(),
        journal=journal,
        events=lambda _e: None,
    )
    loop = QueryLoop(
        model=model, runtime=runtime, journal=journal, system="s", events=lambda _e: None
    )
    await loop.run([Message.user("go")])
    expected = (150_000 * 0.5 + 100 * 2.5 + 1_000 * 0.1 + 100 * 0.5) / MTOK
    assert loop.cost_usd == pytest.approx(expected)


async def test_one_unpriced_response_makes_the_total_unknown(workspace: Path) -> None:
    model = ScriptedModel([respond(text("a"))], model="claude-mystery-1")
    journal = MemoryJournal()
    runtime = ToolRuntime(
        [],
        ctx=ToolContext(workspace=workspace, data_dir=workspace / "data"),
        policy=ModePolicy(mode=PermissionMode.DEFAULT),
        prompter=NonInteractivePrompter(),
        journal=journal,
        events=lambda _e: None,
    )
    loop = QueryLoop(
        model=model, runtime=runtime, journal=journal, system="s", events=lambda _e: None
    )
    await loop.run([Message.user("go")])
    assert loop.cost_usd is None


@given(st.sampled_from([s for s in CATALOGUE.specs if s.efforts]), st.sampled_from(EFFORTS))
def test_an_effort_a_model_lacks_becomes_the_nearest_level_below(
    spec: ModelSpec, wanted: Effort
) -> None:
    order = ["low", "medium", "high", "xhigh", "max"]  # the oracle: the documented order
    used = spec.effort_for(wanted)
    assert used in spec.efforts
    if wanted in spec.efforts:
        assert used is wanted
    else:
        below = [e for e in spec.efforts if order.index(e) < order.index(wanted)]
        expected = max(below, key=order.index) if below else min(spec.efforts, key=order.index)
        assert used == expected
        assert any(str(wanted) in n for n in choice_notices(spec, wanted))


def test_the_effort_default_is_the_models_own() -> None:
    assert CATALOGUE.lookup("opus").effort_for(None) is Effort.MEDIUM
    assert CATALOGUE.lookup("sonnet").effort_for(None) is Effort.HIGH
    assert CATALOGUE.lookup("claude-sonnet-4-5").effort_for(Effort.HIGH) is None


# -- [models] in config files -------------------------------------------------------------------
def write_config(workspace: Path, body: str) -> Path:
    path = workspace / ".agentcli" / "config.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(body)
    return path


def test_a_config_file_adds_a_model_with_its_price(workspace: Path) -> None:
    write_config(
        workspace,
        '[models."claude-opus-6"]\n'
        'aliases = ["next"]\ncontext_window = 2000000\nmax_output = 200000\n'
        'input = 3\noutput = 15\nthinking = "adaptive-only"\n'
        'efforts = ["low", "high"]\ndefault_effort = "high"\n',
    )
    catalogue = load_settings(workspace, trusted=True).catalogue()
    spec = catalogue.lookup("next")
    assert spec.id == "claude-opus-6" and spec.known
    assert (spec.context_window, spec.max_output) == (2_000_000, 200_000)
    assert spec.thinking is ThinkingMode.ADAPTIVE_ONLY and spec.efforts == (Effort.LOW, Effort.HIGH)
    # Cache rates not given follow the standard multipliers of the input price.
    usage = Usage(input_tokens=MTOK, cache_creation_input_tokens=MTOK, cache_read_input_tokens=MTOK)
    assert cost_usd(spec.price, usage) == pytest.approx(3 + 3.75 + 0.3)
    assert catalogue.resolve("next") == "claude-opus-6"


def test_a_config_file_changes_what_it_gives_of_a_known_model(workspace: Path) -> None:
    write_config(workspace, "[models.opus]\ncache_read = 0.1\ncontext_window = 500000\n")
    spec = load_settings(workspace, trusted=True).catalogue().lookup("claude-opus-5-5")
    assert spec.context_window == 500_000 and spec.max_output == 128_000
    assert cost_usd(spec.price, Usage(cache_read_input_tokens=MTOK)) == pytest.approx(0.1)
    assert cost_usd(spec.price, Usage(input_tokens=MTOK)) == pytest.approx(4.0)


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ('[models."claude-x"]\ncontext_windw = 5\n', "models.claude-x.context_windw"),
        ('[models."claude-x"]\nthinking = "sometimes"\n', "models.claude-x.thinking"),
        ('[models."claude-x"]\nefforts = ["extreme"]\n', "models.claude-x.efforts"),
        ('[models."claude-x"]\ninput = -1\n', "models.claude-x.input"),
        ('[models."claude-x"]\ninput = 1\n', "claude-x"),  # no output price
        ('effort = "extreme"\n', "effort"),
    ],
)
def test_a_bad_model_entry_or_effort_is_an_error_naming_file_and_key(
    workspace: Path, body: str, named: str
) -> None:
    path = write_config(workspace, body)
    with pytest.raises(UsageError) as caught:
        load_settings(workspace, trusted=True)
    assert str(path) in caught.value.message and named in caught.value.message


def test_an_untrusted_repository_cannot_change_prices(workspace: Path) -> None:
    write_config(workspace, "[models.opus]\ninput = 0\noutput = 0\n")
    settings = load_settings(workspace, trusted=False)
    assert settings.catalogue().lookup("opus").price == CATALOGUE.lookup("opus").price
    assert settings.provenance.ignored


def test_model_tables_merge_across_levels(workspace: Path) -> None:
    user = user_config_path()
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text('[models."claude-a"]\ninput = 1\noutput = 2\n[models.opus]\ninput = 3\n')
    write_config(
        workspace, '[models."claude-b"]\ninput = 5\noutput = 6\n[models.opus]\noutput = 7\n'
    )
    catalogue = load_settings(workspace, trusted=True).catalogue()
    assert cost_usd(catalogue.lookup("claude-a").price, Usage(input_tokens=MTOK)) == 1
    assert cost_usd(catalogue.lookup("claude-b").price, Usage(input_tokens=MTOK)) == 5
    opus = catalogue.lookup("opus").price
    assert cost_usd(opus, Usage(input_tokens=MTOK, output_tokens=MTOK)) == pytest.approx(10)


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("opus-4.6", "claude-opus-4-6"),
        ("claude-sonet-4-5", "claude-sonnet-4-5"),
        ("sonet", "sonnet"),
    ],
)
def test_a_typo_in_a_model_name_is_answered_with_the_closest_names(typed: str, meant: str) -> None:
    assert meant in CATALOGUE.closest(typed)
    notice = choice_notices(CATALOGUE.lookup(typed), None)[0]
    assert f"model {typed!r} is not in agentcli's catalogue (did you mean " in notice
    assert meant in notice.split("?)")[0]


def test_a_name_like_no_model_gets_no_guess() -> None:
    assert CATALOGUE.closest("qwen2.5-coder") == []
    assert "did you mean" not in choice_notices(CATALOGUE.lookup("qwen2.5-coder"), None)[0]
