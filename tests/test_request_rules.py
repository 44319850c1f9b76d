"""Request bodies follow the rules of the model they go to.

The oracle is the strict fake's rule table (`agentcli.testing.strict`), written apart from the
catalogue the bodies are built from: every model × every effort is built and checked."""

from __future__ import annotations

from typing import Any

import pytest

from agentcli.catalogue import CATALOGUE, EFFORTS, Effort
from agentcli.messages import Message
from agentcli.model import ModelRequest, ToolSpec
from agentcli.model.request import build_request_params
from agentcli.testing.strict import RULES, check_request

TOOLS = [ToolSpec(name="read_file", description="d", input_schema={"type": "object"})]


def body(model: str, effort: Effort | None = None, **request: Any) -> dict[str, Any]:
    return build_request_params(
        model,
        ModelRequest(
            system="s", messages=[Message.user("hi")], tools=TOOLS, effort=effort, **request
        ),
    )


def test_the_oracle_knows_every_model_of_the_catalogue() -> None:
    """Otherwise the check below would pass vacuously (an unknown model is a 404 in it)."""
    assert {spec.id for spec in CATALOGUE.specs} <= set(RULES)


@pytest.mark.parametrize("model", [spec.id for spec in CATALOGUE.specs])
@pytest.mark.parametrize("effort", [None, *EFFORTS])
def test_every_model_accepts_what_agentcli_sends_it(model: str, effort: Effort | None) -> None:
    sent = body(model, effort)
    assert check_request(sent) is None, (model, effort, sent.get("thinking"))
    assert not {"temperature", "top_p", "top_k", "tool_choice"} & set(sent)


def test_the_default_request_is_adaptive_medium_summarized_at_full_output() -> None:
    sent = body("claude-opus-5-5")
    assert sent["max_tokens"] == 128_000
    assert sent["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert sent["output_config"] == {"effort": "medium"}


def test_an_explicit_effort_is_sent_and_a_missing_level_moves_down() -> None:
    assert body("claude-opus-5-5", Effort.MAX)["output_config"] == {"effort": "max"}
    assert body("claude-opus-4-6", Effort.XHIGH)["output_config"] == {"effort": "high"}


def test_adaptive_thinking_where_optional_and_shown_as_is() -> None:
    sent = body("claude-sonnet-4-6")
    assert sent["thinking"] == {"type": "adaptive"}  # 4.6 returns summaries by default
    assert sent["output_config"] == {"effort": "high"}


def test_budgeted_thinking_only_on_a_model_without_adaptive_and_only_when_asked() -> None:
    plain = body("claude-sonnet-4-5")
    assert "thinking" not in plain and "output_config" not in plain
    assert plain["max_tokens"] == 64_000
    thinking = body("claude-sonnet-4-5", Effort.HIGH)["thinking"]
    assert thinking == {"type": "enabled", "budget_tokens": 20_000}
    small = body("claude-sonnet-4-5", Effort.MAX, max_tokens=2_000)
    assert small["thinking"] == {"type": "enabled", "budget_tokens": 1_999}
    assert "thinking" not in body("claude-sonnet-4-5", Effort.MAX, max_tokens=1_000)


def test_no_reasoning_parameters_for_a_model_without_thinking_or_an_unknown_one() -> None:
    for model in ("claude-3-5-haiku", "claude-mystery-1"):
        sent = body(model, Effort.HIGH)
        assert "thinking" not in sent and "output_config" not in sent
    assert body("claude-mystery-1")["max_tokens"] == 16_384


def test_max_tokens_never_exceeds_the_models_output_limit() -> None:
    assert body("claude-3-haiku", max_tokens=50_000)["max_tokens"] == 4_096
    assert body("claude-opus-5-5", max_tokens=1_000)["max_tokens"] == 1_000
