"""A fake OpenAI-compatible Chat Completions server on 127.0.0.1 that speaks the real protocol.

It serves scripted responses to `POST /v1/chat/completions` in order (SSE streams of
`data: {chunk}` events ending in `data: [DONE]`, JSON errors with any status and headers, streams
cut mid-way), records every request, and checks each request's tool calls are answered by
`role: "tool"` messages. Point agentcli at it with `OPENAI_BASE_URL=server.base_url`.

    with FakeChatServer() as server:
        server.push(chat_stream(tool_calls=[call("read_file", {"path": "a.py"})]))
        server.push(chat_stream("done"))
        ...
        assert server.pairing_problems() == []
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentcli.testing.fake_responses import HangResponse, RawResponse, RecordedRequest
from agentcli.testing.scripted_server import ScriptedHandler, ScriptedServer

_ids = itertools.count(1)
DEFAULT_USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}


@dataclass(frozen=True, slots=True)
class ChatSseResponse:
    """A 200 SSE stream of chunk payloads (`data: …` each). `cut_after` closes the connection
    after that many events, without the terminating chunk, as a network break would."""

    payloads: Sequence[str]
    cut_after: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    hold_open: bool = False
    """After the payloads, keep the connection open (until the server closes) instead of
    ending the response."""


ChatResponse = ChatSseResponse | RawResponse | HangResponse


def call(name: str, arguments: dict[str, Any] | str, id: str | None = None) -> dict[str, Any]:
    """A tool call to script: `arguments` as an object, or as the exact text the model sends."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": id or f"call_fake{next(_ids):04d}", "name": name, "arguments": text}


def _pieces(value: str, size: int) -> list[str]:
    return [value[start : start + size] for start in range(0, len(value), size)] or [""]


def chat_chunks(
    text: str = "",
    tool_calls: Sequence[dict[str, Any]] = (),
    *,
    finish_reason: str | None = None,
    usage: dict[str, Any] | None = None,
    with_usage: bool = True,
    model: str = "fake-model",
    piece: int = 7,
    cut_last_call: bool = False,
    reasoning: str = "",
    done: bool = True,
) -> list[str]:
    """The chunk payloads a server streams for `text` and `tool_calls`: text and each call's
    arguments in pieces of `piece` characters, the calls one after another by `index`, then
    the finish chunk, the usage chunk and `[DONE]`. `cut_last_call` sends only half of the
    last call's arguments (as a cut at the output limit does; pair it with "length")."""
    if finish_reason is None:
        finish_reason = "tool_calls" if tool_calls else "stop"
    stamp = {"id": f"chatcmpl-fake{next(_ids):04d}", "object": "chat.completion.chunk"}
    base = {**stamp, "created": 1_700_000_000, "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return json.dumps({**base, "choices": [choice]})

    payloads = [chunk({"role": "assistant", "content": ""})]
    if reasoning:
        payloads += [chunk({"reasoning_content": part}) for part in _pieces(reasoning, piece)]
    payloads += [chunk({"content": part}) for part in _pieces(text, piece) if part]
    for index, tool in enumerate(tool_calls):
        arguments = tool["arguments"]
        if cut_last_call and index == len(tool_calls) - 1:
            arguments = arguments[: max(1, len(arguments) // 2)]
        head = {"index": index, "id": tool["id"], "type": "function"}
        payloads.append(
            chunk({"tool_calls": [{**head, "function": {"name": tool["name"], "arguments": ""}}]})
        )
        for part in _pieces(arguments, piece):
            payloads.append(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
            )
    payloads.append(chunk({}, finish_reason))
    if with_usage:
        payloads.append(json.dumps({**base, "choices": [], "usage": usage or DEFAULT_USAGE}))
    if done:
        payloads.append("[DONE]")
    return payloads


def chat_stream(
    text: str = "", tool_calls: Sequence[dict[str, Any]] = (), **kwargs: Any
) -> ChatSseResponse:
    """A scripted streamed response (see `chat_chunks`); `cut_after` breaks the connection."""
    cut_after = kwargs.pop("cut_after", None)
    headers = kwargs.pop("headers", {})
    hold_open = kwargs.pop("hold_open", False)
    return ChatSseResponse(
        payloads=chat_chunks(text, tool_calls, **kwargs),
        cut_after=cut_after,
        headers=headers,
        hold_open=hold_open,
    )


def chat_error(
    status: int,
    message: str,
    etype: str = "invalid_request_error",
    code: str | None = None,
    **headers: str,
) -> RawResponse:
    """An error as OpenAI's API sends it: `{"error": {"message", "type", "code"}}`."""
    body = {"error": {"message": message, "type": etype, "param": None, "code": code}}
    return RawResponse(status=status, body=json.dumps(body).encode(), headers=dict(headers))


def chat_pairing_problems(messages: Sequence[Any]) -> list[str]:
    """Every assistant `tool_calls` entry answered, in order, by the `role: "tool"` messages
    right after it, and no tool message answering anything else."""
    problems: list[str] = []
    expected: list[str] = []
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            answered = message.get("tool_call_id")
            if not expected or expected[0] != answered:
                problems.append(f"message {index}: tool result {answered!r} answers no open call")
            else:
                expected.pop(0)
            continue
        if expected:
            problems.append(f"message {index}: calls {expected} were never answered")
        calls = message.get("tool_calls") if role == "assistant" else None
        expected = [c["id"] for c in calls] if isinstance(calls, list) else []
    return problems


class FakeChatServer(ScriptedServer["ChatResponse"]):
    """Serves scripted responses to POST /v1/chat/completions in order; records every request."""

    path_prefix = "/v1"

    def __init__(self) -> None:
        super().__init__(_make_handler(self))

    def _next(self, request: RecordedRequest) -> ChatResponse:
        def no_route() -> ChatResponse | None:
            if request.path == "/v1/chat/completions":
                return None
            return chat_error(404, f"no route {request.path}", "not_found_error")

        response = self._take(request, no_route)
        if response is None:
            return chat_error(400, "fake server: no scripted response left for this request")
        return response

    def pairing_problems(self) -> list[str]:
        return self._problems_of(chat_pairing_problems)


class _Handler(ScriptedHandler):
    owner: FakeChatServer
    request_id_header = "x-request-id"
    raw_request_id = False

    def send_stream(self, response: ChatSseResponse) -> None:
        self.start_stream(response.headers)
        for count, payload in enumerate(response.payloads):
            if response.cut_after is not None and count >= response.cut_after:
                return self.cut()
            self.send_frame(f"data: {payload}\n\n")
        if response.hold_open:
            return self.hold_until_closing()
        self.end_stream()


def _make_handler(owner: FakeChatServer) -> type[ScriptedHandler]:
    return type("Handler", (_Handler,), {"owner": owner})
