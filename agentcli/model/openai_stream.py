"""A streamed Chat Completions response, turned into one complete assistant message.

The server sends `data: {chunk}` events (SSE framing: `model.stream.SseParser`) and ends with
`data: [DONE]`. Text arrives as `choices[0].delta.content`; each tool call as deltas keyed by
`index`: the first names the call (`id`, `function.name`), the rest append pieces of
`function.arguments`, and several calls may be open in one response. The last chunk has
`finish_reason`; with `stream_options.include_usage`, a chunk without choices carries `usage`.

The message is built with agentcli's own blocks (text, tool_use), so the loop and the journal
never see another shape. The guarantees are the Anthropic adapter's:

- a response counts only once its `finish_reason` arrived; a stream cut before is incomplete
  (IncompleteResponseError), and the caller discards it whole and asks again. A stream that
  ends without `[DONE]` counts only if its usage chunk came too (`end_without_done`): the
  usage is asked for and comes after `finish_reason`, so a stream cut between the two would
  otherwise leave the cost unknown (and `--max-cost` unenforced) for the rest of the task;
- at `finish_reason: "length"` the last tool call may be cut anywhere, so it is never run
  (`complete=False`), nor is any call whose arguments are not whole JSON;
- a call whose arguments the model got wrong (not JSON, not an object) is answered with an
  `invalid_arguments` error the model can act on, never guessed at;
- a call id that is missing, repeated, or already used earlier in the conversation (some local
  servers number calls `call_0`, `call_1`, … in every response) gets a fresh one: the server
  keeps no state, and the journal records calls by id.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from agentcli.errors import IncompleteResponseError, ModelError, RetryableModelError
from agentcli.events import EventSink, TextDelta, ThinkingDelta
from agentcli.messages import ContentBlock, JsonObject, Message, TextBlock, ToolUseBlock
from agentcli.messages import block_from_wire as _block_from_wire
from agentcli.model import ModelResponse, StopReason
from agentcli.model.stream import ServerSentEvent
from agentcli.usage import Usage, token_count

DONE = "[DONE]"
STOP_REASONS = {
    "stop": StopReason.END_TURN,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "length": StopReason.MAX_TOKENS,
    "content_filter": StopReason.REFUSAL,
}
_REASONING_KEYS = ("reasoning_content", "reasoning")
"""Where servers that show a model's reasoning put it (vLLM, DeepSeek; OpenRouter, Ollama)."""


@dataclass(slots=True)
class _OpenCall:
    id: str
    name: str
    arguments: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ChatStreamAccumulator:
    """Applies Chat Completions chunks, in order, to build the assistant message."""

    on_event: EventSink
    taken_ids: frozenset[str] = frozenset()
    """Tool call ids the conversation already holds (a reused one is replaced)."""
    text: list[str] = field(default_factory=list)
    calls: dict[int, _OpenCall] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Usage | None = None
    model: str = ""
    done: bool = False

    def feed_sse(self, sse: ServerSentEvent) -> None:
        data = sse.data.strip()
        if not data:
            return
        if data == DONE:
            self.done = True
            return
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError as exc:
            raise IncompleteResponseError(f"malformed stream chunk: {exc}") from exc
        if not isinstance(chunk, dict):
            raise IncompleteResponseError(f"malformed stream chunk: {data[:80]!r}")
        self.feed(chunk)

    def feed(self, chunk: JsonObject) -> None:
        if "error" in chunk:
            raise stream_error(chunk["error"])
        if isinstance(chunk.get("model"), str):
            self.model = chunk["model"]
        if isinstance(chunk.get("usage"), dict):
            self.usage = usage_from_chat(chunk["usage"])
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else []:
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                self._apply_choice(choice)

    def _apply_choice(self, choice: JsonObject) -> None:
        delta = choice.get("delta")
        if isinstance(delta, dict):
            content = delta.get("content")
            if isinstance(content, str) and content:
                self.text.append(content)
                self.on_event(TextDelta(text=content))
            for key in _REASONING_KEYS:
                reasoning = delta.get(key)
                if isinstance(reasoning, str) and reasoning:
                    self.on_event(ThinkingDelta(text=reasoning))
                    break
            calls = delta.get("tool_calls")
            for call in calls if isinstance(calls, list) else []:
                if isinstance(call, dict):
                    self._apply_call(call)
        if isinstance(choice.get("finish_reason"), str):
            self.finish_reason = choice["finish_reason"]

    def _apply_call(self, delta: JsonObject) -> None:
        index = delta.get("index")
        call_id = delta.get("id") if isinstance(delta.get("id"), str) else ""
        if not isinstance(index, int):
            # A server that does not number its calls: a new id starts a call, else the
            # latest call goes on.
            last = max(self.calls, default=-1)
            previous = self.calls[last].id if last >= 0 else ""
            starts = last < 0 or bool(call_id and previous and previous != call_id)
            index = last + 1 if starts else last
        open_call = self.calls.setdefault(index, _OpenCall(id="", name=""))
        if call_id and not open_call.id:
            open_call.id = call_id
        function = delta.get("function")
        if isinstance(function, dict):
            if isinstance(function.get("name"), str) and not open_call.name:
                open_call.name = function["name"]
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                open_call.arguments.append(arguments)
            elif isinstance(arguments, dict):  # a server that sends the object itself
                open_call.arguments.append(json.dumps(arguments))

    def end_without_done(self) -> None:
        """The stream ended without `[DONE]`: IncompleteResponseError unless both the
        `finish_reason` and the usage chunk (asked for with `stream_options.include_usage`)
        arrived. A server that sends no usage is understood when it ends with `[DONE]`."""
        if self.finish_reason is not None and self.usage is None:
            raise IncompleteResponseError("stream ended after finish_reason, before its usage")

    def result(self) -> ModelResponse:
        """The complete response. Raises IncompleteResponseError if the stream was cut."""
        if self.finish_reason is None:
            raise IncompleteResponseError("stream ended before a finish_reason")
        cut = self.finish_reason == "length"
        content: list[ContentBlock] = []
        text = "".join(self.text)
        if text:
            content.append(TextBlock(text=text, raw={"type": "text", "text": text}))
        ids = set(self.taken_ids)
        order = sorted(self.calls)
        for position, index in enumerate(order):
            open_call = self.calls[index]
            if not open_call.name:
                raise IncompleteResponseError("a tool call has no function name")
            call_id = open_call.id
            if not call_id or call_id in ids:
                call_id = f"call_{uuid.uuid4().hex[:24]}"
            ids.add(call_id)
            last = position == len(order) - 1
            content.append(_tool_use(call_id, open_call, cut=cut and last, length=cut))
        stop_reason = STOP_REASONS.get(self.finish_reason, StopReason.END_TURN)
        if stop_reason == StopReason.END_TURN and self.calls:
            stop_reason = StopReason.TOOL_USE  # some servers say "stop" after tool calls
        return ModelResponse(
            message=Message(role="assistant", content=tuple(content)),
            stop_reason=stop_reason,
            usage=self.usage or Usage(),
            model=self.model,
            usage_known=self.usage is not None,
        )


