"""Automatic compaction in a task: when a response reports a context above `auto_compact_at`
of the window, one summary request (no tools, the conversation as a transcript) replaces, in
what the model is sent, everything before the compaction point; the history keeps it all."""

from __future__ import annotations

from pathlib import Path

from agentcli.compaction_record import SUMMARY_HEADER, Trigger
from agentcli.context.compaction import CompactionSettings
from agentcli.context.handoff import HANDOFF_PROMPT
from agentcli.errors import ModelError
from agentcli.events import CompactionFinished, CompactionStarted, ContextFilling
from agentcli.messages import Message, ToolResultBlock, ToolUseBlock, pairing_problems
from agentcli.model import ModelRequest, ModelResponse
from agentcli.store import MemoryJournal
from agentcli.terminal_reason import TerminalReason
from agentcli.testing import FunctionModel, respond, text
from agentcli.usage import Usage
from tests.long.harness import WINDOW, conversation
from tests.long.scripts import SUMMARY, Worker, sent_tokens

THRESHOLD = WINDOW * 0.85


def call_ids(messages: tuple[Message, ...] | list[Message]) -> list[str]:
    return [b.id for m in messages for b in m.content if isinstance(b, ToolUseBlock)]


async def test_compacts_when_a_response_passes_the_threshold_and_goes_on_past_the_window(
    workspace: Path,
) -> None:
    worker = Worker(turns=60)
    talk = conversation(workspace, worker.model())
    result = await talk.manager.run_task("read every file")
    assert result.reason is TerminalReason.COMPLETED, result.error
    history = talk.manager.messages
    # Without compaction the last request would have been several windows long.
    whole = sum(len(str(m.to_wire())) for m in history) // 4
    assert whole > 3 * WINDOW
    assert result.compactions == len(worker.summaries) >= 3
    # Each compaction came right after the first response over the threshold, never earlier.
    reported = [sent_tokens(r) + 10 for r in worker.requests]
    started = talk.of(CompactionStarted)
    assert [s.trigger for s in started] == ["auto"] * len(started)
    for event in started:
        assert event.tokens_before > THRESHOLD
    assert all(size <= WINDOW for size in reported)
    assert result.usage.input_tokens == sum(sent_tokens(r) for r in worker.requests) + 500 * len(
        worker.summaries
    )


async def test_the_request_after_a_compaction_is_the_summary_the_pinned_items_and_recent_turns(
    workspace: Path,
) -> None:
    worker = Worker(turns=30)
    talk = conversation(workspace, worker.model())
    await talk.manager.run_task("read every file, then say done")
    history = list(talk.manager.messages)
    (first, *_rest) = talk.of(CompactionFinished)
    point = first.messages_compacted
    after = next(r for r in worker.requests if r.messages[0].text.startswith(SUMMARY_HEADER))
    sent = list(after.messages)
    summary = sent[0]
    assert summary.role == "user"
    assert f"<summary>\n{SUMMARY}\n</summary>" in summary.text
    assert '<pinned kind="task" title="The current task, as the user gave it">' in summary.text
    assert "read every file, then say done" in summary.text
    # Then exactly the history from the point on: the recent turns, as they are.
    assert sent[1:] == history[point : point + len(sent) - 1]
    assert sent[1].role == "assistant"
    assert call_ids(history[point:])[: len(call_ids(sent[1:]))] == call_ids(sent[1:])
    # Nothing older: no call or result from before the point is sent.
    older = set(call_ids(history[:point]))
    assert older
    assert not older & set(call_ids(sent))
    results = {b.tool_use_id for m in sent for b in m.content if isinstance(b, ToolResultBlock)}
    assert not older & results
    # keep_recent = 2: the point is the 2nd most recent assistant message when it happened.
    assistants_before = [i for i, m in enumerate(history[: point + 4]) if m.role == "assistant"]
    assert point in assistants_before


async def test_the_summary_request_offers_no_tools_and_sends_a_transcript(
    workspace: Path,
) -> None:
    worker = Worker(turns=30)
    talk = conversation(workspace, worker.model())
    await talk.manager.run_task("read every file")
    request = worker.summaries[0]
    assert request.tools == ()
    (message,) = request.messages
    assert message.role == "user"
    assert not message.tool_uses and not message.tool_results
    assert message.text.startswith("<transcript>\n[user]\nread every file")
    assert "[tool call dump {" in message.text
    assert "[tool result]" in message.text
    assert HANDOFF_PROMPT in message.text
    assert "- The current task, as the user gave it" in message.text


async def test_every_request_keeps_calls_and_results_together(workspace: Path) -> None:
    for keep in (1, 2, 3, 5):
        worker = Worker(turns=40)
        talk = conversation(workspace, worker.model(), keep_recent=keep)
        result = await talk.manager.run_task("go")
        assert result.compactions >= 1
        for request in worker.requests:
            assert pairing_problems(request.messages) == []
            assert request.messages[0].role == "user"
        for event in talk.of(CompactionFinished):
            assert talk.manager.messages[event.messages_compacted].role == "assistant"


async def test_the_history_and_journal_keep_everything(workspace: Path) -> None:
    journal = MemoryJournal()
    worker = Worker(turns=30)
    talk = conversation(workspace, worker.model(), journal=journal)
    await talk.manager.run_task("read every file")
    assert journal.messages == list(talk.manager.messages)
    assert len(call_ids(journal.messages)) == 29
    (record, *_) = journal.compactions
    assert record.trigger is Trigger.AUTO
    assert record.summary == SUMMARY
    assert record.usage == Usage(input_tokens=500, output_tokens=50)
    assert record.tokens_before > THRESHOLD > record.tokens_after
    assert record.task_id is not None


