"""A fake Anthropic Messages API on 127.0.0.1 that speaks the real wire protocol.

It serves scripted responses in order (SSE streams with real framing, JSON errors, raw recorded
bodies, streams cut mid-way), records every request, and checks each request for tool_use /
tool_result pairing. Point the real SDK (or the real `agentcli` binary) at `server.base_url`.

    with FakeMessagesServer() as server:
        server.push(stream_message([text("hi")]))
        ...  # run agentcli with ANTHROPIC_BASE_URL=server.base_url
        assert server.pairing_problems() == []

Strict by default: every request is checked against the request rules of the model it names
(`agentcli.testing.strict`) and refused as the API would refuse it (400, or 404 for a model the
API does not serve), without using up a scripted response; thinking blocks it serves are signed
for the model and transcript. A server that refused anything fails the `with` block it was
used in, unless the test took the refusals (`take_refusals()`). `strict=False` serves anything.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agentcli.messages import pairing_problems
from agentcli.testing.strict import ModelRules, Refusal, check_request, rules_for, sign_thinking

_ids = itertools.count(1)


@dataclass(frozen=True, slots=True)
class SseResponse:
    """A 200 SSE stream. `cut_after` closes the connection after that many events, without the
    terminating chunk, as a network break would."""

    events: Sequence[tuple[str, str]]
    cut_after: int | None = None
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RawResponse:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HangResponse:
    """Accepts the request and sends nothing for `seconds` (for cancellation tests)."""

    seconds: float = 60.0


FakeResponse = SseResponse | RawResponse | HangResponse


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(name: str, input: dict[str, Any], id: str | None = None) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": id or f"toolu_fake{next(_ids):04d}",
        "name": name,
        "input": input,
    }


def thinking(value: str, signature: str = "sig-fake") -> dict[str, Any]:
    return {"type": "thinking", "thinking": value, "signature": signature}


def _event(kind: str, payload: dict[str, Any]) -> tuple[str, str]:
    return kind, json.dumps({"type": kind, **payload})


def _chunks(value: str, size: int = 7) -> Iterator[str]:
    for start in range(0, len(value), size):
        yield value[start : start + size]


def message_events(
    content: Iterable[dict[str, Any]],
    *,
    stop_reason: str | None = None,
    model: str = "claude-sonnet-4-5-20250929",
    usage: dict[str, int] | None = None,
    truncate_last_tool: bool = False,
) -> list[tuple[str, str]]:
    """The SSE events the API sends for a message with `content`.

    Text, thinking and tool input arrive in several deltas, as they do for real. With
    `truncate_last_tool`, the last tool_use's input stops half-way with no content_block_stop,
    as in a real `max_tokens` cut.
    """
    blocks = list(content)
    if stop_reason is None:
        stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    used = {
        "input_tokens": 100,
        "output_tokens": 1,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
        **(usage or {}),
    }
    start_usage = {**used, "output_tokens": 1}
    events = [
        _event(
            "message_start",
            {
                "message": {
                    "id": f"msg_fake{next(_ids):04d}",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": start_usage,
                }
            },
        ),
        ("ping", json.dumps({"type": "ping"})),
    ]
    for index, block in enumerate(blocks):
        events.extend(
            _block_events(index, block, cut=truncate_last_tool and index == len(blocks) - 1)
        )
    events.append(
        _event(
            "message_delta",
            {
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": used["output_tokens"] if usage else 20},
            },
        )
    )
    events.append(_event("message_stop", {}))
    return events


def _block_events(index: int, block: dict[str, Any], *, cut: bool) -> list[tuple[str, str]]:
    kind = block["type"]
    events: list[tuple[str, str]] = []
    if kind == "text":
        events.append(
            _event(
                "content_block_start",
                {"index": index, "content_block": {"type": "text", "text": ""}},
            )
        )
        for part in _chunks(block["text"]):
            events.append(
                _event(
                    "content_block_delta",
                    {"index": index, "delta": {"type": "text_delta", "text": part}},
                )
            )
    elif kind == "thinking":
        events.append(
            _event(
                "content_block_start",
                {
                    "index": index,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                },
            )
        )
        for part in _chunks(block["thinking"]):
            events.append(
                _event(
                    "content_block_delta",
                    {"index": index, "delta": {"type": "thinking_delta", "thinking": part}},
                )
            )
        events.append(
            _event(
                "content_block_delta",
                {
                    "index": index,
                    "delta": {"type": "signature_delta", "signature": block["signature"]},
                },
            )
        )
    elif kind == "tool_use":
        events.append(
            _event(
                "content_block_start",
                {
                    "index": index,
                    "content_block": {
                        "type": "tool_use",
                        "id": block["id"],
                        "name": block["name"],
                        "input": {},
                    },
                },
            )
        )
        payload = json.dumps(block["input"])
        if cut:
            payload = payload[: max(1, len(payload) // 2)]
        for part in _chunks(payload):
            events.append(
                _event(
                    "content_block_delta",
                    {"index": index, "delta": {"type": "input_json_delta", "partial_json": part}},
                )
            )
        if cut:
            return events
    else:
        events.append(_event("content_block_start", {"index": index, "content_block": block}))
    events.append(_event("content_block_stop", {"index": index}))
    return events


def stream_message(content: Iterable[dict[str, Any]], **kwargs: Any) -> SseResponse:
    return SseResponse(events=message_events(content, **kwargs))


def error_response(status: int, etype: str, message: str, **headers: str) -> RawResponse:
    body = json.dumps(
        {
            "type": "error",
            "error": {"type": etype, "message": message},
            "request_id": f"req_fake{next(_ids):04d}",
        }
    )
    return RawResponse(status=status, body=body.encode(), headers=dict(headers))


def raw_sse(body: str) -> RawResponse:
    """Serve a recorded SSE body byte for byte."""
    return RawResponse(status=200, body=body.encode(), content_type="text/event-stream")


class FakeMessagesServer:
    """Serves scripted responses to POST /v1/messages in order; records every request.

    `strict` checks each request against its model's rules first; `models` adds (or changes)
    the rules of models, e.g. one a test configures in agentcli's `[models]`."""

    def __init__(self, *, strict: bool = True, models: dict[str, ModelRules] | None = None) -> None:
        self._script: list[FakeResponse] = []
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self.unscripted_requests = 0
        self.strict = strict
        self.models = dict(models or {})
        self.refusals: list[tuple[RecordedRequest, Refusal]] = []
        """Requests strict mode refused, with why."""
        server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def push(self, *responses: FakeResponse) -> None:
        with self._lock:
            self._script.extend(responses)

    def _next(self, request: RecordedRequest) -> FakeResponse:
        refusal = check_request(request.body, self.models) if self.strict else None
        with self._lock:
            self.requests.append(request)
            if refusal is not None:
                self.refusals.append((request, refusal))
                return error_response(refusal.status, refusal.type, refusal.message)
            if self._script:
                return self._signed(self._script.pop(0), request)
            self.unscripted_requests += 1
        return error_response(
            400, "invalid_request_error", "fake server: no scripted response left for this request"
        )

    def _signed(self, response: FakeResponse, request: RecordedRequest) -> FakeResponse:
        found = rules_for(request.body.get("model"), self.models)
        if not self.strict or found is None or not isinstance(response, SseResponse):
            return response
        events = sign_thinking(response.events, request.body, found[0])
        return SseResponse(
            events=events,
            cut_after=response.cut_after,
            delay_s=response.delay_s,
            headers=response.headers,
        )

    def take_refusals(self) -> list[tuple[RecordedRequest, Refusal]]:
        """The refused requests so far (a test that expects refusals takes them, so leaving
        the server does not fail)."""
        with self._lock:
            taken, self.refusals = self.refusals, []
        return taken

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    def pairing_problems(self) -> list[str]:
        """tool_use/tool_result pairing problems over every recorded request."""
        return [
            f"request {n}: {problem}"
            for n, request in enumerate(self.requests)
            for problem in pairing_problems(request.body.get("messages", []))
        ]

    def __enter__(self) -> FakeMessagesServer:
        self._thread.start()
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        if exc_type is None and self.refusals:
            raise AssertionError(
                "the fake Messages API (strict) refused requests: "
                + "; ".join(f"{r.status} {r.message}" for _request, r in self.refusals)
            )