def _tool_use(call_id: str, call: _OpenCall, *, cut: bool, length: bool) -> ToolUseBlock:
    """The tool_use block of one call. `cut`: it may have been cut (never run); `length`: the
    response hit the output limit, so arguments that are not whole JSON were cut too."""
    text = "".join(call.arguments)
    partial = ToolUseBlock(id=call_id, name=call.name, input={}, complete=False)
    if cut:
        return partial
    try:
        arguments = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        if length:
            return partial
        raw = {"type": "tool_use", "id": call_id, "name": call.name, "input": {}}
        problem = f"the arguments are not valid JSON ({exc.msg} at character {exc.pos})"
        return ToolUseBlock(id=call_id, name=call.name, input={}, raw=raw, input_problem=problem)
    block = _block_from_wire(
        {"type": "tool_use", "id": call_id, "name": call.name, "input": arguments}
    )
    assert isinstance(block, ToolUseBlock)
    if block.input_problem is not None:  # the raw input is not an object: not sendable back
        raw = {"type": "tool_use", "id": call_id, "name": call.name, "input": {}}
        return ToolUseBlock(
            id=call_id, name=call.name, input={}, raw=raw, input_problem=block.input_problem
        )
    return block


def usage_from_chat(raw: JsonObject) -> Usage:
    """Chat Completions usage as agentcli counts it: `prompt_tokens` includes the cached ones
    (`prompt_tokens_details.cached_tokens`), which are counted as cache reads. A value that is
    not a token count (`1e999`, `NaN`, a string: `usage.token_count`) counts as missing."""

    def num(value: Any) -> int:
        return token_count(value) or 0

    details = raw.get("prompt_tokens_details")
    cached = num(details.get("cached_tokens")) if isinstance(details, dict) else 0
    prompt = num(raw.get("prompt_tokens"))
    return Usage(
        input_tokens=max(prompt - cached, 0),
        output_tokens=num(raw.get("completion_tokens")),
        cache_read_input_tokens=min(cached, prompt) if prompt else cached,
    )


def stream_error(error: Any) -> Exception:
    """An error the server sent inside the stream: retryable unless it names a client error."""
    message = str(error.get("message", error)) if isinstance(error, dict) else str(error)
    code = error.get("code") if isinstance(error, dict) else None
    status = code if isinstance(code, int) else None
    if status is not None and 400 <= status < 500 and status not in (408, 409, 429):
        return ModelError(f"{status} error during stream: {message}", status_code=status)
    return RetryableModelError(f"error during stream: {message}", status_code=status)
