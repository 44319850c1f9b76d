"""The JSON body of a Chat Completions request, from agentcli's own messages.

agentcli's history is made of content blocks shaped like the Messages API's (text, tool_use,
tool_result, thinking): the loop, the journal and resume never see another shape. This module
is where they become Chat Completions messages, on the way out only:

- the system prompt is the first message (`role: "system"`);
- an assistant message is its text plus one `tool_calls` entry per tool_use block (arguments
  as the JSON text of the input);
- each tool_result becomes a `role: "tool"` message with its `tool_call_id`, right after the
  assistant message that made the call (results that failed say so, as the API has no
  `is_error`); any text in the same user message follows as a user message;
- thinking and other provider-specific blocks are not sent (no Chat Completions server takes
  them back), and an assistant message left with nothing is skipped.

Pure code: no HTTP, no SDK. `max_tokens` is sent only when the caller asks for a limit (a local
server with a small context rejects a request whose prompt plus `max_tokens` exceeds it), and
`reasoning_effort` only for a model whose `[models]` entry lists effort levels.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from agentcli.catalogue import Effort
from agentcli.messages import JsonObject, Message, TextBlock, ToolResultBlock, ToolUseBlock
from agentcli.model import ModelRequest, ToolSpec

ERROR_PREFIX = "Error: "
"""How a failed tool result starts (Chat Completions has no `is_error` flag)."""

_REASONING_EFFORT = {
    Effort.LOW: "low",
    Effort.MEDIUM: "medium",
    Effort.HIGH: "high",
    Effort.XHIGH: "high",
    Effort.MAX: "high",
}


def chat_request_body(model: str, request: ModelRequest) -> dict[str, Any]:
    """The streaming request body for `model`."""
    body: dict[str, Any] = {
        "model": model,
        "messages": chat_messages(request.system, request.messages),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        body["tools"] = [function_tool(tool) for tool in request.tools]
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    level = request.spec.effort_for(request.effort) if request.spec is not None else None
    if level is not None:
        body["reasoning_effort"] = _REASONING_EFFORT[level]
    return body


def function_tool(tool: ToolSpec) -> JsonObject:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.input_schema,
        },
    }


def chat_messages(system: str, messages: Sequence[Message]) -> list[JsonObject]:
    """The conversation as Chat Completions messages (see the module docstring)."""
    out: list[JsonObject] = [{"role": "system", "content": system}] if system else []
    for index, message in enumerate(messages):
        if message.role == "assistant":
            item = _assistant(message)
            if item is not None or index == len(messages) - 1:
                out.append(item or {"role": "assistant", "content": ""})
        else:
            out.extend(_user(message))
    return out


def _assistant(message: Message) -> JsonObject | None:
    text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
    calls = [_tool_call(b) for b in message.content if isinstance(b, ToolUseBlock)]
    if not text and not calls:
        return None
    item: JsonObject = {"role": "assistant", "content": text or None}
    if calls:
        item["tool_calls"] = calls
    return item


def _tool_call(block: ToolUseBlock) -> JsonObject:
    return {
        "id": block.id,
        "type": "function",
        "function": {"name": block.name, "arguments": json.dumps(block.input, ensure_ascii=False)},
    }


def _user(message: Message) -> Iterable[JsonObject]:
    for block in message.content:
        if isinstance(block, ToolResultBlock):
            content = block.content
            if block.is_error and not content.startswith(ERROR_PREFIX):
                content = ERROR_PREFIX + content
            yield {"role": "tool", "tool_call_id": block.tool_use_id, "content": content}
    text = "\n\n".join(b.text for b in message.content if isinstance(b, TextBlock) and b.text)
    if text:
        yield {"role": "user", "content": text}
