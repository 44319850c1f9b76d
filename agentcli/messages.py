"""Conversation messages and content blocks: provider-neutral values with one serializer.

Every block keeps the provider's JSON object verbatim in `raw` when it came from the model, and
`to_wire()` returns exactly that object, so thinking signatures, redacted thinking, server tool
blocks, citations and block types invented after this code was written all go back to the API
unchanged. Blocks we build ourselves (user text, tool results) have `raw=None` and are serialized
from their fields. Their text is valid Unicode from the start: a byte of a file name that is not
UTF-8 (a lone surrogate, from `surrogateescape`) is spelled `\\xff` when the block is made
(`fsnames.for_model`, which the file tools read back), once, not on every request.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from agentcli.fsnames import for_model

JsonObject = dict[str, Any]
T = TypeVar("T")
Role = Literal["user", "assistant"]


@dataclass(frozen=True, slots=True)
class TextBlock:
    text: str
    raw: JsonObject | None = None
    kind: Literal["text"] = "text"

    def __post_init__(self) -> None:
        if self.raw is None:  # ours; text from the API is valid Unicode already
            object.__setattr__(self, "text", for_model(self.text))

    def to_wire(self) -> JsonObject:
        return self.raw if self.raw is not None else {"type": "text", "text": self.text}


@dataclass(frozen=True, slots=True)
class ThinkingBlock:
    thinking: str
    signature: str
    raw: JsonObject
    kind: Literal["thinking"] = "thinking"

    def to_wire(self) -> JsonObject:
        return self.raw


@dataclass(frozen=True, slots=True)
class ToolUseBlock:
    """A client tool call proposed by the model.

    `complete` is False when the stream ended (e.g. at max_tokens) before the call's input JSON
    finished arriving; such a call is never executed. `input_problem` says why a call whose
    input is not a JSON object (`[1]`, `"x"`) cannot run; `raw` still holds what was sent, and
    the call is answered with an `invalid_arguments` error.
    """

    id: str
    name: str
    input: JsonObject
    raw: JsonObject | None = None
    complete: bool = True
    input_problem: str | None = None
    kind: Literal["tool_use"] = "tool_use"

    def to_wire(self) -> JsonObject:
        if self.raw is not None:
            return self.raw
        return {"type": "tool_use", "id": self.id, "name": self.name, "input": self.input}


@dataclass(frozen=True, slots=True)
class ToolResultBlock:
    tool_use_id: str
    content: str
    is_error: bool = False
    kind: Literal["tool_result"] = "tool_result"

    def __post_init__(self) -> None:
        object.__setattr__(self, "content", for_model(self.content))

    def to_wire(self) -> JsonObject:
        wire: JsonObject = {
            "type": "tool_result",
            "tool_use_id": self.tool_use_id,
            "content": self.content,
        }
        if self.is_error:
            wire["is_error"] = True
        return wire


@dataclass(frozen=True, slots=True)
class OpaqueBlock:
    """Any other block (redacted_thinking, server_tool_use, web_search_tool_result, future
    types): carried verbatim, never interpreted, never executed client-side."""

    type: str
    raw: JsonObject
    kind: Literal["opaque"] = "opaque"

    def to_wire(self) -> JsonObject:
        return self.raw


ContentBlock = TextBlock | ThinkingBlock | ToolUseBlock | ToolResultBlock | OpaqueBlock

THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})


def is_thinking(block: ContentBlock) -> bool:
    """A thinking or redacted_thinking block: the model's reasoning, bound to whoever made it."""
    return isinstance(block, ThinkingBlock) or (
        isinstance(block, OpaqueBlock) and block.type in THINKING_TYPES
    )


def block_from_wire(raw: Mapping[str, Any]) -> ContentBlock:
    """Build a typed block from a provider JSON object, keeping the object verbatim."""
    obj = dict(raw)
    kind = obj.get("type")
    if kind == "text" and isinstance(obj.get("text"), str):
        return TextBlock(text=obj["text"], raw=obj)
    if kind == "thinking":
        return ThinkingBlock(
            thinking=str(obj.get("thinking", "")), signature=str(obj.get("signature", "")), raw=obj
        )
    if kind == "tool_use" and _is_nonempty_str(obj.get("id")) and isinstance(obj.get("name"), str):
        tool_input = obj.get("input")
        if isinstance(tool_input, dict):
            return ToolUseBlock(id=obj["id"], name=obj["name"], input=tool_input, raw=obj)
        return ToolUseBlock(
            id=obj["id"],
            name=obj["name"],
            input={},
            raw=obj,
            input_problem=f"the input must be a JSON object, not {_json_kind(tool_input)}",
        )
    if kind == "tool_result":
        return ToolResultBlock(
            tool_use_id=str(obj["tool_use_id"]),
            content=_tool_result_text(obj.get("content")),
            is_error=bool(obj.get("is_error", False)),
        )
    return OpaqueBlock(type=str(kind), raw=obj)


