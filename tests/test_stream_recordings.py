"""Real recorded Messages API streams through the SSE accumulator (no SDK involved)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentcli.errors import IncompleteResponseError, ModelError, RetryableModelError
from agentcli.events import Event, TextDelta, ThinkingDelta
from agentcli.messages import OpaqueBlock, TextBlock, ThinkingBlock, ToolUseBlock
from agentcli.model.stream import ServerSentEvent, SseParser, accumulate, parse_sse_text


def cassette_body(path: Path, interaction: int = 0) -> str:
    data = yaml.safe_load(path.read_text())
    return str(data["interactions"][interaction]["response"]["body"]["string"])


def cassette_request(path: Path, interaction: int) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    body = data["interactions"][interaction]["request"]["body"]
    return json.loads(body) if isinstance(body, str) else dict(body)


def run(body: str) -> tuple[Any, list[Event]]:
    seen: list[Event] = []
    return accumulate(parse_sse_text(body), seen.append), seen


def test_text_then_tool_use_with_input_split_mid_token(recordings: Path) -> None:
    response, seen = run((recordings / "01_sdk_stream_tool_use.sse").read_text())
    assert response.stop_reason == "tool_use"
    text, call = response.message.content
    assert isinstance(text, TextBlock)
    assert text.text == "I'll check the current weather in Paris for you."
    assert isinstance(call, ToolUseBlock) and call.complete
    assert call.input == {"location": "Paris"}
    assert call.to_wire() == {
        "type": "tool_use",
        "id": "toolu_01NRLabsLyVHZPKxbKvkfSMn",
        "name": "get_weather",
        "input": {"location": "Paris"},
    }
    assert "".join(e.text for e in seen if isinstance(e, TextDelta)) == text.text
    assert response.usage.input_tokens == 377 and response.usage.output_tokens == 65


def test_max_tokens_cut_inside_tool_input_marks_the_call_incomplete(recordings: Path) -> None:
    body = (recordings / "02_sdk_stream_tool_use_truncated_max_tokens.sse").read_text()
    response, _ = run(body)
    assert response.stop_reason == "max_tokens"
    calls = response.message.tool_uses
    assert len(calls) == 1
    assert calls[0].complete is False and calls[0].input == {}


def test_thinking_and_signature_deltas_are_accumulated(recordings: Path) -> None:
    response, seen = run(cassette_body(recordings / "08_pai_stream_thinking_signature_delta.yaml"))
    thinking = response.message.content[0]
    assert isinstance(thinking, ThinkingBlock)
    assert thinking.signature and thinking.thinking
    assert "".join(e.text for e in seen if isinstance(e, ThinkingDelta)) == thinking.thinking
    assert isinstance(response.message.content[-1], TextBlock)


def test_redacted_thinking_blocks_are_kept_verbatim(recordings: Path) -> None:
    body = cassette_body(recordings / "10_pai_stream_redacted_thinking.yaml")
    starts = [
        json.loads(e.data)["content_block"]
        for e in parse_sse_text(body)
        if e.event == "content_block_start"
    ]
    response, _ = run(body)
    redacted = [b for b in response.message.content if isinstance(b, OpaqueBlock)]
    assert len(redacted) == 2
    assert [b.to_wire() for b in redacted] == [
        s for s in starts if s["type"] == "redacted_thinking"
    ]


def test_pause_turn_keeps_server_tool_blocks_and_never_makes_client_calls(recordings: Path) -> None:
    body = (recordings / "12a_pai_stream_pause_turn_web_search.interaction0.sse").read_text()
    response, _ = run(body)
    assert response.stop_reason == "pause_turn"
    kinds = [b.kind for b in response.message.content]
    assert "thinking" in kinds
    server = [b for b in response.message.content if isinstance(b, OpaqueBlock)]
    assert {b.type for b in server} >= {"server_tool_use", "web_search_tool_result"}
    assert response.message.tool_uses == []  # server tools are not ours to execute
    first_use = next(b for b in server if b.type == "server_tool_use")
    assert isinstance(first_use.raw["input"], dict) and first_use.raw["input"]


def test_two_parallel_tool_uses(recordings: Path) -> None:
    response, _ = run((recordings / "15a_otel_stream_parallel_tool_use_x2.body.sse").read_text())
    assert [c.name for c in response.message.tool_uses] == ["get_weather", "get_time"]
    assert all(c.complete and c.input for c in response.message.tool_uses)


def test_thinking_round_trip_matches_what_a_real_client_sent_back(recordings: Path) -> None:
    path = recordings / "17_llm_stream_thinking_tool_use_chain.yaml"
    response, _ = run(cassette_body(path, 0))
    sent_back = cassette_request(path, 1)["messages"][1]
    assert sent_back["role"] == "assistant"
    ours = response.message.to_wire()["content"]
    # The thinking block (with its signature) goes back exactly as the other client sent it.
    assert ours[0] == sent_back["content"][0]
    # For the tool_use, the API also sent `caller`, which that client dropped; we keep
    # everything the API sent, so ours is the received block, a superset of theirs.
    assert ours[1] == {**sent_back["content"][1], "caller": {"type": "direct"}}


def test_stream_without_message_stop_is_incomplete(recordings: Path) -> None:
    events = parse_sse_text((recordings / "01_sdk_stream_tool_use.sse").read_text())
    cut = [e for e in events if e.event != "message_stop"]
    with pytest.raises(IncompleteResponseError, match="message_stop"):
        accumulate(cut, lambda _e: None)


def test_stream_cut_before_stop_reason_is_incomplete(recordings: Path) -> None:
    events = parse_sse_text((recordings / "01_sdk_stream_tool_use.sse").read_text())
    cut = [e for e in events if e.event not in ("message_delta", "message_stop")]
    with pytest.raises(IncompleteResponseError):
        accumulate(
            [*cut, ServerSentEvent("message_stop", '{"type":"message_stop"}')], lambda _e: None
        )


def test_mid_stream_overloaded_error_is_retryable_and_other_errors_are_not() -> None:
    overloaded = ServerSentEvent(
        "error",
        '{"type":"error","error":{"details":null,"type":"overloaded_error","message":"Overloaded"}'
        "              }",
    )
    with pytest.raises(RetryableModelError):
        accumulate([overloaded], lambda _e: None)
    invalid = ServerSentEvent(
        "error", '{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}'
    )
    with pytest.raises(ModelError):
        accumulate([invalid], lambda _e: None)


def test_unknown_block_and_delta_types_survive() -> None:
    events = [
        ServerSentEvent(
            "message_start",
            json.dumps(
                {
                    "type": "message_start",
                    "message": {
                        "id": "m",
                        "type": "message",
                        "role": "assistant",
                        "model": "x",
                        "content": [],
                        "usage": {"input_tokens": 1},
                    },
                }
            ),
        ),
        ServerSentEvent(
            "content_block_start",
            json.dumps(
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "future_block", "note": "", "extra": {"k": 1}},
                }
            ),
        ),
        ServerSentEvent(
            "content_block_delta",
            json.dumps(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "note_delta", "note": "hel"},
                }
            ),
        ),
        ServerSentEvent(
            "content_block_delta",
            json.dumps(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "note_delta", "note": "lo"},
                }
            ),
        ),
        ServerSentEvent("content_block_stop", '{"type":"content_block_stop","index":0}'),
        ServerSentEvent("future_event", '{"type":"future_event"}'),
        ServerSentEvent(
            "message_delta",
            json.dumps(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn"},
                    "usage": {"output_tokens": 3},
                }
            ),
        ),
        ServerSentEvent("message_stop", '{"type":"message_stop"}'),
    ]
    response = accumulate(events, lambda _e: None)
    assert response.message.to_wire()["content"] == [
        {"type": "future_block", "note": "hello", "extra": {"k": 1}}
    ]


def test_sse_parser_handles_comments_multiline_data_and_crlf() -> None:
    parser = SseParser()
    lines = [": comment\r\n", "event: x\r\n", "data: a\r\n", "data: b\r\n", "\r\n"]
    out = [e for line in lines if (e := parser.feed_line(line)) is not None]
    assert out == [ServerSentEvent(event="x", data="a\nb")]


def tool_call_events(*blocks: dict[str, Any]) -> list[ServerSentEvent]:
    from agentcli.testing.fake_api import message_events

    wire = message_events(blocks, stop_reason="tool_use")
    return [ServerSentEvent(kind, data) for kind, data in wire]


def test_tool_input_that_is_not_an_object_is_kept_and_flagged() -> None:
    call = {"type": "tool_use", "id": "t1", "name": "read_file", "input": [1, 2]}
    response = accumulate(tool_call_events(call), lambda _e: None)
    (block,) = response.message.tool_uses
    assert block.input == {} and block.input_problem is not None
    assert "not an array" in block.input_problem
    assert block.to_wire() == call


@pytest.mark.parametrize(
    ("blocks", "problem"),
    [
        (
            [{"type": "tool_use", "id": "", "name": "read_file", "input": {}}],
            "no id or name",
        ),
        (
            [
                {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}},
                {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "b"}},
            ],
            "share the id 't1'",
        ),
    ],
)
def test_tool_calls_that_cannot_be_answered_make_the_response_incomplete(
    blocks: list[dict[str, Any]], problem: str
) -> None:
    with pytest.raises(IncompleteResponseError, match=problem):
        accumulate(tool_call_events(*blocks), lambda _e: None)
