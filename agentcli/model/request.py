"""The JSON body of a Messages API request, shaped by the rules of the model it goes to.

Pure code with no SDK import (the adapter sends what this builds; tests and benchmarks build
bodies without the SDK). The model's catalogue entry (`agentcli.catalogue`) decides:

- `max_tokens`: the model's maximum output, unless the caller asks for less;
- `thinking`: adaptive wherever the model supports it, with `display: "summarized"` on models
  that otherwise return thinking blocks empty (Opus 4.7 and later: the text a model writes
  between tool calls may arrive inside them, and the user would see nothing between calls);
  budgeted (`"enabled"`) only on a model that has nothing else, and only when an effort was
  asked for; nothing on a model without thinking;
- `output_config.effort`: the effort asked for (or the model's default) where the model takes
  one, moved to the nearest level it has.

Never sent, on any model: sampling parameters, `tool_choice`, a prefilled assistant turn of our
own (text cut at `max_tokens` is continued with a user message, `agentcli.loop`). Thinking
blocks another model produced are left out by the caller (`agentcli.context.bound_thinking`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentcli.catalogue import CATALOGUE, THINKING_BUDGETS, Effort, ModelSpec, ThinkingMode
from agentcli.messages import JsonObject, Message
from agentcli.model import ModelRequest, ServerCompaction

EPHEMERAL = {"type": "ephemeral"}
MIN_THINKING_BUDGET = 1_024
"""The smallest `budget_tokens` the API accepts."""
_ADAPTIVE = (ThinkingMode.ADAPTIVE_ONLY, ThinkingMode.ADAPTIVE)


def build_request_params(model: str, request: ModelRequest) -> dict[str, Any]:
    """The JSON body of a Messages API request to `model`, with prompt-cache breakpoints.

    Breakpoints: the tool definitions, the system prompt, and the last block of the latest user
    turn (the last message, or the one before a paused assistant turn that is being continued),
    so each turn reads everything before it from the cache. That is 3 of the 4 the API allows:
    any `cache_control` already in the history (an imported or hand-edited session) is dropped.
    """
    spec = request.spec or CATALOGUE.lookup(model)
    messages = sendable_messages(request.messages)
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
        **reasoning_params(spec, request.effort, max_tokens),
    }
    if request.system:
        params["system"] = [{"type": "text", "text": request.system, "cache_control": EPHEMERAL}]
    if request.tools:
        tools: list[JsonObject] = [t.to_wire() for t in request.tools]
        tools[-1] = {**tools[-1], "cache_control": EPHEMERAL}
        params["tools"] = tools
    if request.server_compaction is not None:
        params["context_management"] = context_management(request.server_compaction)
    return params


COMPACTION_BETA = "compact-2026-01-12"
"""The beta the API's own compaction needs (`anthropic-beta`)."""


def context_management(compaction: ServerCompaction) -> dict[str, Any]:
    """`context_management` asking for `compact_20260112` past the trigger."""
    edit = {
        "type": "compact_20260112",
        "trigger": {"type": "input_tokens", "value": compaction.trigger_tokens},
        "instructions": compaction.instructions,
    }
    return {"edits": [edit]}


def beta_headers(request: ModelRequest, headers: Mapping[str, str]) -> dict[str, str]:
    """`headers` with the betas `request` needs added to any `anthropic-beta` already there
    (`ANTHROPIC_CUSTOM_HEADERS` may carry some)."""
    if request.server_compaction is None:
        return dict(headers)
    given = [b.strip() for b in headers.get("anthropic-beta", "").split(",") if b.strip()]
    betas = given if COMPACTION_BETA in given else [*given, COMPACTION_BETA]
    return {**headers, "anthropic-beta": ",".join(betas)}


def reasoning_params(spec: ModelSpec, effort: Effort | None, max_tokens: int) -> dict[str, Any]:
    """`thinking` and `output_config` for `spec`, given the effort asked for (None: the model's
    default) and the request's `max_tokens`: only what the model accepts."""
    params: dict[str, Any] = {}
    adaptive = spec.thinking in _ADAPTIVE
    if adaptive:
        thinking: dict[str, Any] = {"type": "adaptive"}
        if spec.omits_thinking:
            thinking["display"] = "summarized"
        params["thinking"] = thinking
    elif spec.thinking is ThinkingMode.BUDGETED and effort is not None:
        budget = min(THINKING_BUDGETS[effort], max_tokens - 1)
        if budget >= MIN_THINKING_BUDGET:
            params["thinking"] = {"type": "enabled", "budget_tokens": budget}
    level = spec.effort_for(effort)
    if level is not None and (adaptive or effort is not None):
        params["output_config"] = {"effort": level.value}
    return params


