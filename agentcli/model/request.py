"""The JSON body of a Messages API request, shaped by the model it goes to.

Pure code with no SDK import (the adapter sends what this builds; tests and benchmarks build
bodies without the SDK). `max_tokens` is the model's maximum output from its catalogue entry
(`agentcli.catalogue`), unless the caller asks for less.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentcli.catalogue import CATALOGUE
from agentcli.messages import JsonObject, Message
from agentcli.model import ModelRequest

EPHEMERAL = {"type": "ephemeral"}


def build_request_params(model: str, request: ModelRequest) -> dict[str, Any]:
    """The JSON body of a Messages API request to `model`, with prompt-cache breakpoints.

    Breakpoints: the tool definitions, the system prompt, and the last block of the latest user
    turn (the last message, or the one before a paused assistant turn that is being continued),
    so each turn reads everything before it from the cache. That is 3 of the 4 the API allows:
    any `cache_control` already in the history (an imported or hand-edited session) is dropped.
    """
    spec = request.spec or CATALOGUE.lookup(model)
    messages = [_without_breakpoints(m) for m in sendable_messages(request.messages)]
    latest_user = next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i]["role"] == "user"), None
    )
    if latest_user is not None and messages[latest_user]["content"]:
        content = list(messages[latest_user]["content"])
        content[-1] = {**content[-1], "cache_control": EPHEMERAL}
        messages[latest_user] = {"role": "user", "content": content}
    max_tokens = min(request.max_tokens or spec.max_output, spec.max_output)
    params: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "messages": messages,
        "stream": True,
    }
    if request.system:
        params["system"] = [{"type": "text", "text": request.system, "cache_control": EPHEMERAL}]
    if request.tools:
        tools: list[JsonObject] = [t.to_wire() for t in request.tools]
        tools[-1] = {**tools[-1], "cache_control": EPHEMERAL}
        params["tools"] = tools
    return params


def sendable_messages(messages: Sequence[Message]) -> list[JsonObject]:
    """The history as the API accepts it back. The model sometimes answers with no content or
    with an empty text block, and the API then rejects every later request that contains it
    ("messages must have non-empty content", "text content blocks must be non-empty"): such
    an answer stays in our history but is not sent (it carries nothing the model needs)."""
    wire = []
    for index, message in enumerate(messages):
        item = message.to_wire()
        if message.role == "assistant" and index < len(messages) - 1:
            content = [b for b in item["content"] if not _empty_text(b)]
            if not content:
                continue
            if len(content) < len(item["content"]):
                item = {"role": "assistant", "content": content}
        wire.append(item)
    return wire


def _empty_text(block: JsonObject) -> bool:
    return block.get("type") == "text" and not block.get("text")


def _without_breakpoints(message: JsonObject) -> JsonObject:
    content = message["content"]
    if not any("cache_control" in block for block in content):
        return message
    plain = [{k: v for k, v in block.items() if k != "cache_control"} for block in content]
    return {**message, "content": plain}
