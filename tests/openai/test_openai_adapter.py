"""The Chat Completions adapter (thin httpx2 transport) against the local fake server: streamed
text and tool calls assembled from deltas, truncation, broken streams, error statuses."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import pytest

from agentcli.errors import ModelError, RetryableModelError
from agentcli.events import Event, ModelRetrying, Notice, TextDelta, ThinkingDelta
from agentcli.messages import Message, ToolResultBlock, ToolUseBlock
from agentcli.model import ModelRequest, StopReason, ToolSpec
from agentcli.model.openai_chat import NO_USAGE, OpenAIChatModel
from agentcli.model.retry import RetryingModel, RetryPolicy
from agentcli.provider import OpenAIEndpoint
from agentcli.terminal_reason import TerminalReason
from agentcli.testing.fake_openai import (
    ChatSseResponse,
    FakeChatServer,
    call,
    chat_chunks,
    chat_error,
    chat_stream,
)
from agentcli.testing.fake_responses import RawResponse

TOOLS = (ToolSpec(name="read_file", description="Read a file.", input_schema={"type": "object"}),)
REQUEST = ModelRequest(system="be brief", messages=[Message.user("hi")], tools=TOOLS)


@pytest.fixture
def server() -> Iterator[FakeChatServer]:
    with FakeChatServer() as fake:
        yield fake
        assert fake.pairing_problems() == []


_open: list[OpenAIChatModel] = []


def model_for(server: FakeChatServer, key: str | None = "test-key") -> OpenAIChatModel:
    model = OpenAIChatModel("fake-model", OpenAIEndpoint(base_url=server.base_url, api_key=key))
    _open.append(model)
    return model


@pytest.fixture(autouse=True)
async def _close_models() -> AsyncIterator[None]:
    yield
    while _open:
        await _open.pop().aclose()


async def no_sleep(_seconds: float) -> None:
    return None


def retrying(server: FakeChatServer, sleeps: list[float] | None = None) -> RetryingModel:
    async def sleep(seconds: float) -> None:
        if sleeps is not None:
            sleeps.append(seconds)

    return RetryingModel(model_for(server), RetryPolicy(max_attempts=3), sleep=sleep)


async def test_a_text_answer_streams_and_carries_usage(server: FakeChatServer) -> None:
    server.push(
        chat_stream(
            "Hello there, world.",
            reasoning="thinking it over",
            usage={
                "prompt_tokens": 120,
                "completion_tokens": 9,
                "prompt_tokens_details": {"cached_tokens": 100},
            },
        )
    )
    events: list[Event] = []
    response = await model_for(server).complete(REQUEST, events.append)
    assert response.message.text == "Hello there, world."
    assert response.stop_reason == StopReason.END_TURN
    assert response.usage.as_dict() == {
        "input_tokens": 20,
        "output_tokens": 9,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 0,
    }
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello there, world."
    assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == "thinking it over"
    assert response.request_id is not None and response.model == "fake-model"
    body = server.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file.",
                "parameters": {"type": "object"},
            },
        }
    ]
    assert "max_tokens" not in body and "reasoning_effort" not in body
    assert server.requests[0].headers["authorization"] == "Bearer test-key"


async def test_parallel_calls_are_assembled_from_split_argument_deltas(
    server: FakeChatServer,
) -> None:
    server.push(
        chat_stream(
            "Reading both.",
            [
                call("read_file", {"path": "src/a_long_file_name.py"}, id="call_a"),
                call("read_file", {"path": "b.py", "offset": 10}, id="call_b"),
            ],
            piece=3,
        )
    )
    response = await model_for(server).complete(REQUEST, lambda _e: None)
    assert response.stop_reason == StopReason.TOOL_USE
    uses = response.message.tool_uses
    assert [(u.id, u.name, u.input, u.complete) for u in uses] == [
        ("call_a", "read_file", {"path": "src/a_long_file_name.py"}, True),
        ("call_b", "read_file", {"path": "b.py", "offset": 10}, True),
    ]
    # Stored in agentcli's own shape: the journal and a later Anthropic session read it.
    assert uses[0].to_wire() == {
        "type": "tool_use",
        "id": "call_a",
        "name": "read_file",
        "input": {"path": "src/a_long_file_name.py"},
    }


async def test_tool_results_go_back_as_tool_messages_in_order(server: FakeChatServer) -> None:
    server.push(chat_stream("Both files are short."))
    history = [
        Message.user("read them"),
        Message(
            role="assistant",
            content=(
                ToolUseBlock(id="call_a", name="read_file", input={"path": "a.py"}),
                ToolUseBlock(id="call_b", name="read_file", input={"path": "b.py"}),
            ),
        ),
        Message(
            role="user",
            content=(
                ToolResultBlock(tool_use_id="call_a", content="1\tx = 1"),
                ToolResultBlock(tool_use_id="call_b", content="not_found: b.py", is_error=True),
            ),
        ),
    ]
    await model_for(server).complete(
        ModelRequest(system="s", messages=history, tools=TOOLS), lambda _e: None
    )
    messages = server.requests[0].body["messages"]
    assert messages[2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
            },
            {
                "id": "call_b",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "b.py"}'},
            },
        ],
    }
    assert messages[3:] == [
        {"role": "tool", "tool_call_id": "call_a", "content": "1\tx = 1"},
        {"role": "tool", "tool_call_id": "call_b", "content": "Error: not_found: b.py"},
    ]


async def test_length_cut_never_yields_a_runnable_half_call(server: FakeChatServer) -> None:
    server.push(
        chat_stream(
            tool_calls=[
                call("read_file", {"path": "a.py"}, id="call_whole"),
                call("read_file", {"path": "a_very_long_name.py"}, id="call_cut"),
            ],
            finish_reason="length",
            cut_last_call=True,
        )
    )
    response = await model_for(server).complete(REQUEST, lambda _e: None)
    assert response.stop_reason == StopReason.MAX_TOKENS
    whole, cut = response.message.tool_uses
    assert (whole.id, whole.complete, whole.input) == ("call_whole", True, {"path": "a.py"})
    assert (cut.id, cut.complete, cut.input) == ("call_cut", False, {})


async def test_a_broken_stream_is_discarded_whole_and_asked_again(
    server: FakeChatServer,
) -> None:
    # Cut after the call's first argument piece: nothing of it may be used.
    server.push(
        chat_stream(tool_calls=[call("read_file", {"path": "a.py"}, id="call_1")], cut_after=3),
        chat_stream(tool_calls=[call("read_file", {"path": "b.py"}, id="call_2")]),
    )
    events: list[Event] = []
    response = await retrying(server).complete(REQUEST, events.append)
    assert [(u.id, u.input) for u in response.message.tool_uses] == [("call_2", {"path": "b.py"})]
    assert [
        "the response stream broke" in e.reason for e in events if isinstance(e, ModelRetrying)
    ] == [True]
    assert len(server.requests) == 2


async def test_a_stream_that_ends_before_finish_reason_is_retried(server: FakeChatServer) -> None:
    # The connection closes cleanly, but the finish chunk never came.
    server.push(ChatSseResponse(payloads=chat_chunks("half an answer")[:2]), chat_stream("ok"))
    events: list[Event] = []
    response = await retrying(server).complete(REQUEST, events.append)
    assert response.message.text == "ok"
    assert [e.reason for e in events if isinstance(e, ModelRetrying)] == [
        "stream ended before a finish_reason"
    ]


async def test_429_waits_as_retry_after_asks_then_succeeds(server: FakeChatServer) -> None:
    server.push(
        chat_error(429, "Rate limit reached", "rate_limit_exceeded", retry_after="7"),
        chat_error(503, "overloaded", "server_error", retry_after_ms="1500"),
        chat_stream("ok"),
    )
    sleeps: list[float] = []
    response = await retrying(server, sleeps).complete(REQUEST, lambda _e: None)
    assert response.message.text == "ok"
    assert sleeps == [7.0, 1.5]


async def test_500s_until_retries_run_out_end_the_task(server: FakeChatServer) -> None:
    server.push(*(chat_error(500, "boom", "server_error") for _ in range(3)))
    with pytest.raises(ModelError) as caught:
        await retrying(server).complete(REQUEST, lambda _e: None)
    assert "500 server_error: boom" in caught.value.message
    assert "gave up after 3 attempts" in caught.value.message


@pytest.mark.parametrize(
    ("status", "etype", "says"),
    [
        (400, "invalid_request_error", "400 invalid_request_error: bad thing"),
        (401, "invalid_api_key", "check OPENAI_API_KEY"),
        (404, "not_found_error", "check the model name (-m/--model) and OPENAI_BASE_URL"),
    ],
)
async def test_client_errors_are_not_retried_and_say_what_to_fix(
    server: FakeChatServer, status: int, etype: str, says: str
) -> None:
    server.push(chat_error(status, "bad thing", etype), chat_stream("never sent"))
    with pytest.raises(ModelError) as caught:
        await retrying(server).complete(REQUEST, lambda _e: None)
    assert says in caught.value.message
    assert caught.value.status_code == status
    assert caught.value.reason is TerminalReason.MODEL_ERROR
    assert len(server.requests) == 1


async def test_a_prompt_too_long_for_the_context_is_context_exhausted(
    server: FakeChatServer,
) -> None:
    server.push(
        chat_error(
            400,
            "This model's maximum context length is 8192 tokens. However, you requested 9000",
            code="context_length_exceeded",
        )
    )
    with pytest.raises(ModelError) as caught:
        await model_for(server).complete(REQUEST, lambda _e: None)
    assert caught.value.reason is TerminalReason.CONTEXT_EXHAUSTED


async def test_an_error_body_that_is_not_openai_shaped_is_still_said(
    server: FakeChatServer,
) -> None:
    server.push(RawResponse(status=422, body=b'{"detail": "model field required"}'))
    with pytest.raises(ModelError, match="422 error: model field required"):
        await model_for(server).complete(REQUEST, lambda _e: None)


async def test_an_error_inside_the_stream_is_retryable(server: FakeChatServer) -> None:
    payloads = ['{"error": {"message": "upstream died", "code": 502}}']
    server.push(ChatSseResponse(payloads=payloads))
    with pytest.raises(RetryableModelError, match="upstream died"):
        await model_for(server).complete(REQUEST, lambda _e: None)


async def test_a_missing_usage_chunk_counts_nothing(server: FakeChatServer) -> None:
    # A server that never sends usage, but ends its streams with [DONE] (a stream that ends
    # without either is cut: tests/openai/test_openai_usage.py).
    server.push(chat_stream("ok", with_usage=False), chat_stream("again", with_usage=False))
    events: list[Event] = []
    model = model_for(server)
    response = await model.complete(REQUEST, events.append)
    assert response.message.text == "ok" and response.usage.total_tokens == 0
    assert response.usage_known is False
    await model.complete(REQUEST, events.append)
    notices = [e.message for e in events if isinstance(e, Notice)]
    assert notices == [NO_USAGE]  # said once


async def test_no_key_sends_no_authorization(server: FakeChatServer) -> None:
    server.push(chat_stream("ok"))
    await model_for(server, key=None).complete(REQUEST, lambda _e: None)
    assert "authorization" not in server.requests[0].headers


async def test_a_server_that_answers_with_one_json_completion_is_understood(
    server: FakeChatServer,
) -> None:
    whole = {
        "model": "fake-model",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "read_file", "arguments": {"path": "a.py"}},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 3},
    }
    server.push(RawResponse(status=200, body=json.dumps(whole).encode()))
    response = await model_for(server).complete(REQUEST, lambda _e: None)
    assert [(u.id, u.input) for u in response.message.tool_uses] == [("call_1", {"path": "a.py"})]
    assert response.usage.output_tokens == 3


async def test_llama_cpp_context_overflow_is_context_exhausted(server: FakeChatServer) -> None:
    body = {"error": {"code": 400, "message": "the request exceeds the available context size"}}
    body["error"]["type"] = "exceed_context_size_error"
    server.push(RawResponse(status=400, body=json.dumps(body).encode()))
    with pytest.raises(ModelError) as caught:
        await model_for(server).complete(REQUEST, lambda _e: None)
    assert caught.value.reason is TerminalReason.CONTEXT_EXHAUSTED


async def test_done_ends_the_response_even_if_the_server_keeps_the_connection_open(
    server: FakeChatServer,
) -> None:
    server.push(chat_stream("ok", hold_open=True))
    request = ModelRequest(system="", messages=[Message.user("hi")], idle_timeout_s=10)
    response = await model_for(server).complete(request, lambda _e: None)
    assert response.message.text == "ok"


async def test_no_server_at_the_address_fails_at_once_naming_the_setting() -> None:
    """A wrong OPENAI_BASE_URL (or a local server not started) was retried five times over
    16-28 s with no hint; a server that never answered is not there to come back."""
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    model = OpenAIChatModel("m", OpenAIEndpoint(base_url="http://127.0.0.1:9/v1", api_key=None))
    _open.append(model)
    with pytest.raises(ModelError, match="OPENAI_BASE_URL") as caught:
        await RetryingModel(model, RetryPolicy(max_attempts=5), sleep=sleep).complete(
            REQUEST, lambda _e: None
        )
    assert not isinstance(caught.value, RetryableModelError)
    assert "127.0.0.1:9" in caught.value.message and sleeps == []


async def test_a_server_that_answered_before_and_is_gone_is_retried() -> None:
    with FakeChatServer() as fake:
        fake.push(chat_stream("first"))
        model = model_for(fake)
        await model.complete(REQUEST, lambda _e: None)
    with pytest.raises(RetryableModelError, match="could not connect"):
        await model.complete(REQUEST, lambda _e: None)