def sendable_messages(messages: Sequence[Message]) -> list[JsonObject]:
    """The history as the API accepts it back, without any `cache_control` of its own (an
    imported or hand-edited session; `build_request_params` places the breakpoints).

    The model sometimes answers with no content or with an empty text block, and the API then
    rejects every later request that contains it ("messages must have non-empty content", "text
    content blocks must be non-empty"): such an earlier answer stays in our history but is not
    sent (it carries nothing the model needs).

    Each message's sendable form is computed once and kept with it (`Message.memo`), so a turn
    costs the same on turn 600 as on turn 1, apart from sending the longer request."""
    forms = _sendable_forms(messages)
    return [item for message, form in forms if (item := message.memo(form)) is not None]


SendableForm = Callable[[Message], JsonObject | None]


def _sendable_forms(messages: Sequence[Message]) -> list[tuple[Message, SendableForm]]:
    """Each message that is sent, with the function that makes its sendable form."""
    forms = []
    last = len(messages) - 1
    for index, message in enumerate(messages):
        earlier_answer = message.role == "assistant" and index < last
        form: SendableForm = _sendable_earlier_answer if earlier_answer else _sendable
        if message.memo(form) is not None:
            forms.append((message, form))
    return forms


def request_body(model: str, request: ModelRequest) -> bytes:
    """`build_request_params(model, request)` as the JSON bytes a transport posts.

    Each message's JSON is made once and kept with it (`Message.memo`): only the message that
    carries the cache breakpoint is encoded afresh, so encoding turn 600's request costs about a
    copy of its bytes rather than a walk through the whole history."""
    params = build_request_params(model, request)
    parts = []
    for item, (message, form) in zip(
        params["messages"], _sendable_forms(request.messages), strict=True
    ):
        if item is message.memo(form):
            parts.append(message.memo(_ENCODED[form]))
        else:
            parts.append(encode_json(item))
    head = encode_json({k: v for k, v in params.items() if k != "messages"})
    try:
        return f'{head[:-1]},"messages":[{",".join(parts)}]}}'.encode()
    except UnicodeEncodeError:
        return encode_request(params)


def encode_json(value: Any) -> str:
    """Compact JSON, as the request body carries it (no NaN: the API would refuse it)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def encode_request(value: Any) -> bytes:
    """`value` as a request body: UTF-8 JSON. A lone surrogate (a server can itself send a
    `"\\ud83d"` escape in a model's text or a tool's input, and it is kept as sent) cannot be
    UTF-8: such a body goes with every non-ASCII character escaped, as the server sent it,
    rather than ending the session with an error on every later request."""
    try:
        return encode_json(value).encode()
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":"), allow_nan=False).encode()


def _sendable(message: Message) -> JsonObject:
    return _without_breakpoints(message.to_wire())


def _sendable_earlier_answer(message: Message) -> JsonObject | None:
    """An answer that is not the last message, without its empty text blocks; None when
    nothing is left."""
    item = _sendable(message)
    content = [b for b in item["content"] if not _empty_text(b)]
    if not content:
        return None
    if len(content) < len(item["content"]):
        return {"role": "assistant", "content": content}
    return item


def _sendable_json(message: Message) -> str:
    return encode_json(message.memo(_sendable))


def _sendable_earlier_answer_json(message: Message) -> str:
    return encode_json(message.memo(_sendable_earlier_answer))


_ENCODED: dict[SendableForm, Callable[[Message], str]] = {
    _sendable: _sendable_json,
    _sendable_earlier_answer: _sendable_earlier_answer_json,
}


def _empty_text(block: JsonObject) -> bool:
    return block.get("type") == "text" and not block.get("text")


def _without_breakpoints(message: JsonObject) -> JsonObject:
    content = message["content"]
    if not any("cache_control" in block for block in content):
        return message
    plain = [{k: v for k, v in block.items() if k != "cache_control"} for block in content]
    return {**message, "content": plain}
