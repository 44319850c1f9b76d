"""Chat Completions chunks to agentcli's messages, and messages to a request body: the pure code,
fed the shapes real servers send (calls without `index`, ids reused every response, arguments
that are not JSON, `stop` after tool calls)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentcli.catalogue import Effort, unknown_model
from agentcli.errors import IncompleteResponseError
from agentcli.messages import Message, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from agentcli.model import ModelRequest, StopReason
from agentcli.model.openai_request import chat_messages, chat_request_body
from agentcli.model.openai_stream import ChatStreamAccumulator, usage_from_chat
from agentcli.model.stream import ServerSentEvent


def accumulate(*chunks: dict[str, Any], taken: frozenset[str] = frozenset()) -> Any:
    acc = ChatStreamAccumulator(on_event=lambda _e: None, taken_ids=taken)
    for chunk in chunks:
        acc.feed_sse(ServerSentEvent(event=None, data=json.dumps(chunk)))
    return acc.result()


def delta(finish: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": fields, "finish_reason": finish}]}


def tool(index: int | None, id: str | None, name: str | None, arguments: str) -> dict[str, Any]:
    call: dict[str, Any] = {"function": {"arguments": arguments}}
    if index is not None:
        call["index"] = index
    if id is not None:
        call["id"] = id
    if name is not None:
        call["function"]["name"] = name
    return call


def test_calls_without_an_index_are_told_apart_by_their_ids() -> None:
    response = accumulate(
        delta(tool_calls=[tool(None, "c1", "read_file", '{"path":')]),
        delta(tool_calls=[tool(None, None, None, ' "a.py"}')]),
        delta(tool_calls=[tool(None, "c2", "glob", '{"pattern": "*"}')]),
        delta("tool_calls"),
    )
    assert [(u.id, u.name, u.input) for u in response.message.tool_uses] == [
        ("c1", "read_file", {"path": "a.py"}),
        ("c2", "glob", {"pattern": "*"}),
    ]


def test_missing_repeated_and_already_used_ids_are_replaced() -> None:
    response = accumulate(
        delta(tool_calls=[tool(0, "call_0", "a", "{}")]),
        delta(tool_calls=[tool(1, "call_1", "b", "{}")]),
        delta(tool_calls=[tool(2, "call_1", "c", "{}")]),
        delta(tool_calls=[tool(3, None, "d", "")]),
        delta("tool_calls"),
        taken=frozenset({"call_0"}),
    )
    ids = [u.id for u in response.message.tool_uses]
    assert ids[1] == "call_1"
    assert len(set(ids)) == 4 and "call_0" not in ids
    assert response.message.tool_uses[3].input == {}


def test_arguments_that_are_not_a_json_object_become_an_invalid_arguments_call() -> None:
    response = accumulate(
        delta(tool_calls=[tool(0, "c1", "read_file", '{"path": a.py}')]),
        delta(tool_calls=[tool(1, "c2", "read_file", "[1]")]),
        delta("tool_calls"),
    )
    bad_json, not_object = response.message.tool_uses
    assert bad_json.complete and "not valid JSON" in (bad_json.input_problem or "")
    assert "must be a JSON object, not an array" in (not_object.input_problem or "")
    # What goes back to the API (and the journal) is a valid call with empty input.
    assert bad_json.to_wire()["input"] == {} and not_object.to_wire()["input"] == {}


def test_stop_after_tool_calls_is_a_tool_use_and_text_comes_first() -> None:
    response = accumulate(
        delta(content="Let me look."),
        delta(tool_calls=[tool(0, "c1", "read_file", '{"path": "a.py"}')]),
        delta("stop"),
    )
    assert response.stop_reason == StopReason.TOOL_USE
    assert [type(b) for b in response.message.content] == [TextBlock, ToolUseBlock]


@pytest.mark.parametrize(
    ("finish", "stop"),
    [
        ("stop", StopReason.END_TURN),
        ("length", StopReason.MAX_TOKENS),
        ("content_filter", StopReason.REFUSAL),
        ("eos", StopReason.END_TURN),
    ],
)
def test_finish_reasons(finish: str, stop: StopReason) -> None:
    assert accumulate(delta(content="x"), delta(finish)).stop_reason == stop


def test_at_length_the_last_call_is_never_runnable_even_if_its_json_parses() -> None:
    response = accumulate(
        delta(tool_calls=[tool(0, "c1", "write_file", '{"path": "a", "content": ""}')]),
        delta("length"),
    )
    assert response.message.tool_uses[0].complete is False


def test_no_finish_reason_is_incomplete_and_malformed_data_too() -> None:
    with pytest.raises(IncompleteResponseError):
        accumulate(delta(content="half"))
    acc = ChatStreamAccumulator(on_event=lambda _e: None)
    with pytest.raises(IncompleteResponseError):
        acc.feed_sse(ServerSentEvent(event=None, data='{"choices": ['))


def test_a_call_without_a_name_is_incomplete() -> None:
    with pytest.raises(IncompleteResponseError):
        accumulate(delta(tool_calls=[tool(0, "c1", None, "{}")]), delta("tool_calls"))


def test_usage_counts_cached_prompt_tokens_as_cache_reads() -> None:
    usage = usage_from_chat(
        {
            "prompt_tokens": 50,
            "completion_tokens": 5,
            "prompt_tokens_details": {"cached_tokens": 30},
        }
    )
    assert (usage.input_tokens, usage.cache_read_input_tokens, usage.output_tokens) == (20, 30, 5)
    assert usage_from_chat({"prompt_tokens": None}).total_tokens == 0


def test_thinking_is_not_sent_and_an_empty_assistant_turn_is_skipped() -> None:
    history = [
        Message.user("hi"),
        Message(role="assistant", content=(ThinkingBlock("hm", "sig", raw={"type": "thinking"}),)),
        Message.user("again"),
    ]
    assert chat_messages("", history) == [
        {"role": "user", "content": "hi"},
        {"role": "user", "content": "again"},
    ]


def test_text_beside_tool_results_follows_the_tool_messages() -> None:
    history = [
        Message(role="assistant", content=(ToolUseBlock(id="c1", name="x", input={}),)),
        Message(
            role="user",
            content=(ToolResultBlock(tool_use_id="c1", content="ok"), TextBlock("note: hurry")),
        ),
    ]
    assert chat_messages("", history)[1:] == [
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "user", "content": "note: hurry"},
    ]


def test_max_tokens_and_effort_only_when_asked_and_accepted() -> None:
    plain = unknown_model("m")
    request = ModelRequest(system="", messages=[Message.user("hi")], spec=plain, effort=Effort.MAX)
    body = chat_request_body("m", request)
    assert "max_tokens" not in body and "reasoning_effort" not in body and "tools" not in body
    thinker = ModelRequest(
        system="",
        messages=[Message.user("hi")],
        max_tokens=500,
        effort=Effort.XHIGH,
        spec=plain.__class__(
            id="m", efforts=(Effort.LOW, Effort.MEDIUM, Effort.HIGH, Effort.XHIGH)
        ),
    )
    body = chat_request_body("m", thinker)
    assert body["max_tokens"] == 500 and body["reasoning_effort"] == "high"


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(
    calls=st.lists(
        st.dictionaries(st.text(max_size=6), _json_values, max_size=4), min_size=1, max_size=3
    ),
    cuts=st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=5),
)
def test_arguments_split_anywhere_assemble_to_what_the_model_sent(
    calls: list[dict[str, Any]], cuts: list[int]
) -> None:
    chunks = []
    for index, arguments in enumerate(calls):
        text = json.dumps(arguments)
        chunks.append(delta(tool_calls=[tool(index, f"c{index}", "t", "")]))
        start, turn = 0, 0
        while start < len(text):
            size = cuts[turn % len(cuts)]
            chunks.append(delta(tool_calls=[tool(index, None, None, text[start : start + size])]))
            start, turn = start + size, turn + 1
    response = accumulate(*chunks, delta("tool_calls"))
    assert [u.input for u in response.message.tool_uses] == calls
    assert all(u.complete and u.input_problem is None for u in response.message.tool_uses)


@pytest.mark.parametrize(
    "bad",
    [float("inf"), float("-inf"), float("nan"), -5, "120", True, None, [3], 10**400],
    ids=["inf", "-inf", "nan", "negative", "string", "bool", "null", "list", "10**400"],
)
def test_a_usage_value_that_is_not_a_count_counts_as_missing(bad: Any) -> None:
    usage = usage_from_chat(
        {
            "prompt_tokens": bad,
            "completion_tokens": 5,
            "prompt_tokens_details": {"cached_tokens": bad},
        }
    )
    assert (usage.input_tokens, usage.cache_read_input_tokens, usage.output_tokens) == (0, 0, 5)
    usage = usage_from_chat({"prompt_tokens": 40, "completion_tokens": bad})
    assert (usage.input_tokens, usage.output_tokens) == (40, 0)


def test_usage_from_json_that_python_reads_as_infinity_or_nan() -> None:
    acc = ChatStreamAccumulator(on_event=lambda _e: None)
    acc.feed_sse(ServerSentEvent(event=None, data=json.dumps(delta("stop", content="ok"))))
    usage = '{"choices": [], "usage": {"prompt_tokens": 1e999, "completion_tokens": NaN}}'
    acc.feed_sse(ServerSentEvent(event=None, data=usage))
    response = acc.result()
    assert response.usage.total_tokens == 0 and response.message.text == "ok"
