"""What is computed once per message (issue 15: a turn must not cost more on turn 600 than on
turn 1) must never differ from computing it afresh.

Oracles: a request built from fresh copies of the messages (nothing remembered), a small
reference of the sending rules written here, and `bound_thinking` over the whole history.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentcli.context import ThinkingBound, bound_thinking
from agentcli.messages import Message, Producer, ToolResultBlock
from agentcli.model import ModelRequest
from agentcli.model.request import (
    build_request_params,
    encode_request,
    request_body,
    sendable_messages,
)

MODEL = "claude-sonnet-4-5"
PRODUCERS = [Producer("claude-sonnet-4-5", "k1"), Producer("claude-sonnet-4-5", "k2"), None]
CALLERS = [Producer("claude-sonnet-4-5", "k1"), Producer("claude-opus-4-5", "k1")]

texts = st.text(alphabet=st.sampled_from('ab é€"\\\n\x00😀'), max_size=6)
cache = st.sampled_from([{}, {"cache_control": {"type": "ephemeral"}}])


@st.composite
def assistant_block(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["text", "empty", "thinking", "redacted", "tool_use"]))
    if kind == "text":
        return {"type": "text", "text": draw(texts) or "x", **draw(cache)}
    if kind == "empty":
        return {"type": "text", "text": ""}
    if kind == "thinking":
        return {"type": "thinking", "thinking": draw(texts), "signature": "sig"}
    if kind == "redacted":
        return {"type": "redacted_thinking", "data": draw(texts)}
    return {"type": "tool_use", "id": f"toolu_{draw(st.integers(0, 99))}", "name": "t", "input": {}}


@st.composite
def message(draw: st.DrawFn) -> Message:
    if draw(st.booleans()):
        blocks = draw(st.lists(assistant_block(), max_size=3))
        producer = draw(st.sampled_from(PRODUCERS))
        return dataclasses.replace(
            Message.from_wire({"role": "assistant", "content": blocks}), producer=producer
        )
    if draw(st.booleans()):
        return Message(role="user", content=(ToolResultBlock("toolu_1", draw(texts)),))
    blocks = [{"type": "text", "text": draw(texts) or "y", **draw(cache)}]
    return Message.from_wire({"role": "user", "content": blocks})


def fresh(messages: list[Message]) -> list[Message]:
    """The same messages, rebuilt from their JSON: nothing remembered."""
    return [
        dataclasses.replace(Message.from_wire(copy.deepcopy(m.to_wire())), producer=m.producer)
        for m in messages
    ]


def reference_sendable(messages: list[Message]) -> list[dict[str, Any]]:
    """The sending rules, written out plainly: no `cache_control` of the history's own; an
    earlier answer without empty text blocks, and not at all when nothing is left."""
    out = []
    for index, m in enumerate(messages):
        blocks = [{k: v for k, v in b.to_wire().items() if k != "cache_control"} for b in m.content]
        if m.role == "assistant" and index < len(messages) - 1:
            blocks = [b for b in blocks if not (b.get("type") == "text" and not b.get("text"))]
            if not blocks:
                continue
        out.append({"role": m.role, "content": blocks})
    return out


def request(messages: list[Message]) -> ModelRequest:
    return ModelRequest(system="sys", messages=messages)


@settings(max_examples=150, deadline=None)
@given(st.lists(message(), min_size=1, max_size=12))
def test_a_growing_history_is_sent_as_if_built_afresh_every_turn(history: list[Message]) -> None:
    # The same Message objects serve every turn, as in a session: a message that was the last
    # (an answer kept whole) is an earlier answer on the next turn, and must be sent as one.
    for end in range(1, len(history) + 1):
        seen = history[:end]
        assert sendable_messages(seen) == reference_sendable(seen)
        expected = build_request_params(MODEL, request(fresh(seen)))
        assert build_request_params(MODEL, request(seen)) == expected
        body = request_body(MODEL, request(seen))
        assert json.loads(body) == expected
        assert body == request_body(MODEL, request(seen))  # and again, from what was kept


def test_the_body_is_compact_utf8_json_that_refuses_nan() -> None:
    history = [Message.user('é€😀 "quoted"')]
    body = request_body(MODEL, request(history))
    assert "é€😀".encode() in body
    assert b": " not in body and b", " not in body
    try:
        request_body(MODEL, ModelRequest(system="s", messages=[], max_tokens=float("nan")))  # type: ignore[arg-type]
    except ValueError:
        pass
    else:
        raise AssertionError("a NaN went into the request body")


def test_what_a_message_keeps_is_not_part_of_its_value() -> None:
    a = Message.user("hello")
    b = Message.user("hello")
    a.to_wire()
    assert a == b and repr(a) == repr(b)
    replaced = dataclasses.replace(a, content=(ToolResultBlock("toolu_1", "other"),))
    assert replaced.to_wire()["content"][0]["type"] == "tool_result"
    assert a.to_wire()["content"][0]["text"] == "hello"


operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.lists(message(), max_size=3)),
        st.tuples(st.just("caller"), st.sampled_from(CALLERS), st.booleans()),
        st.tuples(st.just("elide"), st.integers(0, 5)),
    ),
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(st.lists(message(), max_size=6), operations)
def test_thinking_bound_between_requests_equals_bounding_the_whole_history(
    start: list[Message], ops: list[Any]
) -> None:
    bound = ThinkingBound()
    history, caller, binds = list(start), CALLERS[0], True
    for op in ops:
        if op[0] == "append":
            history = [*history, *op[1]]
        elif op[0] == "caller":
            caller, binds = op[1], op[2]
        else:  # the context view replaces an old stretch with a stub: a new prefix
            history = [Message.user("[elided]"), *history[op[1] :]]
        assert bound(history, caller, binds=binds) == bound_thinking(history, caller, binds=binds)


LONE = "look \ud83d"  # a lone surrogate: what json.loads makes of a `"\ud83d"` escape


def test_a_lone_surrogate_from_the_server_goes_back_escaped_not_as_an_error() -> None:
    """Found in review: a model's text (or a tool's input) holding a `"\\ud83d"` escape made
    every later request fail to encode, so the session could not go on or be resumed."""
    answer = Message.from_wire(
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": LONE},
                {"type": "tool_use", "id": "toolu_1", "name": "t", "input": {"q": LONE}},
            ],
        }
    )
    history = [
        Message.user("hi"),
        answer,
        Message(role="user", content=(ToolResultBlock("toolu_1", "ok"),)),
    ]
    body = request_body(MODEL, request(history))
    assert json.loads(body) == build_request_params(MODEL, request(history))
    assert b"\\ud83d" in body
    body.decode("utf-8")  # valid UTF-8 (here: ASCII)
    assert json.loads(encode_request({"x": LONE, "y": "é"})) == {"x": LONE, "y": "é"}
    assert encode_request({"y": "é"}) == '{"y":"é"}'.encode()  # UTF-8 whenever it can be
