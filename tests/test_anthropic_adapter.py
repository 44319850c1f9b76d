"""The contract of the Anthropic transports, run against the local fake Messages API server:
every test runs on the thin transport (`model.http`, the default) and on the SDK transport
(`model.anthropic`) alike, so the two cannot drift."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
import yaml

from agentcli.errors import ModelError, RetryableModelError
from agentcli.events import Event, ModelRetrying
from agentcli.messages import Message, pairing_problems
from agentcli.model import ModelClient, ModelRequest, ToolSpec
from agentcli.model.anthropic import AnthropicModel
from agentcli.model.http import HttpAnthropicModel
from agentcli.model.retry import RetryingModel, RetryPolicy
from agentcli.terminal_reason import TerminalReason
from agentcli.testing.fake_api import (
    FakeMessagesServer,
    HangResponse,
    RawResponse,
    SseResponse,
    error_response,
    message_events,
    raw_sse,
    stream_message,
    text,
    tool_use,
)

REQUEST = ModelRequest(
    system="be brief",
    messages=[Message.user("hi")],
    tools=[ToolSpec(name="read_file", description="d", input_schema={"type": "object"})],
)


@pytest.fixture
def server() -> Iterator[FakeMessagesServer]:
    with FakeMessagesServer() as fake:
        yield fake


TRANSPORTS: dict[str, type[HttpAnthropicModel] | type[AnthropicModel]] = {
    "http": HttpAnthropicModel,
    "sdk": AnthropicModel,
}
Connect = Callable[..., ModelClient]
"""`connect(server_or_base_url, **kwargs)`: a client of the transport under test."""


@pytest.fixture(params=sorted(TRANSPORTS))
async def connect(request: pytest.FixtureRequest) -> AsyncIterator[Connect]:
    made: list[HttpAnthropicModel | AnthropicModel] = []

    def make(target: FakeMessagesServer | str, **kwargs: str) -> ModelClient:
        base_url = target if isinstance(target, str) else target.base_url
        kwargs.setdefault("api_key", "test")
        model = TRANSPORTS[request.param]("claude-sonnet-4-5", base_url=base_url, **kwargs)
        made.append(model)
        return model

    yield make
    for model in made:
        await model.aclose()


async def no_sleep(_seconds: float) -> None:
    return None


def retrying(model: ModelClient, attempts: int = 5) -> RetryingModel:
    return RetryingModel(model, RetryPolicy(max_attempts=attempts), sleep=no_sleep)


def recorded_error(path: Path) -> RawResponse:
    data = yaml.safe_load(path.read_text())
    response = data["interactions"][0]["response"]
    body = response.get("parsed_body") or json.loads(response["body"]["string"])
    return RawResponse(status=int(response["status"]["code"]), body=json.dumps(body).encode())


async def test_recorded_stream_served_raw_parses(
    server: FakeMessagesServer, connect: Connect, recordings: Path
) -> None:
    server.push(raw_sse((recordings / "01_sdk_stream_tool_use.sse").read_text()))
    response = await connect(server).complete(REQUEST, lambda _e: None)
    assert response.stop_reason == "tool_use"
    assert response.message.tool_uses[0].input == {"location": "Paris"}
    assert response.request_id is not None


async def test_request_carries_cache_breakpoints_without_touching_history(
    server: FakeMessagesServer,
    connect: Connect,
) -> None:
    server.push(stream_message([text("ok")]))
    history = [Message.user("hi")]
    await connect(server).complete(
        ModelRequest(system="sys", messages=history, tools=REQUEST.tools), lambda _e: None
    )
    body = server.requests[0].body
    assert body["stream"] is True
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in history[0].to_wire()["content"][0]


async def test_thinking_and_redacted_blocks_go_back_exactly_as_received(
    server: FakeMessagesServer, connect: Connect, recordings: Path
) -> None:
    body = yaml.safe_load((recordings / "10_pai_stream_redacted_thinking.yaml").read_text())
    server.push(raw_sse(body["interactions"][0]["response"]["body"]["string"]))
    server.push(stream_message([text("again")]))
    model = connect(server)
    first = await model.complete(REQUEST, lambda _e: None)
    history = [Message.user("hi"), first.message, Message.user("more")]
    await model.complete(ModelRequest(system="s", messages=history), lambda _e: None)
    sent = server.requests[1].body["messages"][1]["content"]
    assert sent == first.message.to_wire()["content"]
    assert [b["type"] for b in sent].count("redacted_thinking") == 2


async def test_429_twice_then_stream_from_real_recording(
    server: FakeMessagesServer, connect: Connect, recordings: Path
) -> None:
    snapshot = json.loads((recordings / "04_sdk_429_rate_limit_x2_then_stream.json").read_text())
    for entry in snapshot:
        response = entry["response"]
        if response["status_code"] == 200:
            server.push(raw_sse(response["body"]))
        else:
            server.push(
                RawResponse(
                    status=response["status_code"], body=json.dumps(response["body"]).encode()
                )
            )
    seen: list[Event] = []
    result = await retrying(connect(server)).complete(REQUEST, seen.append)
    assert result.stop_reason in ("end_turn", "tool_use")
    assert len(server.requests) == 3
    retries = [e for e in seen if isinstance(e, ModelRetrying)]
    assert [r.attempt for r in retries] == [1, 2]
    assert "rate_limit_error" in retries[0].reason


@pytest.mark.parametrize(
    ("recording", "status", "needle"),
    [
        ("20_dd_401_authentication_error.yaml", 401, "ANTHROPIC_API_KEY"),
        ("14_pai_404_not_found_model.yaml", 404, "model name"),
        ("13_pai_400_invalid_request_effort.yaml", 400, "effort level"),
        ("19_dd_400_invalid_request.yaml", 400, "expected shape"),
    ],
)
async def test_client_errors_are_not_retried_and_say_what_to_fix(
    server: FakeMessagesServer,
    connect: Connect,
    recordings: Path,
    recording: str,
    status: int,
    needle: str,
) -> None:
    server.push(recorded_error(recordings / recording))
    with pytest.raises(ModelError) as info:
        await retrying(connect(server)).complete(REQUEST, lambda _e: None)
    assert info.value.status_code == status
    assert needle in info.value.message
    assert info.value.reason is TerminalReason.MODEL_ERROR
    assert len(server.requests) == 1


async def test_529_and_broken_stream_are_retried_then_succeed(
    server: FakeMessagesServer, connect: Connect
) -> None:
    server.push(
        error_response(529, "overloaded_error", "Overloaded"),
        SseResponse(events=message_events([text("partial answer that is cut")]), cut_after=5),
        stream_message([text("whole answer")]),
    )
    result = await retrying(connect(server)).complete(REQUEST, lambda _e: None)
    assert result.message.text == "whole answer"
    assert len(server.requests) == 3


async def test_stream_that_ends_without_message_stop_is_retried(
    server: FakeMessagesServer, connect: Connect
) -> None:
    events = [
        e for e in message_events([tool_use("read_file", {"path": "x"})]) if e[0] != "message_stop"
    ]
    body = "".join(f"event: {k}\ndata: {d}\n\n" for k, d in events)
    server.push(raw_sse(body), stream_message([text("done")]))
    result = await retrying(connect(server)).complete(REQUEST, lambda _e: None)
    assert result.message.tool_uses == []  # nothing from the cut response survives
    assert result.message.text == "done"


async def test_usage_that_is_not_a_count_counts_as_missing_not_as_a_crash(
    server: FakeMessagesServer, connect: Connect
) -> None:
    # `1e999` is JSON for a float too large (Python reads it as inf), `NaN` JSON's extension.
    events = message_events([text("ok")], usage={"input_tokens": 12345, "output_tokens": 777})
    bent = {"12345": "1e999", "777": "NaN"}
    for old, new in bent.items():
        events = [(kind, data.replace(old, new)) for kind, data in events]
    body = "".join(f"event: {k}\ndata: {d}\n\n" for k, d in events)
    assert "1e999" in body and "NaN" in body
    server.push(raw_sse(body))
    result = await connect(server).complete(REQUEST, lambda _e: None)
    assert result.message.text == "ok"
    # input: missing; output: message_start's count, which the delta's NaN does not replace.
    assert (result.usage.input_tokens, result.usage.output_tokens) == (0, 1)


async def test_retries_are_bounded(server: FakeMessagesServer, connect: Connect) -> None:
    server.push(*[error_response(500, "api_error", "boom") for _ in range(3)])
    with pytest.raises(ModelError, match="gave up after 3 attempts"):
        await retrying(connect(server), attempts=3).complete(REQUEST, lambda _e: None)


async def test_prompt_too_long_means_context_exhausted(
    server: FakeMessagesServer, connect: Connect
) -> None:
    server.push(
        error_response(
            400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"
        )
    )
    with pytest.raises(ModelError) as info:
        await connect(server).complete(REQUEST, lambda _e: None)
    assert info.value.reason is TerminalReason.CONTEXT_EXHAUSTED


async def test_connection_refused_is_retryable(connect: Connect) -> None:
    with pytest.raises(RetryableModelError, match="could not connect to the model API"):
        await connect("http://127.0.0.1:9").complete(REQUEST, lambda _e: None)


def test_pairing_checker_flags_the_request_the_real_api_rejected(recordings: Path) -> None:
    snapshot = json.loads(
        (recordings / "05_sdk_tool_use_then_400_orphan_tool_result.json").read_text()
    )
    rejected = snapshot[1]
    assert rejected["response"]["status_code"] == 400
    assert pairing_problems(rejected["request"]["body"]["messages"])
    first = snapshot[0]["request"]["body"]["messages"]
    assert pairing_problems(first) == []


@pytest.mark.parametrize("blocks", [[], [text("")]])
async def test_an_empty_answer_is_kept_in_history_but_never_sent_back_empty(
    server: FakeMessagesServer, connect: Connect, blocks: list[dict[str, object]]
) -> None:
    """The API sometimes answers with no content (or one empty text block) and then rejects
    any request whose history holds such a message ("all messages must have non-empty
    content", "text content blocks must be non-empty")."""
    server.push(stream_message(blocks))
    server.push(stream_message([text("ok")]))
    model = connect(server)
    first = await model.complete(REQUEST, lambda _e: None)
    history = [Message.user("hi"), first.message, Message.user("and now?")]
    await model.complete(ModelRequest(system="s", messages=history), lambda _e: None)
    sent = server.requests[1].body["messages"]
    assert all(message["content"] for message in sent)
    assert all(block.get("text") != "" for message in sent for block in message["content"])
    assert [m["role"] for m in sent] == ["user", "user"]
    assert history[1] is first.message  # the history itself is not rewritten


IDLE_S = 1.0
"""The idle timeout of the stall tests: the fake server stalls until it closes, so this is how
long each stalled attempt lasts, not a bound the test checks."""


def watching(model: ModelClient, waits: list[float], **policy: float) -> RetryingModel:
    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    return RetryingModel(model, RetryPolicy(idle_timeout_s=IDLE_S, **policy), sleep=sleep)


async def test_a_stream_that_stalls_after_the_headers_is_abandoned_and_retried(
    server: FakeMessagesServer,
    connect: Connect,
) -> None:
    server.push(
        SseResponse(events=message_events([text("never finished")]), stall_after=3),
        stream_message([text("whole answer")]),
    )
    seen: list[Event] = []
    result = await watching(connect(server), []).complete(REQUEST, seen.append)
    assert result.message.text == "whole answer"
    (retry,) = [e for e in seen if isinstance(e, ModelRetrying)]
    assert retry.reason == f"the response stream stalled: nothing received for {IDLE_S:g} s"


async def test_a_server_that_never_answers_is_abandoned_and_retried(
    server: FakeMessagesServer,
    connect: Connect,
) -> None:
    server.push(HangResponse(seconds=120), stream_message([text("answer")]))
    seen: list[Event] = []
    result = await watching(connect(server), []).complete(REQUEST, seen.append)
    assert result.message.text == "answer"
    (retry,) = [e for e in seen if isinstance(e, ModelRetrying)]
    assert retry.reason == f"no response: nothing received for {IDLE_S:g} s"


async def test_a_stream_that_keeps_stalling_ends_in_a_clear_error(
    server: FakeMessagesServer,
    connect: Connect,
) -> None:
    server.push(*[SseResponse(events=message_events([text("x")]), stall_after=2) for _ in range(2)])
    with pytest.raises(ModelError, match=r"stream stalled.*gave up after 2 attempts"):
        await watching(connect(server), [], max_attempts=2).complete(REQUEST, lambda _e: None)


async def test_a_slow_stream_that_keeps_sending_is_not_a_stall(
    server: FakeMessagesServer,
    connect: Connect,
) -> None:
    """The timeout is on silence, not on the whole answer: a stream that takes longer than the
    idle timeout in all, but never pauses that long, completes."""
    # One delta for the text: the fewest events whose pauses (each a quarter of the idle
    # timeout) still add up to more than it.
    events = message_events([text("slow but steady")], delta_chars=len("slow but steady"))
    server.push(SseResponse(events=events, delay_s=IDLE_S / 4))
    assert len(events) * IDLE_S / 4 > IDLE_S
    seen: list[Event] = []
    result = await watching(connect(server), []).complete(REQUEST, seen.append)
    assert result.message.text == "slow but steady"
    assert not [e for e in seen if isinstance(e, ModelRetrying)]


@pytest.mark.parametrize("asked", ["45", "120", "600"])
async def test_retry_after_is_honoured_as_asked(
    server: FakeMessagesServer, connect: Connect, asked: str
) -> None:
    server.push(
        error_response(429, "rate_limit_error", "slow down", retry_after=asked),
        stream_message([text("ok")]),
    )
    waits: list[float] = []
    seen: list[Event] = []
    result = await watching(connect(server), waits).complete(REQUEST, seen.append)
    assert result.message.text == "ok"
    assert waits == [float(asked)]
    (retry,) = [e for e in seen if isinstance(e, ModelRetrying)]
    assert retry.delay_s == float(asked)


async def test_retry_after_beyond_the_ceiling_ends_the_task_at_once(
    server: FakeMessagesServer,
    connect: Connect,
) -> None:
    server.push(error_response(429, "rate_limit_error", "slow down", retry_after="3600"))
    waits: list[float] = []
    with pytest.raises(ModelError, match=r"asks to wait 3600 s.*max_retry_wait_s = 900 s"):
        await watching(connect(server), waits, max_retry_after_s=900).complete(
            REQUEST, lambda _e: None
        )
    assert waits == [] and len(server.requests) == 1
