"""The context view: old, large tool results are sent as stubs once the context passes the
threshold; the history, the journal, assistant messages and tool_use/tool_result pairing are
never changed."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcli.context import ContextSettings, ContextView, stub_text
from agentcli.conversation import ConversationManager
from agentcli.errors import ModelError, UsageError
from agentcli.events import Event, Notice, discard
from agentcli.loop import LoopSettings, QueryLoop
from agentcli.messages import (
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    block_from_wire,
    pairing_problems,
)
from agentcli.model import ModelRequest, ModelResponse
from agentcli.permissions import NonInteractivePrompter, PermissionMode
from agentcli.permissions.basic import ModePolicy
from agentcli.session.options import SessionOptions
from agentcli.store import MemoryJournal
from agentcli.terminal_reason import TerminalReason
from agentcli.testing import FunctionModel, ScriptedModel, respond, text, thinking, tool_use
from agentcli.tools.base import Risk, Tool, ToolContext, ToolInput, ToolOutput
from agentcli.tools.runtime import ToolRuntime
from agentcli.trust import set_trusted
from agentcli.ui.run import open_run_session
from agentcli.usage import Usage

SETTINGS = ContextSettings(window_tokens=10_000, elide_at=0.5, keep_recent=2, min_chars=1_000)


class DumpInput(ToolInput):
    path: str
    size: int


class Dump(Tool[DumpInput]):
    name = "dump"
    description = "returns `size` characters"
    input_model = DumpInput
    risk = Risk.READ

    async def call(self, args: DumpInput, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(text=args.path[0] * args.size)


def make_loop(model: Any, workspace: Path, events: list[Event], view: ContextView) -> QueryLoop:
    journal = MemoryJournal()
    runtime = ToolRuntime(
        [Dump()],
        ctx=ToolContext(workspace=workspace, data_dir=workspace.parent / "data"),
        policy=ModePolicy(mode=PermissionMode.DEFAULT),
        prompter=NonInteractivePrompter(),
        journal=journal,
        events=events.append,
    )
    return QueryLoop(
        model=model,
        runtime=runtime,
        journal=journal,
        system="sys",
        events=events.append,
        settings=LoopSettings(),
        context=view,
    )


def sent_tokens(request: ModelRequest) -> int:
    """A stand-in tokenizer: 4 characters of what was sent make a token."""
    return sum(len(str(m.to_wire())) for m in request.messages) // 4


def dumping(
    sizes: list[int] | int, *, result_chars: int = 4_000, model: str = "claude-sonnet-4-5"
) -> FunctionModel:
    """Turn n calls dump(path=f"f{n}.py") and reports a context of sizes[n] tokens (with an int
    for `sizes`: that many turns, each reporting what it was sent); the last turn ends. Each
    response starts with a thinking block. The default model does not bind thinking blocks to
    the transcript (see `test_a_binding_model_gets_no_thinking_from_before_an_elision`)."""
    turns = sizes if isinstance(sizes, int) else len(sizes)

    def answer(request: ModelRequest) -> ModelResponse:
        turn = sum(1 for m in request.messages if m.role == "assistant")
        size = sent_tokens(request) if isinstance(sizes, int) else sizes[turn]
        usage = Usage(input_tokens=size, output_tokens=10)
        if turn + 1 >= turns:
            return respond(text("done"), usage=usage)
        call = tool_use("dump", {"path": f"f{turn}.py", "size": result_chars}, id=f"t{turn}")
        return respond(thinking(f"turn {turn}", signature=f"sig{turn}"), call, usage=usage)

    return FunctionModel(answer, model=model)


def stubs(messages: tuple[Message, ...] | list[Message]) -> list[str]:
    return [r.tool_use_id for m in messages for r in m.tool_results if r.content.startswith("[")]


async def test_nothing_is_elided_below_the_threshold(workspace: Path) -> None:
    model = dumping([1_000] * 8)
    events: list[Event] = []
    outcome = await make_loop(model, workspace, events, ContextView(SETTINGS)).run(
        [Message.user("go")]
    )
    assert outcome.reason is TerminalReason.COMPLETED
    for request in model.requests:
        assert list(request.messages) == outcome.messages[: len(request.messages)]
    assert not [e for e in events if isinstance(e, Notice)]


async def test_past_the_threshold_old_results_become_stubs_naming_the_call(
    workspace: Path,
) -> None:
    # Turn 4's response reports 6k tokens, over half of the 10k window.
    model = dumping([1_000, 2_000, 3_000, 4_000, 6_000, 1_000, 2_000])
    events: list[Event] = []
    outcome = await make_loop(model, workspace, events, ContextView(SETTINGS)).run(
        [Message.user("go")]
    )
    assert outcome.reason is TerminalReason.COMPLETED
    sent = [list(r.messages) for r in model.requests]
    assert [stubs(m) for m in sent[:5]] == [[]] * 5
    # Request 5 follows the 6k response: 5 result messages so far, the last 2 are kept.
    assert stubs(sent[5]) == ["t0", "t1", "t2"]
    assert stubs(sent[6]) == ["t0", "t1", "t2"]
    stub = sent[5][2].tool_results[0]
    assert stub.content == (
        "[elided to save context: dump(path='f0.py', size=4000) returned 4,000 chars; "
        "call the tool again if you need it]"
    )
    notices = [e.message for e in events if isinstance(e, Notice)]
    assert len(notices) == 1
    assert notices[0].startswith("the context reached 6,010 tokens: 3 older tool results (")
    for messages in sent:
        assert pairing_problems(messages) == []


async def test_the_watermark_moves_in_batches(workspace: Path) -> None:
    """With sizes measured from what is sent: a move brings the context well under the
    threshold, so the sent prefix stays the same for several turns (the prompt cache hits)."""
    model = dumping(16)
    events: list[Event] = []
    outcome = await make_loop(model, workspace, events, ContextView(SETTINGS)).run(
        [Message.user("go")]
    )
    assert outcome.reason is TerminalReason.COMPLETED
    notices = [e for e in events if isinstance(e, Notice)]
    moves = [
        n
        for n, (a, b) in enumerate(pairwise(model.requests))
        if stubs(a.messages) != stubs(b.messages)
    ]
    assert len(notices) == len(moves) >= 2
    assert all(b - a >= 3 for a, b in pairwise(moves))
    assert max(sent_tokens(r) for r in model.requests) < SETTINGS.window_tokens * 0.75
    for n, (request, after) in enumerate(pairwise(model.requests)):
        assert pairing_problems(request.messages) == []
        if n not in moves:  # between moves, each request extends the one before
            assert after.messages[: len(request.messages)] == request.messages
    assert sent_tokens(ModelRequest(system="", messages=outcome.messages)) > 15_000


async def test_history_and_journal_keep_every_result_in_full(workspace: Path) -> None:
    model = dumping([6_000] * 8)
    events: list[Event] = []
    loop = make_loop(model, workspace, events, ContextView(SETTINGS))
    outcome = await loop.run([Message.user("go")])
    results = [r for m in outcome.messages for r in m.tool_results]
    assert len(results) == 7 and all(len(r.content) == 4_000 for r in results)
    assert isinstance(loop.journal, MemoryJournal)
    assert [r for m in loop.journal.messages for r in m.tool_results] == results
    assert stubs(model.requests[-1].messages) == ["t0", "t1", "t2", "t3", "t4"]


async def test_assistant_messages_go_back_byte_identical(workspace: Path) -> None:
    model = dumping([6_000] * 6)
    loop = make_loop(model, workspace, [], ContextView(SETTINGS))
    outcome = await loop.run([Message.user("go")])
    final = list(model.requests[-1].messages)
    assert len(final) == len(outcome.messages) - 1
    for sent, kept in zip(final, outcome.messages, strict=False):
        if sent.role == "assistant":
            assert sent is kept
            assert sent.to_wire()["content"][0] == {
                "type": "thinking",
                "thinking": kept.content[0].thinking,  # type: ignore[union-attr]
                "signature": kept.content[0].signature,  # type: ignore[union-attr]
            }


async def test_a_binding_model_gets_no_thinking_from_before_an_elision(workspace: Path) -> None:
    """Claude Opus 5.5 accepts a thinking block back only while everything before it is what it
    was when the block was produced. The oracle is that rule itself: every thinking block sent
    is preceded by exactly the messages the request that produced it carried."""
    model = dumping([6_000] * 7, model="claude-opus-5-5")
    loop = make_loop(model, workspace, [], ContextView(SETTINGS))
    outcome = await loop.run([Message.user("go")])
    requests = [[m.to_wire() for m in r.messages] for r in model.requests]
    sent_back = dropped = 0
    for sent in requests:
        for index, message in enumerate(sent):
            if message["role"] != "assistant":
                continue
            kept = outcome.messages[index].to_wire()["content"]
            if message["content"][0]["type"] != "thinking":
                assert message["content"] == kept[1:]  # left out, nothing else changed
                dropped += 1
                continue
            assert message["content"] == kept  # byte for byte
            producing = requests[(index - 1) // 2]
            assert sent[:index] == producing[:index]
            sent_back += 1
    assert stubs(model.requests[-1].messages)  # results were elided
    assert sent_back and dropped


async def test_the_watermark_only_moves_forward(workspace: Path) -> None:
    sizes = [6_000, 1_000, 9_000, 500, 7_000, 800, 6_000, 100, 9_999, 10]
    watermarks: list[int] = []
    view = ContextView(SETTINGS)

    inner = dumping(sizes)

    async def watching(request: ModelRequest) -> ModelResponse:
        watermarks.append(view.watermark)
        return await inner.complete(request, discard)

    await make_loop(FunctionModel(watching), workspace, [], view).run([Message.user("go")])
    assert watermarks == sorted(watermarks) and watermarks[-1] > 0


async def test_short_results_and_text_blocks_are_left_alone(workspace: Path) -> None:
    model = dumping([6_000] * 8, result_chars=999)
    events: list[Event] = []
    outcome = await make_loop(model, workspace, events, ContextView(SETTINGS)).run(
        [Message.user("go")]
    )
    assert list(model.requests[-1].messages) == outcome.messages[:-1]
    assert not [e for e in events if isinstance(e, Notice)]


def test_stub_keeps_the_id_and_the_error_flag_and_cuts_long_inputs() -> None:
    call = ToolUseBlock(id="t1", name="write_file", input={"path": "a.py", "content": "y" * 500})
    result = ToolResultBlock(tool_use_id="t1", content="e" * 5_000, is_error=True)
    history = [
        Message.user("go"),
        Message(role="assistant", content=(call,)),
        Message(role="user", content=(result,)),
        Message(role="assistant", content=(ToolUseBlock(id="t2", name="x", input={}),)),
        Message(role="user", content=(ToolResultBlock(tool_use_id="t2", content="ok"),)),
    ]
    view = ContextView(ContextSettings(keep_recent=1))
    view.observe(history[:4], Usage(input_tokens=150_000))
    elision = view.advance(history)
    assert elision is not None and elision.results == 1
    assert elision.chars_saved == 5_000 - len(stub_text(call, result))
    sent = view.messages(history)[2].tool_results[0]
    assert sent.tool_use_id == "t1" and sent.is_error
    assert sent.content.startswith("[elided to save context: write_file(path='a.py', content='yyy")
    assert "...) failed with 5,000 chars;" in sent.content
    assert len(sent.content) < 300


async def test_a_request_refused_as_too_long_is_sent_again_with_more_elided(
    workspace: Path,
) -> None:
    """E.g. the first request after a resume: nothing has reported a size yet."""
    history: list[Message] = [Message.user("go")]
    for n in range(4):
        history.append(Message(role="assistant", content=(ToolUseBlock(f"t{n}", "dump", {}),)))
        history.append(Message(role="user", content=(ToolResultBlock(f"t{n}", "r" * 5_000),)))
    history.append(Message.user("and now?"))
    too_long = ModelError(
        "400 invalid_request_error: prompt is too long",
        reason=TerminalReason.CONTEXT_EXHAUSTED,
    )
    model = ScriptedModel([too_long, respond(text("fine"))])
    events: list[Event] = []
    outcome = await make_loop(model, workspace, events, ContextView(SETTINGS)).run(history)
    assert outcome.reason is TerminalReason.COMPLETED
    assert stubs(model.requests[0].messages) == []
    assert stubs(model.requests[1].messages) == ["t0", "t1"]
    saved = 2 * (5_000 - len(stub_text(history[1].tool_uses[0], history[2].tool_results[0])))
    assert [e.message for e in events if isinstance(e, Notice)] == [
        f"the request was too long for the model: 2 older tool results ({saved:,} chars) are "
        "no longer sent to the model (the session keeps them in full)"
    ]


async def test_too_long_with_nothing_left_to_elide_ends_the_task(workspace: Path) -> None:
    too_long = ModelError("prompt is too long", reason=TerminalReason.CONTEXT_EXHAUSTED)
    model = ScriptedModel([too_long])
    outcome = await make_loop(model, workspace, [], ContextView(SETTINGS)).run([Message.user("go")])
    assert outcome.reason is TerminalReason.CONTEXT_EXHAUSTED
    assert len(model.requests) == 1


def test_a_swapped_history_starts_the_watermark_over() -> None:
    def history(tag: str) -> list[Message]:
        out = [Message.user(tag)]
        for n in range(4):
            out.append(Message(role="assistant", content=(ToolUseBlock(f"t{n}", "dump", {}),)))
            out.append(Message(role="user", content=(ToolResultBlock(f"t{n}", tag * 2_000),)))
        return out

    first = history("a")
    view = ContextView(SETTINGS)
    view.observe(first[:-1], Usage(input_tokens=9_000))
    assert view.advance(first) is not None and view.watermark == 6
    # An equal history made of other message objects (e.g. loaded by /resume).
    second = history("a")
    assert view.messages(second) == second
    assert view.watermark == 0
    assert view.advance(second) is None


async def test_the_watermark_carries_over_between_tasks_of_a_session(workspace: Path) -> None:
    sizes = iter([6_000] * 5 + [6_000] * 2)

    def answer(request: ModelRequest) -> ModelResponse:
        size = next(sizes)
        last = request.messages[-1]
        if last.tool_results or last.text.startswith("task"):
            turn = sum(1 for m in request.messages if m.role == "assistant")
            if turn not in (4, 6):
                call = tool_use("dump", {"path": f"f{turn}", "size": 3_000}, id=f"t{turn}")
                return respond(call, usage=Usage(input_tokens=size))
        return respond(text("done"), usage=Usage(input_tokens=size))

    model = FunctionModel(answer)
    manager = ConversationManager(
        model=model,
        tools=[Dump()],
        tool_context=ToolContext(workspace=workspace, data_dir=workspace.parent / "data"),
        policy=ModePolicy(mode=PermissionMode.DEFAULT),
        prompter=NonInteractivePrompter(),
        journal=MemoryJournal(),
        system="sys",
        events=discard,
        context=ContextView(SETTINGS),
    )
    await manager.run_task("task one")
    moved = manager.context.watermark
    assert moved > 0
    await manager.run_task("task two")
    # The second task's first request already elides what the first task's last did.
    first_of_two = next(r for r in model.requests if r.messages[-1].text == "task two")
    assert len(stubs(first_of_two.messages)) >= 1
    assert manager.context.watermark >= moved
    assert all(pairing_problems(r.messages) == [] for r in model.requests)


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('[context]\nwindow_tokens = "big"\n', "context.window_tokens"),
        ("[context]\nwindow_tokens = 0\n", "context.window_tokens"),
        ("[context]\nelide_at = 0\n", "context.elide_at"),
        ("[context]\nelide_at = 1.5\n", "context.elide_at"),
        ('[context]\nelide_at = "half"\n', "context.elide_at"),
        ("[context]\nkeep_recent = 0\n", "context.keep_recent"),
        ("[context]\nkeep_recent = true\n", "context.keep_recent"),
    ],
)
def test_bad_context_config_is_a_usage_error(workspace: Path, toml: str, key: str) -> None:
    path = workspace / ".agentcli" / "config.toml"
    path.parent.mkdir()
    path.write_text(toml)
    set_trusted(workspace, True)
    with pytest.raises(UsageError) as caught:
        open_run_session(
            SessionOptions(task="x", cwd=workspace),
            discard,
            model_factory=lambda _: ScriptedModel([]),
        )
    assert f"`{key}`" in caught.value.message and str(path) in caught.value.message


def test_context_config_is_used_even_from_an_untrusted_workspace(workspace: Path) -> None:
    """It changes only what the model is sent, never what may run."""
    path = workspace / ".agentcli" / "config.toml"
    path.parent.mkdir()
    path.write_text("[context]\nwindow_tokens = 1000000\nelide_at = 0.8\nkeep_recent = 5\n")
    manager = open_run_session(
        SessionOptions(task="x", cwd=workspace), discard, model_factory=lambda _: ScriptedModel([])
    )
    assert manager.conversation.context.settings == ContextSettings(
        window_tokens=1_000_000, elide_at=0.8, keep_recent=5
    )


def test_settings_reject_values_that_would_hide_unread_results() -> None:
    with pytest.raises(ValueError, match="keep_recent"):
        ContextSettings(keep_recent=0)


# Property: whatever the history and whenever the watermark moves, what is sent pairs every
# tool_use with its result, keeps assistant messages and text blocks as the same objects, and
# changes nothing in the history.

_inputs = st.dictionaries(
    st.sampled_from(["path", "command", "pattern", "content"]),
    st.text(max_size=120) | st.integers(),
    max_size=3,
)
_result = st.tuples(st.integers(0, 3_000), st.booleans())
_round = st.tuples(
    st.lists(st.tuples(st.sampled_from(["read_file", "bash", "grep"]), _inputs), max_size=3),
    st.lists(_result, min_size=3, max_size=3),
    st.booleans(),  # a nudge text block after the results
    st.booleans(),  # a thinking block
    st.sampled_from(["observe", "advance", "make_room", "none"]),
    st.integers(0, 20_000),
)


def _append_round(history: list[Message], n: int, spec: Any) -> None:
    calls, results, nudge, think, _op, _size = spec
    blocks: list[Any] = []
    if think:
        blocks.append(block_from_wire(thinking(f"t{n}", signature=f"s{n}==")))
    blocks.append(block_from_wire(text(f"round {n}")))
    uses = [ToolUseBlock(f"c{n}_{k}", name, args) for k, (name, args) in enumerate(calls)]
    history.append(Message(role="assistant", content=(*blocks, *uses)))
    answers: list[Any] = [
        ToolResultBlock(u.id, "x" * size, is_error=error)
        for u, (size, error) in zip(uses, results, strict=False)
    ]
    if nudge or not answers:
        answers.append(TextBlock(text=f"nudge {n}"))
    history.append(Message(role="user", content=tuple(answers)))


def _check_sent(view: ContextView, history: list[Message]) -> None:
    sent = view.messages(history)
    assert pairing_problems(sent) == []
    assert len(sent) == len(history)
    for index, (out, kept) in enumerate(zip(sent, history, strict=True)):
        if kept.role == "assistant" or index >= view.watermark:
            assert out is kept
            continue
        for a, b in zip(out.content, kept.content, strict=True):
            if not isinstance(b, ToolResultBlock) or a is b:
                assert a is b
                continue
            assert isinstance(a, ToolResultBlock)
            assert (a.tool_use_id, a.is_error) == (b.tool_use_id, b.is_error)
            assert len(b.content) >= view.settings.min_chars > 0
            assert a.content.startswith("[elided") and len(a.content) < len(b.content)


@settings(max_examples=100, deadline=None)
@given(
    rounds=st.lists(_round, min_size=1, max_size=12),
    keep_recent=st.integers(1, 4),
    min_chars=st.integers(1, 2_000),
)
def test_sent_messages_keep_pairing_and_assistant_bytes(
    rounds: list[Any], keep_recent: int, min_chars: int
) -> None:
    view = ContextView(
        ContextSettings(window_tokens=10_000, keep_recent=keep_recent, min_chars=min_chars)
    )
    history: list[Message] = [Message.user("go")]
    watermarks = [0]
    for n, spec in enumerate(rounds):
        _append_round(history, n, spec)
        wire = [m.to_wire() for m in history]
        op, size = spec[4], spec[5]
        if op in ("observe", "advance"):
            view.observe(history[:-1], Usage(input_tokens=size))
        if op == "advance":
            view.advance(history)
        elif op == "make_room":
            view.make_room(history)
        _check_sent(view, history)
        assert [m.to_wire() for m in history] == wire
        watermarks.append(view.watermark)
    assert watermarks == sorted(watermarks)


async def test_an_elided_request_still_caches_up_to_its_latest_turn(workspace: Path) -> None:
    from agentcli.model.anthropic import build_request_params

    model = dumping([6_000] * 6)
    await make_loop(model, workspace, [], ContextView(SETTINGS)).run([Message.user("go")])
    request = model.requests[-1]
    assert stubs(request.messages)
    body = build_request_params("claude-sonnet-4-5", request)
    marked = [
        (i, j)
        for i, message in enumerate(body["messages"])
        for j, block in enumerate(message["content"])
        if "cache_control" in block
    ]
    last = len(body["messages"]) - 1
    assert marked == [(last, len(body["messages"][last]["content"]) - 1)]
    assert pairing_problems(body["messages"]) == []
