"""Thinking blocks may be left out, never altered: a model reads back only the thinking its own
responses carried, and a model that binds thinking to the transcript (Opus 5.5, Fable 5.1, …)
rejects a block once anything before it changed (the system prompt, the tools, an elided
result, a compaction). Each assistant message records its `Producer` (the model and
`context_key`); a block goes back only to the same model, and for a binding model only under
the same key. An elision move, a compaction, another day's system prompt or a resumed session
changes the key, so all earlier blocks stop being sent together, and every later request leaves
them out the same way.
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agentcli.messages import Message, Producer, canonical_json, is_thinking


def context_key(system: str, tools: Iterable[Any], view_state: str) -> str:
    """A key of everything a thinking block depends on besides the messages before it: the
    system prompt, the tool definitions (objects with `to_wire()`) and the view's state."""
    digest = hashlib.sha256()
    for part in (system, canonical_json([tool.to_wire() for tool in tools]), view_state):
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    return digest.hexdigest()[:20]


def _has_thinking(message: Message) -> bool:
    return any(is_thinking(b) for b in message.content)


def bound_thinking(messages: Sequence[Message], caller: Producer, *, binds: bool) -> list[Message]:
    """`messages` with thinking blocks only where `caller` may read them: those produced by the
    same model, and, when the model binds thinking to the transcript (`binds`), under the same
    context key. An assistant message left with no content is not sent at all."""
    out: list[Message] = []
    for message in messages:
        if message.role != "assistant" or not message.memo(_has_thinking):
            out.append(message)
            continue
        producer = message.producer
        readable = (
            producer is not None
            and producer.model == caller.model
            and (not binds or producer.context == caller.context)
        )
        if readable:
            out.append(message)
            continue
        content = tuple(b for b in message.content if not is_thinking(b))
        if content:
            out.append(replace(message, content=content))
    return out


@dataclass
class ThinkingBound:
    """`bound_thinking`, remembered from one request to the next. A loop's history only grows
    at its end (and the context view's elided prefix changes rarely), so each request filters
    just the messages added since the last one, not the whole history again."""

    _key: tuple[Producer, bool] | None = None
    _seen: list[Message] = field(default_factory=list)
    _out: list[Message] = field(default_factory=list)

    def __call__(
        self, messages: Sequence[Message], caller: Producer, *, binds: bool
    ) -> list[Message]:
        seen = len(self._seen)
        grown = (
            self._key == (caller, binds)
            and len(messages) >= seen
            and all(map(operator.is_, self._seen, messages))
        )
        if grown:
            self._out.extend(bound_thinking(messages[seen:], caller, binds=binds))
        else:
            self._out = bound_thinking(messages, caller, binds=binds)
        self._key, self._seen = (caller, binds), list(messages)
        return list(self._out)