async def test_a_warning_once_the_context_passes_warn_at(workspace: Path) -> None:
    worker = Worker(turns=30)
    talk = conversation(workspace, worker.model())
    await talk.manager.run_task("go")
    warnings = talk.of(ContextFilling)
    # Said once per filling: after each compaction it may be said again.
    assert 1 <= len(warnings) <= len(talk.of(CompactionFinished)) + 1
    assert warnings[0].tokens >= WINDOW * 0.75
    assert warnings[0].compact_at == int(THRESHOLD)


async def test_a_failed_summary_is_one_notice_and_never_a_loop(workspace: Path) -> None:
    def failing(request: ModelRequest) -> ModelResponse:
        raise ModelError("overloaded for good")

    worker = Worker(turns=40, summary=failing)
    talk = conversation(workspace, worker.model())
    result = await talk.manager.run_task("go")
    assert len(worker.summaries) == 1
    failed = [n for n in talk.notices() if n.startswith("no compaction (auto)")]
    assert failed == ["no compaction (auto): the summary request failed: overloaded for good"]
    assert [e.error for e in talk.of(CompactionFinished)] == [
        "the summary request failed: overloaded for good"
    ]
    assert result.compactions == 0
    # The task went on with what is sent unchanged (this model has no window of its own).
    assert result.reason is TerminalReason.COMPLETED


async def test_empty_refused_and_overlong_summaries_fail(workspace: Path) -> None:
    answers = {
        "empty": lambda _r: respond(text(" "), usage=Usage(input_tokens=5)),
        "refusal": lambda _r: respond(text("no"), stop_reason="refusal"),
        "cut": lambda _r: respond(text("half a summ"), stop_reason="max_tokens"),
        "long": lambda _r: "x" * 100_000,
    }
    expected = {
        "empty": "the summary came back empty",
        "refusal": "the model declined to write the summary (refusal)",
        "cut": "the summary was cut at the model's output limit",
        "long": "the summary is over its budget of 20,000 tokens (≈25,000)",
    }
    for name, answer in answers.items():
        worker = Worker(turns=30, summary=answer)
        talk = conversation(workspace, worker.model())
        result = await talk.manager.run_task("go")
        assert result.compactions == 0
        assert f"no compaction (auto): {expected[name]}" in talk.notices(), name
        assert len(worker.summaries) == 1


async def test_a_summary_request_that_fails_counts_in_the_usage(workspace: Path) -> None:
    worker = Worker(turns=30, summary=lambda _r: respond(text(""), usage=Usage(input_tokens=7_000)))
    talk = conversation(workspace, worker.model())
    result = await talk.manager.run_task("go")
    assert result.usage.input_tokens == sum(sent_tokens(r) for r in worker.requests) + 7_000


async def test_compactions_that_make_no_room_stop_after_three(workspace: Path) -> None:
    # Each result (the 30,000 characters of the output cap) alone is over the threshold: no
    # compaction brings the context below it.
    worker = Worker(turns=12, result_chars=40_000)
    talk = conversation(workspace, worker.model(), window=8_000)
    result = await talk.manager.run_task("go")
    assert len(worker.summaries) == 3
    assert result.compactions == 3
    stopped = [n for n in talk.notices() if n.startswith("auto-compaction stopped")]
    assert stopped == [
        "auto-compaction stopped for this task: 3 compactions in a row left the context above "
        "its threshold"
    ]


async def test_at_most_one_compaction_per_model_turn(workspace: Path) -> None:
    worker = Worker(turns=40)
    talk = conversation(workspace, worker.model())
    await talk.manager.run_task("go")
    kinds = [type(e).__name__ for e in talk.events]
    between = "".join(
        "C" if k == "CompactionStarted" else "T" if k == "TurnStarted" else "" for k in kinds
    )
    assert "CC" not in between


async def test_turned_off_it_never_compacts(workspace: Path) -> None:
    for settings in (CompactionSettings(auto=False), CompactionSettings(auto_at=0)):
        worker = Worker(turns=30)
        talk = conversation(workspace, worker.model(), compaction=settings)
        result = await talk.manager.run_task("go")
        assert worker.summaries == []
        assert result.compactions == 0


async def test_a_cheaper_model_can_write_the_summary(workspace: Path) -> None:
    worker = Worker(turns=30)
    cheap: list[ModelRequest] = []

    def summarize(request: ModelRequest) -> ModelResponse:
        cheap.append(request)
        return respond(text("cheap summary"), usage=Usage(input_tokens=1_000, output_tokens=100))

    summarizer = FunctionModel(summarize, model="claude-haiku-4-5")
    talk = conversation(workspace, worker.model(), summarizer=summarizer)
    result = await talk.manager.run_task("go")
    assert worker.summaries == []
    assert len(cheap) == result.compactions >= 1
    record = talk.manager.context.compaction
    assert record is not None and record.model == "claude-haiku-4-5"
    # Priced at Haiku 4.5's rates ($1 / $5 per MTok): 1,000 in, 100 out.
    assert record.cost_usd == 0.0015


async def test_a_paused_server_tool_turn_is_never_compacted_in_the_middle(workspace: Path) -> None:
    # A pause_turn response's usage sums the server's own iterations (a recorded web search
    # reports 404,500 input tokens): the turn goes on first, and is judged once it ended.
    answers = [
        respond(text("searching"), stop_reason="pause_turn", usage=Usage(input_tokens=404_500)),
        respond(text("found it"), usage=Usage(input_tokens=1_000)),
    ]
    model = FunctionModel(lambda _request: answers.pop(0))
    talk = conversation(workspace, model)
    result = await talk.manager.run_task("search the web")
    assert result.reason is TerminalReason.COMPLETED
    assert result.compactions == 0
    assert not talk.of(CompactionStarted)
