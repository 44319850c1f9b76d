"""What the fake Messages API serves: scripted responses (SSE streams with real framing, JSON
errors, raw recorded bodies, streams cut or stalled mid-way, hangs) and the content blocks to
build them from. `agentcli.testing.fake_api` serves them and re-exports every name."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

_ids = itertools.count(1)


def next_id() -> int:
    """A number for the next fake id (`toolu_fake0001`, `msg_fake0002`, `req_fake0003`)."""
    return next(_ids)


@dataclass(frozen=True, slots=True)
class SseResponse:
    """A 200 SSE stream. `cut_after` closes the connection after that many events, without the
    terminating chunk, as a network break would."""

    events: Sequence[tuple[str, str]]
    cut_after: int | None = None
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    stall_after: int | None = None
    """After that many events, send nothing more (the connection stays open) until the server
    closes: a stream that stalled."""


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


def compaction(summary: str | None) -> dict[str, Any]:
    """The block the API's own compaction starts a response with (None: it failed)."""
    return {"type": "compaction", "content": summary}


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
    usage: dict[str, Any] | None = None,
    truncate_last_tool: bool = False,
    delta_chars: int = 7,
) -> list[tuple[str, str]]:
    """The SSE events the API sends for a message with `content`.

    Text, thinking and tool input arrive in several deltas (of `delta_chars` characters), as
    they do for real; a test of a long answer sends it in fewer, larger ones. With
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
    start_usage = {k: v for k, v in used.items() if k != "iterations"} | {"output_tokens": 1}
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
            _block_events(
                index, block, cut=truncate_last_tool and index == len(blocks) - 1, size=delta_chars
            )
        )
    events.append(
        _event(
            "message_delta",
            {
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {
                    "output_tokens": used["output_tokens"] if usage else 20,
                    # The API's own compaction reports its usage per iteration, at the end.
                    **({"iterations": used["iterations"]} if "iterations" in used else {}),
                },
            },
        )
    )
    events.append(_event("message_stop", {}))
    return events


def _block_events(
    index: int, block: dict[str, Any], *, cut: bool, size: int
) -> list[tuple[str, str]]:
    kind = block["type"]
    events: list[tuple[str, str]] = []
    if kind == "text":
        events.append(
            _event(
                "content_block_start",
                {"index": index, "content_block": {"type": "text", "text": ""}},
            )
        )
        for part in _chunks(block["text"], size):
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
        for part in _chunks(block["thinking"], size):
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
        for part in _chunks(payload, size):
            events.append(
                _event(
                    "content_block_delta",
                    {"index": index, "delta": {"type": "input_json_delta", "partial_json": part}},
                )
            )
        if cut:
            return events
    elif kind == "compaction":
        # The API's own compaction: the block starts empty, its summary comes in one delta.
        start = {"type": "compaction", "content": None}
        events.append(_event("content_block_start", {"index": index, "content_block": start}))
        delta = {"type": "compaction_delta", "content": block.get("content")}
        if "encrypted_content" in block:
            delta["encrypted_content"] = block["encrypted_content"]
        events.append(_event("content_block_delta", {"index": index, "delta": delta}))
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
