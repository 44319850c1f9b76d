"""Where a compaction cuts, and what `/context` reports, on histories made up at random: the
point is always an assistant message, so every call and its result stay together (checked by
`pairing_problems`, the oracle the fake servers use too), and nothing before the point is
sent."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agentcli.catalogue import CATALOGUE
from agentcli.compaction_record import CompactionRecord, PinnedItem, Trigger
from agentcli.context import ContextSettings, ContextView
from agentcli.context.compaction import CompactionSettings, Compactor
from agentcli.context.pins import Pins
from agentcli.context.report import context_report
from agentcli.context.tokens import messages_chars
from agentcli.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, pairing_problems
from agentcli.usage import Usage

TURNS = st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=25)
"""Each model turn: how many tool calls it makes (0: it answers, and the user writes next)."""


def history_of(turns: list[int], prefix: str = "") -> list[Message]:
    messages = [Message.user("start")]
    for n, calls in enumerate(turns):
        uses = tuple(
            ToolUseBlock(id=f"{prefix}t{n}-{c}", name="dump", input={"c": c}) for c in range(calls)
        )
        messages.append(Message(role="assistant", content=(TextBlock(text=f"turn {n}"), *uses)))
        if calls:
            results = tuple(
                ToolResultBlock(tool_use_id=u.id, content="x" * (50 * (c + 1)))
                for c, u in enumerate(uses)
            )
            messages.append(Message(role="user", content=results))
        else:
            messages.append(Message.user(f"next {n}"))
    return messages


def compactor(view: ContextView, keep: int) -> Compactor:
    return Compactor(
        view=view,
        settings=CompactionSettings(keep_recent=keep),
        pins=Pins(),
        record=lambda _record: None,
        events=lambda _event: None,
        catalogue=CATALOGUE,
    )


def record_at(point: int, n: int = 0) -> CompactionRecord:
    return CompactionRecord(
        id=f"c{n}",
        point=point,
        summary="summary",
        pinned=(PinnedItem(kind="task", title="The task", text="start"),),
        model="m",
        trigger=Trigger.AUTO,
        tokens_before=1,
        tokens_after=1,
    )


@settings(max_examples=200, deadline=None)
@given(turns=TURNS, keep=st.integers(min_value=1, max_value=5), again=TURNS)
def test_the_point_is_an_assistant_message_and_every_request_pairs(
    turns: list[int], keep: int, again: list[int]
) -> None:
    history = history_of(turns)
    view = ContextView(ContextSettings(window_tokens=1_000_000, keep_recent=keep))
    cut = compactor(view, keep)
    for round_number in range(2):  # a compaction, then another one on a longer history
        point = cut._point(history, 0.25)
        assistants = [i for i, m in enumerate(history) if m.role == "assistant"]
        start = view.compaction.point if view.compaction is not None else 0
        turns_since = [i for i in assistants if i >= start]
        if len(turns_since) <= keep:
            assert point is None  # nothing older than the kept turns
        else:
            assert point == turns_since[-keep]
            assert history[point].role == "assistant"
            view.compact(history, record_at(point, round_number))
            sent = view.messages(history)
            assert pairing_problems(sent) == []
            assert sent[1:] == history[point:]
            older = {b.id for m in history[:point] for b in m.tool_uses}
            assert not older & {b.id for m in sent for b in m.tool_uses}
        history = history + history_of(again, prefix=f"r{round_number}")[1:]


def test_a_recorded_point_that_is_not_an_assistant_message_is_refused() -> None:
    history = history_of([1, 0, 2])
    view = ContextView()
    for point in (0, 2, len(history)):
        try:
            view.compact(history, record_at(point))
        except ValueError as exc:
            assert "is not an assistant message" in str(exc)
        else:
            raise AssertionError(f"point {point} was taken")
    assert view.compaction is None


def test_a_swapped_history_drops_the_compaction() -> None:
    history = history_of([1, 1, 1, 1])
    view = ContextView()
    view.compact(history, record_at(3))
    other = history_of([1, 1, 1, 1])  # equal, but not the same messages
    assert view.messages(other) == other
    assert view.compaction is None


def test_the_report_splits_the_system_prompt_and_counts_what_is_sent() -> None:
    history = history_of([1, 1, 0, 2])
    view = ContextView(ContextSettings(window_tokens=100_000))
    system = (
        "base prompt\n\nInstructions (from AGENTS.md / CLAUDE.md files):\n\n"
        '<instructions source="/w/AGENTS.md">\nbe brief\n</instructions>'
    )
    view.compact(history, record_at(3))
    sent = view.messages(history)
    # The response says the request was twice as many tokens as the rule of thumb (4
    # characters a token) would have it.
    reported = (len(system) + messages_chars(sent)) // 2
    view.observe(history, Usage(input_tokens=reported))
    report = context_report(
        view=view, history=history, system=system, instruction_files=(), tools=()
    )
    labels = [part.label for part in report.parts]
    assert labels == [
        "system prompt",
        "instructions: AGENTS.md",
        "tools",
        "summary",
        "pinned: task",
    ]
    assert len(report.messages) == len(sent) - 1  # the summary is a part of its own
    assert report.messages[0].label == "#4 assistant"
    assert report.compacted is not None and report.compacted.startswith(
        "messages 1–3 of the history"
    )
    assert report.reported == reported
    # At the rate the last response gives, the parts add up to what it reported.
    assert abs(report.total - reported) <= len(report.parts) + len(report.messages)
