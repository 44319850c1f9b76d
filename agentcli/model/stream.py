"""Server-sent events of the Messages API, turned into one complete assistant message.

Pure code with no SDK import: the adapter feeds it the stream's lines, the tests feed it the
recorded bodies. Blocks are built from the raw JSON objects the API sent, so every field the API
includes (signatures, citations, ids, fields added in the future) survives into the history.

A response counts only if `message_stop` arrived. Anything else is an incomplete response, and the
caller must discard it whole.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from agentcli.errors import IncompleteResponseError, ModelError, RetryableModelError
from agentcli.events import EventSink, TextDelta, ThinkingDelta
from agentcli.messages import (
    ContentBlock,
    JsonObject,
    Message,
    OpaqueBlock,
    ToolUseBlock,
    block_from_wire,
)
from agentcli.model import ModelResponse
from agentcli.usage import Usage, token_count

RETRYABLE_STREAM_ERRORS = frozenset({"overloaded_error", "api_error", "rate_limit_error"})


@dataclass(slots=True)
class ServerSentEvent:
    event: str | None
    data: str


@dataclass(slots=True)
class SseParser:
    """Incremental SSE framing (WHATWG rules for `event:` / `data:` / blank-line dispatch)."""

    _event: str | None = None
    _data: list[str] = field(default_factory=list)

    def feed_line(self, line: str) -> ServerSentEvent | None:
        line = line.rstrip("\r\n")
        if not line:
            if self._event is None and not self._data:
                return None
            sse = ServerSentEvent(event=self._event, data="\n".join(self._data))
            self._event, self._data = None, []
            return sse
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        return None

    def flush(self) -> ServerSentEvent | None:
        return self.feed_line("")


def parse_sse_text(body: str) -> list[ServerSentEvent]:
    parser = SseParser()
    events = [e for line in body.splitlines() if (e := parser.feed_line(line)) is not None]
    last = parser.flush()
    return [*events, last] if last is not None else events


@dataclass(slots=True)
class _OpenBlock:
    raw: JsonObject
    partial_json: list[str] = field(default_factory=list)
    has_json_delta: bool = False
    stopped: bool = False


@dataclass(slots=True)
class StreamAccumulator:
    """Applies stream events, in order, to build the assistant message."""

    on_event: EventSink
    message: JsonObject | None = None
    blocks: dict[int, _OpenBlock] = field(default_factory=dict)
    stop_reason: str | None = None
    usage: JsonObject = field(default_factory=dict)
    finished: bool = False

    def feed_sse(self, sse: ServerSentEvent) -> None:
        if sse.event == "ping" or not sse.data:
            return
        try:
            data = json.loads(sse.data)
        except json.JSONDecodeError as exc:
            raise IncompleteResponseError(f"malformed stream event data: {exc}") from exc
        if sse.event == "error" or data.get("type") == "error":
            raise _stream_error(data)
        self.feed(data)

    def feed(self, event: JsonObject) -> None:
        kind = event.get("type")
        if kind == "message_start":
            self.message = copy.deepcopy(event["message"])
            self.usage.update(self.message.get("usage") or {})
        elif kind == "content_block_start":
            self.blocks[int(event["index"])] = _OpenBlock(raw=copy.deepcopy(event["content_block"]))
        elif kind == "content_block_delta":
            self._apply_delta(int(event["index"]), event["delta"])
        elif kind == "content_block_stop":
            self._stop_block(int(event["index"]))
        elif kind == "message_delta":
            delta = event.get("delta") or {}
            if "stop_reason" in delta:
                self.stop_reason = delta["stop_reason"]
            if self.message is not None:
                for key, value in delta.items():
                    self.message[key] = value
            # A count that is not one (null, NaN, …) leaves the one message_start gave.
            counts = (event.get("usage") or {}).items()
            self.usage.update({k: v for k, v in counts if token_count(v) is not None})
            iterations = (event.get("usage") or {}).get("iterations")
            if isinstance(iterations, list):
                self.usage["iterations"] = iterations
        elif kind == "message_stop":
            self.finished = True
        # Unknown event types are ignored, as the API documentation asks clients to do.

    def _apply_delta(self, index: int, delta: JsonObject) -> None:
        block = self.blocks.get(index)
        if block is None:
            raise IncompleteResponseError(f"delta for content block {index} that never started")
        dtype = delta.get("type")
        raw = block.raw
        if dtype == "text_delta":
            raw["text"] = raw.get("text", "") + delta.get("text", "")
            self.on_event(TextDelta(text=delta.get("text", "")))
        elif dtype == "thinking_delta":
            raw["thinking"] = raw.get("thinking", "") + delta.get("thinking", "")
            self.on_event(ThinkingDelta(text=delta.get("thinking", "")))
        elif dtype == "signature_delta":
            raw["signature"] = raw.get("signature", "") + delta.get("signature", "")
        elif dtype == "input_json_delta":
            block.has_json_delta = True
            block.partial_json.append(delta.get("partial_json", ""))
        elif dtype == "citations_delta":
            raw.setdefault("citations", []).append(delta.get("citation"))
        elif dtype == "compaction_delta":
            # The API's own summary (and its opaque metadata), whole in one delta: set, as the
            # SDK's accumulator sets them, never appended to the block's null.
            for key in ("content", "encrypted_content"):
                if key in delta:
                    raw[key] = delta[key]
        else:
            _apply_unknown_delta(raw, delta)

    def _stop_block(self, index: int) -> None:
        block = self.blocks.get(index)
        if block is None:
            raise IncompleteResponseError(f"stop for content block {index} that never started")
        if block.has_json_delta:
            text = "".join(block.partial_json)
            try:
                block.raw["input"] = json.loads(text) if text.strip() else {}
            except json.JSONDecodeError as exc:
                raise IncompleteResponseError(f"tool input JSON did not parse: {exc}") from exc
        block.stopped = True

    def result(self) -> ModelResponse:
        """The complete response. Raises IncompleteResponseError if the stream was cut."""
        if self.message is None:
            raise IncompleteResponseError("stream ended before message_start")
        if not self.finished:
            raise IncompleteResponseError("stream ended before message_stop")
        if self.stop_reason is None:
            raise IncompleteResponseError("response has no stop_reason")
        content = [self._finish_block(self.blocks[i]) for i in sorted(self.blocks)]
        _check_tool_calls(content)
        return ModelResponse(
            message=Message(role="assistant", content=tuple(content)),
            stop_reason=self.stop_reason,
            usage=usage_from_wire(self.usage),
            model=str(self.message.get("model", "")),
            request_id=None,
        )

    def _finish_block(self, block: _OpenBlock) -> ContentBlock:
        raw = block.raw
        if block.stopped:
            return block_from_wire(raw)
        # The block never received content_block_stop: its content is partial (this happens
        # with stop_reason max_tokens). A tool call in that state is never executed.
        if raw.get("type") == "tool_use":
            return ToolUseBlock(
                id=str(raw.get("id", "")),
                name=str(raw.get("name", "")),
                input={},
                raw=None,
                complete=False,
            )
        return block_from_wire(raw)


def _check_tool_calls(content: list[ContentBlock]) -> None:
    """A tool call that cannot be answered makes the response unusable: the next request must
    carry exactly one tool_result per tool_use id, and the journal records calls by id."""
    seen: set[str] = set()
    for block in content:
        if isinstance(block, OpaqueBlock) and block.type == "tool_use":
            raise IncompleteResponseError("a tool_use block has no id or name")
        if isinstance(block, ToolUseBlock):
            if block.id in seen:
                raise IncompleteResponseError(f"two tool_use blocks share the id {block.id!r}")
            seen.add(block.id)


def _apply_unknown_delta(raw: JsonObject, delta: JsonObject) -> None:
    """Best effort for delta types this code does not know: `{"type": "x_delta", "x": "..."}`
    appends to the string field `x` of the block. Anything else is left alone."""
    for key, value in delta.items():
        if key != "type" and isinstance(value, str) and isinstance(raw.get(key, ""), str):
            raw[key] = raw.get(key, "") + value


def _stream_error(data: JsonObject) -> Exception:
    error = data.get("error") or {}
    etype = str(error.get("type", "error"))
    message = str(error.get("message", "stream error"))
    if etype in RETRYABLE_STREAM_ERRORS:
        return RetryableModelError(f"{etype} during stream: {message}")
    return ModelError(f"{etype}: {message}", error_type=etype)


def usage_from_wire(raw: dict[str, Any]) -> Usage:
    """The usage a response reports, with the API's own compaction counted in: its
    `iterations` of type `compaction` are billed but left out of the top-level counts."""

    def counts(source: Any) -> Usage:
        def num(key: str) -> int:
            return token_count(source.get(key)) or 0

        return Usage(
            input_tokens=num("input_tokens"),
            output_tokens=num("output_tokens"),
            cache_read_input_tokens=num("cache_read_input_tokens"),
            cache_creation_input_tokens=num("cache_creation_input_tokens"),
        )

    usage = counts(raw)
    iterations = raw.get("iterations")
    for item in iterations if isinstance(iterations, list) else []:
        if isinstance(item, dict) and item.get("type") == "compaction":
            usage = usage + counts(item)
    return usage


def accumulate(events: Iterable[ServerSentEvent], on_event: EventSink) -> ModelResponse:
    """Run a whole recorded stream through an accumulator (for tests and replay)."""
    acc = StreamAccumulator(on_event=on_event)
    for sse in events:
        acc.feed_sse(sse)
    return acc.result()