class _Handler(BaseHTTPRequestHandler):
    owner: FakeMessagesServer

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        response = self.owner._next(self._record())
        if isinstance(response, HangResponse):
            time.sleep(response.seconds)
            self.close_connection = True
        elif isinstance(response, RawResponse):
            self._send_raw(response)
        else:
            self._send_sse(response)

    def _record(self) -> RecordedRequest:
        length = int(self.headers.get("content-length", "0"))
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        headers = {k.lower(): v for k, v in self.headers.items()}
        return RecordedRequest(method="POST", path=self.path, headers=headers, body=body)

    def _send_raw(self, response: RawResponse) -> None:
        self.send_response(response.status)
        self.send_header("content-type", response.content_type)
        self.send_header("content-length", str(len(response.body)))
        self.send_header("request-id", f"req_fake{next(_ids):04d}")
        for key, value in response.headers.items():
            self.send_header(key.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(response.body)

    def _send_sse(self, response: SseResponse) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", f"req_fake{next(_ids):04d}")
        for key, value in response.headers.items():
            self.send_header(key, value)
        self.end_headers()
        for count, (kind, data) in enumerate(response.events):
            if response.cut_after is not None and count >= response.cut_after:
                self.close_connection = True
                self.wfile.flush()
                return  # no terminating chunk: the client sees a broken stream
            frame = f"event: {kind}\ndata: {data}\n\n".encode()
            self.wfile.write(f"{len(frame):x}\r\n".encode() + frame + b"\r\n")
            self.wfile.flush()
            if response.delay_s:
                time.sleep(response.delay_s)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def _make_handler(owner: FakeMessagesServer) -> type[BaseHTTPRequestHandler]:
    return type("Handler", (_Handler,), {"owner": owner})