def _is_nonempty_str(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    for kinds, name in (((bool,), "a boolean"), ((int, float), "a number"), ((str,), "a string")):
        if isinstance(value, kinds):
            return name
    return "an array" if isinstance(value, list) else type(value).__name__


def _tool_result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""


@dataclass(frozen=True, slots=True)
class Producer:
    """Who made an assistant message, as far as its thinking blocks care: the model, and a key
    of what that model was sent before it (system prompt, tools, how the history was sent).
    Newer models accept a thinking block back only from the model that made it, and only while
    all of that is unchanged (`agentcli.context.bound_thinking`)."""

    model: str
    context: str

    def to_json(self) -> dict[str, str]:
        return {"model": self.model, "context": self.context}

    @classmethod
    def from_json(cls, raw: Any) -> Producer | None:
        if isinstance(raw, Mapping) and isinstance(raw.get("model"), str):
            return cls(model=raw["model"], context=str(raw.get("context", "")))
        return None


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: tuple[ContentBlock, ...]
    producer: Producer | None = None
    """For an assistant message: the model (and context) that produced it; None when unknown
    (a message recorded before agentcli kept it, or one made up by a test)."""
    _memo: dict[Callable[[Message], Any], Any] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """Forms of this (immutable) message computed once: every request sends the whole history,
    and rebuilding each old message's wire form on every turn made a turn's cost grow with the
    session. Not part of the value; `dataclasses.replace` starts a new one."""

    @classmethod
    def user(cls, text: str) -> Message:
        return cls(role="user", content=(TextBlock(text=text),))

    @property
    def text(self) -> str:
        """The visible text of the message (text blocks only, joined)."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_uses(self) -> list[ToolUseBlock]:
        return [b for b in self.content if isinstance(b, ToolUseBlock)]

    @property
    def tool_results(self) -> list[ToolResultBlock]:
        return [b for b in self.content if isinstance(b, ToolResultBlock)]

    def to_wire(self) -> JsonObject:
        """The API's JSON object for this message, built once and shared: do not mutate it."""
        return self.memo(_wire)

    def memo(self, make: Callable[[Message], T]) -> T:
        """`make(self)`, computed on the first call with `make` and kept with the message: for
        what depends only on the message (which never changes). `make` is the key, so it must
        be a function defined once (at module level), not a fresh lambda."""
        try:
            return self._memo[make]  # type: ignore[no-any-return]
        except KeyError:
            value = self._memo[make] = make(self)
            return value

    @classmethod
    def from_wire(cls, raw: Mapping[str, Any]) -> Message:
        role = raw["role"]
        if role not in ("user", "assistant"):
            raise ValueError(f"unknown message role {role!r}")
        content = raw["content"]
        if isinstance(content, str):
            return cls(role=role, content=(TextBlock(text=content),))
        return cls(role=role, content=tuple(block_from_wire(b) for b in content))


def _wire(message: Message) -> JsonObject:
    return {"role": message.role, "content": [b.to_wire() for b in message.content]}


def pairing_problems(messages: Sequence[Message] | Sequence[Mapping[str, Any]]) -> list[str]:
    """Check the tool_use/tool_result protocol; return a list of problems (empty when valid).

    Every assistant `tool_use` must be answered by exactly one `tool_result` in the very next
    user message, in the order of the `tool_use` blocks, and no `tool_result` may answer a call
    that was not made. Accepts typed messages or their wire form.
    """
    wire = [m.to_wire() if isinstance(m, Message) else dict(m) for m in messages]
    problems: list[str] = []
    for index, message in enumerate(wire):
        blocks = message.get("content")
        blocks = blocks if isinstance(blocks, list) else []
        uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
        if message.get("role") == "user":
            results = [b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"]
            prev = wire[index - 1] if index > 0 else None
            prev_blocks = prev.get("content") if prev else None
            expected = (
                [b["id"] for b in prev_blocks if b.get("type") == "tool_use"]
                if prev is not None
                and prev.get("role") == "assistant"
                and isinstance(prev_blocks, list)
                else []
            )
            if results != expected:
                problems.append(
                    f"message {index}: tool_results {results} do not answer tool_uses {expected}"
                )
        elif uses:
            nxt = wire[index + 1] if index + 1 < len(wire) else None
            if nxt is None:
                problems.append(f"message {index}: tool_uses {uses} have no following message")
    return problems


def canonical_json(value: Any) -> str:
    """A stable JSON text for hashing and comparing tool inputs."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
