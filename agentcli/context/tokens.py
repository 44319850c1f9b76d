"""Token estimates of what is sent, where no response has reported a count yet.

The API reports how many tokens a request's prompt had only once it answered, and no tokenizer
is loaded here: a size is counted in characters of the JSON the provider is sent and turned
into tokens at a rate learned from the last response (`ContextView.tokens_per_char`), or at the
rule of thumb of 4 characters a token before there is one. Estimates are shown as such (`≈`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from agentcli.messages import Message, canonical_json

TOKENS_PER_CHAR = 0.25
"""The rule of thumb: about 4 characters of English or code a token."""


def _message_chars(message: Message) -> int:
    return len(canonical_json(message.to_wire()))


def message_chars(message: Message) -> int:
    """The characters of `message` as sent (computed once per message)."""
    return message.memo(_message_chars)


def messages_chars(messages: Sequence[Message]) -> int:
    return sum(message_chars(m) for m in messages)


def tools_chars(tools: Iterable[Any]) -> int:
    """The characters of tool definitions (objects with `to_wire()`) as sent."""
    return len(canonical_json([tool.to_wire() for tool in tools]))


def tokens(chars: int, per_char: float = TOKENS_PER_CHAR) -> int:
    return math.ceil(chars * per_char)
