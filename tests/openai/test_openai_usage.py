"""Usage on an OpenAI-compatible server: a stream cut between its finish_reason and its usage
chunk is asked again (else the cost, and `--max-cost`, would be lost for the rest of the task),
a task whose cost turns unknown under `--max-cost` says so, and usage values that are not
counts (`1e999`, `NaN`) count as missing instead of crashing."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcli.events import Event, ModelRetrying
from agentcli.messages import Message
from agentcli.model import ModelRequest
from agentcli.model.openai_chat import OpenAIChatModel
from agentcli.model.retry import RetryingModel, RetryPolicy
from agentcli.provider import OpenAIEndpoint
from agentcli.testing.fake_openai import (
    ChatSseResponse,
    FakeChatServer,
    call,
    chat_chunks,
    chat_stream,
)
from tests.inprocess import decoded, run_in_process

REQUEST = ModelRequest(system="be brief", messages=[Message.user("hi")])
USAGE = {"prompt_tokens": 1000, "completion_tokens": 500}


@pytest.fixture
def server() -> Iterator[FakeChatServer]:
    with FakeChatServer() as fake:
        yield fake
        assert fake.pairing_problems() == []


@pytest.fixture
async def model(server: FakeChatServer) -> AsyncIterator[RetryingModel]:
    client = OpenAIChatModel("fake-model", OpenAIEndpoint(base_url=server.base_url, api_key="k"))

    async def no_sleep(_seconds: float) -> None:
        return None

    yield RetryingModel(client, RetryPolicy(max_attempts=3), sleep=no_sleep)
    await client.aclose()


def cut_before_usage(*args: Any, **kwargs: Any) -> ChatSseResponse:
    """A stream that ends cleanly right after its finish_reason: no usage chunk, no [DONE]."""
    payloads = chat_chunks(*args, **kwargs)
    assert payloads[-1] == "[DONE]" and '"usage"' in payloads[-2]
    return ChatSseResponse(payloads=payloads[:-2])


async def test_a_stream_that_ends_after_finish_reason_before_its_usage_is_asked_again(
    server: FakeChatServer, model: RetryingModel
) -> None:
    server.push(cut_before_usage("half"), chat_stream("whole", usage=USAGE))
    events: list[Event] = []
    response = await model.complete(REQUEST, events.append)
    assert response.message.text == "whole" and response.usage_known
    assert response.usage.output_tokens == 500
    assert [e.reason for e in events if isinstance(e, ModelRetrying)] == [
        "stream ended after finish_reason, before its usage"
    ]


async def test_finish_reason_and_usage_without_done_is_a_whole_response(
    server: FakeChatServer, model: RetryingModel
) -> None:
    server.push(chat_stream("ok", usage=USAGE, done=False))
    response = await model.complete(REQUEST, lambda _e: None)
    assert response.message.text == "ok" and response.usage.input_tokens == 1000
    assert len(server.requests) == 1


def agentcli(server: FakeChatServer, workspace: Path, *args: str) -> tuple[int, Any, str]:
    """`agentcli run --provider openai -m fake-model ARGS` at `server`, with a price for the
    model: exit code, JSON result, stderr."""
    config = Path(os.environ["AGENTCLI_CONFIG_DIR"]) / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[models."fake-model"]\ninput = 1.0\noutput = 2.0\n')
    done = decoded(
        run_in_process(
            *("run", "--provider", "openai", "-m", "fake-model", "--output-format", "json"),
            *args,
            cwd=workspace,
            env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test-key"},
        )
    )
    return done.returncode, json.loads(done.stdout), done.stderr


def test_a_cut_usage_chunk_neither_loses_the_cost_nor_runs_a_call_twice(
    server: FakeChatServer, workspace: Path
) -> None:
    append = call("shell", {"command": "echo ran >> count.txt"}, id="call_append")
    server.push(
        cut_before_usage(tool_calls=[append]),
        chat_stream(tool_calls=[append], usage=USAGE),
        chat_stream("Appended.", usage=USAGE),
    )
    code, data, err = agentcli(
        server, workspace, "append", "--permission-mode", "yolo", "--max-cost", "1"
    )
    assert code == 0, err
    assert (workspace / "count.txt").read_text() == "ran\n"
    assert len(server.requests) == 3
    # Known, so --max-cost held for the whole task.
    assert data["cost_usd"] == pytest.approx(2 * (1000 * 1.0 + 500 * 2.0) / 1e6)
    assert "no longer enforced" not in err


def test_max_cost_says_once_that_it_stops_when_the_cost_turns_unknown(
    server: FakeChatServer, workspace: Path
) -> None:
    # A server that sends no usage at all (but [DONE]): the cost cannot be known.
    server.push(
        chat_stream(tool_calls=[call("read_file", {"path": "a.txt"})], with_usage=False),
        chat_stream("Read it.", with_usage=False),
    )
    (workspace / "a.txt").write_text("a\n")
    code, data, err = agentcli(server, workspace, "read a.txt", "--max-cost", "1")
    assert code == 0 and data["cost_usd"] is None
    said = (
        "the task's cost is unknown from now on (the server reported no usage): --max-cost is "
        "no longer enforced for it"
    )
    assert err.count(said) == 1, err


def test_usage_that_is_not_a_count_is_missing_not_an_internal_error(
    server: FakeChatServer, workspace: Path
) -> None:
    payloads = chat_chunks("ok", usage={"prompt_tokens": 123456, "completion_tokens": 654321})
    bent = [p.replace("123456", "1e999").replace("654321", "NaN") for p in payloads]
    server.push(ChatSseResponse(payloads=bent))
    code, data, err = agentcli(server, workspace, "hi")
    assert code == 0, err
    assert "internal error" not in err and data["final_text"] == "ok"
    assert data["usage"]["input_tokens"] == 0 and data["usage"]["output_tokens"] == 0
