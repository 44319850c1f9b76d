"""The fake Messages API's strict mode refuses what the API refuses: one bad request per rule, so
strict mode can never silently accept everything (the rest of the suite runs against it)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from agentcli.messages import JsonObject
from agentcli.model.stream import accumulate, parse_sse_text
from agentcli.testing.fake_api import (
    FakeMessagesServer,
    stream_message,
    text,
    thinking,
    tool_use,
)
from agentcli.testing.strict import ModelRules


@pytest.fixture
def server() -> Iterator[FakeMessagesServer]:
    with FakeMessagesServer() as fake:
        yield fake
        fake.take_refusals()


def post(server: FakeMessagesServer, body: dict[str, Any]) -> tuple[int, str]:
    request = urllib.request.Request(
        f"{server.base_url}/v1/messages",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def base(model: str = "claude-opus-5-5", **more: Any) -> dict[str, Any]:
    return {
        "model": model,
        "max_tokens": 1_000,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "stream": True,
        **more,
    }


def assistant_blocks(body: str) -> list[JsonObject]:
    response = accumulate(parse_sse_text(body), lambda _e: None)
    return [block.to_wire() for block in response.message.content]


REFUSED = [
    ("unknown model", base("claude-nonexistent-1"), 404),
    ("max_tokens over the limit", base(max_tokens=128_001), 400),
    ("max_tokens missing", {k: v for k, v in base().items() if k != "max_tokens"}, 400),
    (
        "budgeted thinking on Opus 5.5",
        base(thinking={"type": "enabled", "budget_tokens": 2000}),
        400,
    ),
    ("thinking off on Opus 5.5", base(thinking={"type": "disabled"}), 400),
    ("thinking off on Fable 5.1", base("claude-fable-5-1", thinking={"type": "disabled"}), 400),
    ("budgeted thinking on Opus 4.7", base("claude-opus-4-7", thinking={"type": "enabled"}), 400),
    ("adaptive thinking before 4.6", base("claude-sonnet-4-5", thinking={"type": "adaptive"}), 400),
    (
        "a budget not below max_tokens",
        base("claude-sonnet-4-5", thinking={"type": "enabled", "budget_tokens": 1_000}),
        400,
    ),
    ("a bad display", base(thinking={"type": "adaptive", "display": "loud"}), 400),
    ("an effort the model lacks", base("claude-opus-4-6", output_config={"effort": "xhigh"}), 400),
    (
        "effort on a model without it",
        base("claude-sonnet-4-5", output_config={"effort": "high"}),
        400,
    ),
    ("temperature on Opus 5.5", base(temperature=0.2), 400),
    ("top_p on Sonnet 5.5", base("claude-sonnet-5-5", top_p=0.9), 400),
    ("forced tool use on Opus 5.5", base(tool_choice={"type": "any"}), 400),
    (
        "a named tool on Fable 5.1",
        base("claude-fable-5-1", tool_choice={"type": "tool", "name": "x"}),
        400,
    ),
    (
        "forced tool use with thinking",
        base(
            "claude-sonnet-4-5",
            tool_choice={"type": "any"},
            thinking={"type": "enabled", "budget_tokens": 1024},
        ),
        400,
    ),
    (
        "a prefill on Opus 5.5",
        base(messages=[*base()["messages"], {"role": "assistant", "content": "Sure,"}]),
        400,
    ),
    (
        "an empty text block",
        base(messages=[{"role": "user", "content": [{"type": "text", "text": ""}]}]),
        400,
    ),
    ("an assistant first", base(messages=[{"role": "assistant", "content": "hi"}]), 400),
    (
        "an unanswered tool call",
        base(
            "claude-sonnet-4-5",
            messages=[
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [tool_use("read_file", {}, id="t1")]},
                {"role": "user", "content": [{"type": "text", "text": "and?"}]},
            ],
        ),
        400,
    ),
    (
        "five breakpoints",
        base(
            system=[
                {"type": "text", "text": f"s{i}", "cache_control": {"type": "ephemeral"}}
                for i in range(5)
            ]
        ),
        400,
    ),
]


@pytest.mark.parametrize(("why", "body", "status"), REFUSED, ids=[r[0] for r in REFUSED])
def test_strict_mode_refuses(
    server: FakeMessagesServer, why: str, body: dict[str, Any], status: int
) -> None:
    server.push(stream_message([text("should not be served")]))
    code, answer = post(server, body)
    assert code == status, (why, answer)
    assert server.remaining == 1  # a refused request does not use up the script
    assert len(server.take_refusals()) == 1


ACCEPTED = [
    base(thinking={"type": "adaptive", "display": "summarized"}, output_config={"effort": "max"}),
    base("claude-sonnet-5-5", thinking={"type": "disabled"}),
    base(
        "claude-sonnet-4-5-20250929",
        max_tokens=2_000,
        thinking={"type": "enabled", "budget_tokens": 1024},
    ),
    base("claude-sonnet-4-5", temperature=0.3, tool_choice={"type": "any"}),
    base(
        "claude-sonnet-4-5",
        messages=[*base()["messages"], {"role": "assistant", "content": "Sure,"}],
    ),
    base("claude-opus-4-6", output_config={"effort": "max"}),
]


@pytest.mark.parametrize("body", ACCEPTED)
def test_strict_mode_accepts_what_the_model_accepts(
    server: FakeMessagesServer, body: dict[str, Any]
) -> None:
    server.push(stream_message([text("ok")]))
    code, answer = post(server, body)
    assert code == 200, answer


def test_a_server_that_refused_fails_the_block_it_was_used_in() -> None:
    with pytest.raises(AssertionError, match="refused"), FakeMessagesServer() as fake:
        post(fake, base(temperature=0.2))


def test_non_strict_mode_serves_anything() -> None:
    with FakeMessagesServer(strict=False) as fake:
        fake.push(stream_message([text("ok")]))
        assert post(fake, base("anything", temperature=3))[0] == 200


def test_extra_models_get_the_rules_a_test_gives_them() -> None:
    with FakeMessagesServer(models={"claude-new-1": ModelRules(max_output=100)}) as fake:
        fake.push(stream_message([text("ok")]))
        assert post(fake, base("claude-new-1", max_tokens=100))[0] == 200
        assert post(fake, base("claude-new-1", max_tokens=101))[0] == 400
        fake.take_refusals()


# -- thinking blocks bound to the model and transcript that produced them ------------------------
READ_FILE = {"name": "read_file", "description": "read", "input_schema": {"type": "object"}}
"""A request that sends tool blocks back must define tools (the API refuses it otherwise)."""


def produced(server: FakeMessagesServer, model: str) -> tuple[dict[str, Any], list[JsonObject]]:
    """A first request to `model`, answered with thinking and a tool call (signed by the fake)."""
    first = base(model, tools=[READ_FILE])
    server.push(
        stream_message([thinking("let me look"), tool_use("read_file", {"path": "a"}, id="t1")])
    )
    code, answer = post(server, first)
    assert code == 200
    return first, assistant_blocks(answer)


def follow_up(first: dict[str, Any], blocks: list[JsonObject], model: str) -> dict[str, Any]:
    return {
        **first,
        "model": model,
        "messages": [
            *first["messages"],
            {"role": "assistant", "content": blocks},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}],
            },
        ],
    }


def test_thinking_goes_back_to_the_model_that_produced_it(server: FakeMessagesServer) -> None:
    first, blocks = produced(server, "claude-opus-5-5")
    assert blocks[0]["signature"].startswith("fakesig1.")
    server.push(stream_message([text("done")]))
    assert post(server, follow_up(first, blocks, "claude-opus-5-5"))[0] == 200


def test_another_models_thinking_block_is_refused(server: FakeMessagesServer) -> None:
    first, blocks = produced(server, "claude-sonnet-5-5")
    code, answer = post(server, follow_up(first, blocks, "claude-opus-5-5"))
    assert code == 400 and "claude-sonnet-5-5" in answer
    server.take_refusals()


def test_a_thinking_block_after_a_changed_prefix_is_refused(server: FakeMessagesServer) -> None:
    first, blocks = produced(server, "claude-opus-5-5")
    changed = follow_up(first, blocks, "claude-opus-5-5")
    changed["messages"][0] = {"role": "user", "content": "hello"}
    assert post(server, changed)[0] == 400
    changed = follow_up(first, blocks, "claude-opus-5-5")
    changed["system"] = "another system prompt"
    assert post(server, changed)[0] == 400
    assert len(server.take_refusals()) == 2


def test_a_modified_or_unsigned_thinking_block_is_refused(server: FakeMessagesServer) -> None:
    first, blocks = produced(server, "claude-opus-5-5")
    edited = [{**blocks[0], "thinking": "something else"}, *blocks[1:]]
    assert post(server, follow_up(first, edited, "claude-opus-5-5"))[0] == 400
    unsigned = [thinking("let me look", signature="sig-real-api"), *blocks[1:]]
    assert post(server, follow_up(first, unsigned, "claude-opus-5-5"))[0] == 400
    assert len(server.take_refusals()) == 2


def test_leaving_thinking_out_is_always_accepted(server: FakeMessagesServer) -> None:
    first, blocks = produced(server, "claude-sonnet-5-5")
    server.push(stream_message([text("done")]))
    assert post(server, follow_up(first, blocks[1:], "claude-opus-5-5"))[0] == 200


def test_older_models_do_not_bind_thinking(server: FakeMessagesServer) -> None:
    first, blocks = produced(server, "claude-sonnet-4-5")
    server.push(stream_message([text("done")]))
    assert post(server, follow_up(first, blocks, "claude-haiku-4-5"))[0] == 200


def test_tool_blocks_without_tools_are_refused(server: FakeMessagesServer) -> None:
    first, blocks = produced(server, "claude-sonnet-4-5")
    body = follow_up(first, blocks, "claude-sonnet-4-5")
    del body["tools"]
    code, answer = post(server, body)
    assert code == 400
    assert "Requests which include `tool_use` or `tool_result` blocks must define tools" in answer
    server.take_refusals()
