"""Thinking blocks in strict mode: the fake signs every thinking block it serves with the model
that produced it and a digest of what came before it (`sign_thinking`), and refuses a block sent
back to another model, after a changed prefix, edited, or unsigned (`bound_thinking_problem`):
the binding Opus 5.5 and Fable 5.1 enforce."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

SIGNATURE_PREFIX = "fakesig1."


def _plain(value: Any) -> Any:
    """`value` without `cache_control` anywhere (breakpoints move every turn; they are not part
    of what a thinking block depends on)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _content(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if not _empty_text(b)]


def _empty_text(block: Any) -> bool:
    """An empty text block: never sent back (agentcli leaves it out; the API refuses it), so
    it is not part of what a thinking block depends on."""
    return isinstance(block, Mapping) and block.get("type") == "text" and not block.get("text")


def _system_text(system: Any) -> str:
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n".join(str(b.get("text", "")) for b in system if isinstance(b, Mapping))
    return ""


def prefix_digest(body: Mapping[str, Any], messages: Sequence[Any], blocks: Sequence[Any]) -> str:
    """A digest of what comes before a thinking block: the system prompt, the tools, the
    messages before its message and the blocks before it in its own message."""
    prefix = {
        "system": _system_text(body.get("system")),
        "tools": _plain(body.get("tools") or []),
        "messages": [{"role": m.get("role"), "content": _plain(_content(m))} for m in messages],
        "blocks": _plain([b for b in blocks if not _empty_text(b)]),
    }
    text = json.dumps(prefix, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _text_digest(block: Mapping[str, Any]) -> str:
    # A redacted block's `data` is the signature itself: only a thinking block has text.
    text = str(block.get("thinking", ""))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def signature(model: str, prefix: str, block: Mapping[str, Any]) -> str:
    """The fake's signature of a thinking block `model` produced after `prefix`."""
    claims = {"model": model, "prefix": prefix, "text": _text_digest(block)}
    return SIGNATURE_PREFIX + base64.urlsafe_b64encode(json.dumps(claims).encode()).decode()


def read_signature(value: Any) -> dict[str, str] | None:
    if not isinstance(value, str) or not value.startswith(SIGNATURE_PREFIX):
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(value.removeprefix(SIGNATURE_PREFIX)))
    except ValueError:
        return None
    return claims if isinstance(claims, dict) else None


def bound_thinking_problem(body: Mapping[str, Any], family: str) -> str | None:
    """Why a thinking block in `body` may not go to `family` (a model that binds thinking to
    the model and transcript that produced it), or None."""
    messages = body["messages"]
    for index, message in enumerate(messages):
        if message.get("role") != "assistant" or isinstance(message.get("content"), str):
            continue
        content = _content(message)
        for position, block in enumerate(content):
            if block.get("type") not in ("thinking", "redacted_thinking"):
                continue
            where = f"messages.{index}.content.{position}"
            key = "signature" if block["type"] == "thinking" else "data"
            claims = read_signature(block.get(key))
            if claims is None:
                return f"{where}: invalid `signature` in a {block['type']} block"
            if claims.get("model") != family:
                return (
                    f"{where}: this {block['type']} block was produced by "
                    f"{claims.get('model')} and cannot be sent to {family}"
                )
            expected = prefix_digest(body, messages[:index], content[:position])
            if claims.get("prefix") != expected:
                return (
                    f"{where}: the block is bound to a different conversation (what came "
                    "before it changed since it was produced)"
                )
            if claims.get("text") != _text_digest(block):
                return f"{where}: the content of a {block['type']} block was modified"
    return None


def sign_thinking(
    events: Sequence[tuple[str, str]], body: Mapping[str, Any], family: str
) -> list[tuple[str, str]]:
    """The SSE events of a response to `body` with every thinking block signed by the fake for
    `family` and the transcript before it, and the message's `model` the one requested."""
    messages = body.get("messages") or []
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, list[str]] = {}
    out: list[tuple[str, str]] = []
    for kind, data in events:
        event = json.loads(data)
        etype = event.get("type")
        if etype == "message_start":
            event["message"]["model"] = body.get("model")
        elif etype == "content_block_start":
            index = int(event["index"])
            block = dict(event["content_block"])
            if block.get("type") == "redacted_thinking":
                prefix = _digest_before(body, messages, blocks, index)
                block["data"] = signature(family, prefix, block)
                event["content_block"] = block
            blocks[index] = dict(block)
        elif etype == "content_block_delta":
            index = int(event["index"])
            delta = event["delta"]
            block = blocks[index]
            if delta.get("type") == "signature_delta":
                prefix = _digest_before(body, messages, blocks, index)
                delta["signature"] = signature(family, prefix, block)
                block["signature"] = delta["signature"]
            elif delta.get("type") == "input_json_delta":
                partial.setdefault(index, []).append(str(delta.get("partial_json", "")))
            else:
                for key, value in delta.items():
                    if key != "type" and isinstance(value, str):
                        block[key] = str(block.get(key, "")) + value
        elif etype == "content_block_stop":
            index = int(event["index"])
            if index in partial:
                text = "".join(partial[index])
                blocks[index]["input"] = json.loads(text) if text.strip() else {}
        out.append((kind, json.dumps(event)))
    return out


def _digest_before(
    body: Mapping[str, Any], messages: Sequence[Any], blocks: Mapping[int, Any], index: int
) -> str:
    return prefix_digest(body, messages, [blocks[i] for i in sorted(blocks) if i < index])
