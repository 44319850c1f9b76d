"""QueryLoop: every terminal reason, budgets, stop reasons and a valid history on every exit."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agentcli.call_records import CallStatus, ToolCallRecord
from agentcli.errors import FatalToolError, ModelError
from agentcli.events import Event, ToolCallFinished
from agentcli.loop import LoopOutcome, LoopSettings, QueryLoop
from agentcli.loop_steps import Nudge, Stop
from agentcli.messages import Message, pairing_problems
from agentcli.model import ModelRequest, ModelResponse
from agentcli.permissions import NonInteractivePrompter, PermissionMode
from agentcli.permissions.basic import ModePolicy
from agentcli.store import MemoryJournal
from agentcli.terminal_reason import TerminalReason
from agentcli.testing import FunctionModel, ScriptedModel, respond, text, tool_use
from agentcli.tools.base import Risk, Tool, ToolContext, ToolInput, ToolOutput
from agentcli.tools.read_file import ReadFile
from agentcli.tools.runtime import ToolRuntime
from agentcli.usage import Budget, Usage


class NoteInput(ToolInput):
    note: str


class WriteNote(Tool[NoteInput]):
    name = "write_note"
    description = "test tool with write risk"
    input_model = NoteInput
    risk = Risk.WRITE

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def call(self, args: NoteInput, ctx: ToolContext) -> ToolOutput:
        self.calls.append(args.note)
        return ToolOutput(text=f"wrote {args.note}")


class SleepInput(ToolInput):
    seconds: float


class Sleep(Tool[SleepInput]):
    name = "sleep"
    description = "test tool that waits"
    input_model = SleepInput
    risk = Risk.READ

    async def call(self, args: SleepInput, ctx: ToolContext) -> ToolOutput:
        await asyncio.sleep(args.seconds)
        return ToolOutput(text="slept")


class Explode(Tool[NoteInput]):
    name = "explode"
    description = "test tool that fails fatally or crashes"
    input_model = NoteInput
    risk = Risk.READ

    async def call(self, args: NoteInput, ctx: ToolContext) -> ToolOutput:
        if args.note == "fatal":
            raise FatalToolError("credentials missing")
        raise RuntimeError("kaboom")


def make_loop(
    model: Any,
    workspace: Path,
    *,
    budget: Budget | None = None,
    mode: PermissionMode = PermissionMode.DEFAULT,
    tools: list[Tool[Any]] | None = None,
    events: list[Event] | None = None,
    observers: tuple[Any, ...] = (),
) -> QueryLoop:
    sink = events.append if events is not None else (lambda _e: None)
    runtime = ToolRuntime(
        tools if tools is not None else [ReadFile(), WriteNote(), Sleep(), Explode()],
        ctx=ToolContext(workspace=workspace, data_dir=workspace.parent / "data"),
        policy=ModePolicy(mode=mode),
        prompter=NonInteractivePrompter(),
        journal=MemoryJournal(),
        events=sink,
    )
    return QueryLoop(
        model=model,
        runtime=runtime,
        journal=MemoryJournal(),
        system="sys",
        events=sink,
        budget=budget or Budget(),
        settings=LoopSettings(),
        observers=observers,
    )


def assert_valid(outcome: LoopOutcome) -> None:
    assert pairing_problems(outcome.messages) == []


async def test_completed_after_a_tool_round(workspace: Path) -> None:
    (workspace / "a.py").write_text("x = 1\n")
    model = ScriptedModel(
        [
            respond(text("look"), tool_use("read_file", {"path": "a.py"}, id="t1")),
            respond(text("x is 1")),
        ]
    )
    outcome = await make_loop(model, workspace).run([Message.user("what is x")])
    assert outcome.reason is TerminalReason.COMPLETED
    assert outcome.final_text == "x is 1"
    assert_valid(outcome)
    result = outcome.messages[2].tool_results[0]
    assert "1\tx = 1" in result.content and not result.is_error
    # The second request carried the tool result, paired with the call.
    assert model.requests[1].messages[-1].tool_results[0].tool_use_id == "t1"


async def test_max_turns_is_checked_before_the_call(workspace: Path) -> None:
    model = ScriptedModel([respond(tool_use("read_file", {"path": "missing"})) for _ in range(2)])
    outcome = await make_loop(model, workspace, budget=Budget(max_turns=2)).run(
        [Message.user("go")]
    )
    assert outcome.reason is TerminalReason.MAX_TURNS
    assert len(model.requests) == 2
    assert_valid(outcome)


async def test_token_budget(workspace: Path) -> None:
    big = Usage(input_tokens=600, output_tokens=500)
    model = ScriptedModel(
        [respond(tool_use("read_file", {"path": "x"}), usage=big) for _ in range(3)]
    )
    loop = make_loop(model, workspace, budget=Budget(max_tokens=1000))
    outcome = await loop.run([Message.user("go")])
    assert outcome.reason is TerminalReason.BUDGET_EXCEEDED
    assert len(model.requests) == 1 and loop.usage.total_tokens == 1100


async def test_cost_budget_uses_the_price_table(workspace: Path) -> None:
    usage = Usage(input_tokens=100_000, output_tokens=10_000)  # $0.45 on sonnet-4-5
    steps = [respond(tool_use("read_file", {"path": "x"}), usage=usage) for _ in range(3)]
    model = ScriptedModel(steps, model="claude-sonnet-4-5")
    loop = make_loop(model, workspace, budget=Budget(max_cost_usd=0.8))
    outcome = await loop.run([Message.user("go")])
    assert outcome.reason is TerminalReason.BUDGET_EXCEEDED
    assert len(model.requests) == 2
    assert loop.cost_usd == pytest.approx(0.9)


async def test_unknown_model_cost_is_none(workspace: Path) -> None:
    loop = make_loop(ScriptedModel([respond(text("hi"))], model="mystery-1"), workspace)
    await loop.run([Message.user("go")])
    assert loop.cost_usd is None


async def test_timeout_stops_a_hanging_model_call(workspace: Path) -> None:
    async def hang(_request: ModelRequest) -> ModelResponse:
        await asyncio.sleep(30)
        raise AssertionError("unreachable")

    loop = make_loop(FunctionModel(hang), workspace, budget=Budget(timeout_s=0.2))
    outcome = await asyncio.wait_for(loop.run([Message.user("go")]), 5)
    assert outcome.reason is TerminalReason.TIMEOUT
    assert_valid(outcome)


async def test_timeout_during_a_tool_leaves_a_result_for_every_call(workspace: Path) -> None:
    model = ScriptedModel(
        [
            respond(
                tool_use("sleep", {"seconds": 30}, id="s1"),
                tool_use("read_file", {"path": "x"}, id="r1"),
            )
        ]
    )
    loop = make_loop(model, workspace, budget=Budget(timeout_s=0.3))
    outcome = await asyncio.wait_for(loop.run([Message.user("go")]), 5)
    assert outcome.reason is TerminalReason.TIMEOUT
    assert_valid(outcome)
    results = {r.tool_use_id: r for r in outcome.messages[-1].tool_results}
    assert "time limit" in results["s1"].content and results["s1"].is_error


async def test_cancel_mid_tool_returns_aborted_with_valid_history(workspace: Path) -> None:
    model = ScriptedModel([respond(tool_use("sleep", {"seconds": 30}, id="s1"))])
    loop = make_loop(model, workspace)
    task = asyncio.create_task(loop.run([Message.user("go")]))
    await asyncio.sleep(0.2)
    task.cancel()
    outcome = await asyncio.wait_for(task, 2)
    assert outcome.reason is TerminalReason.ABORTED
    assert_valid(outcome)
    assert "cancelled" in outcome.messages[-1].tool_results[0].content


async def test_refusal_and_context_window(workspace: Path) -> None:
    refused = await make_loop(
        ScriptedModel([respond(text("no"), stop_reason="refusal")]), workspace
    ).run([Message.user("x")])
    assert refused.reason is TerminalReason.REFUSED
    full = await make_loop(
        ScriptedModel([respond(text("..."), stop_reason="model_context_window_exceeded")]),
        workspace,
    ).run([Message.user("x")])
    assert full.reason is TerminalReason.CONTEXT_EXHAUSTED


async def test_model_error_ends_the_task(workspace: Path) -> None:
    model = ScriptedModel([ModelError("401 authentication_error: bad key", status_code=401)])
    outcome = await make_loop(model, workspace).run([Message.user("x")])
    assert outcome.reason is TerminalReason.MODEL_ERROR
    assert outcome.error is not None and "401" in outcome.error


async def test_pause_turn_sends_the_paused_content_back(workspace: Path) -> None:
    server_use = {
        "type": "server_tool_use",
        "id": "srv1",
        "name": "web_search",
        "input": {"query": "q"},
    }
    model = ScriptedModel(
        [
            respond(text("searching"), server_use, stop_reason="pause_turn"),
            respond(text("found it")),
        ]
    )
    outcome = await make_loop(model, workspace).run([Message.user("search")])
    assert outcome.reason is TerminalReason.COMPLETED
    second = model.requests[1].messages
    assert second[-1].role == "assistant"
    assert second[-1].to_wire()["content"][1] == server_use


async def test_truncated_tool_call_is_never_executed(workspace: Path) -> None:
    note = WriteNote()
    cut = respond(tool_use("write_note", {"note": "half"}, id="w1"), stop_reason="max_tokens")
    incomplete = cut.message.content[0]
    object.__setattr__(incomplete, "complete", False)
    model = ScriptedModel([cut, respond(text("ok, smaller"))])
    outcome = await make_loop(model, workspace, mode=PermissionMode.YOLO, tools=[note]).run(
        [Message.user("write")]
    )
    assert note.calls == []
    assert_valid(outcome)
    result = outcome.messages[2].tool_results[0]
    assert result.is_error and "output token limit" in result.content


async def test_text_cut_at_max_tokens_asks_to_continue(workspace: Path) -> None:
    model = ScriptedModel(
        [respond(text("part one"), stop_reason="max_tokens"), respond(text(" part two"))]
    )
    outcome = await make_loop(model, workspace).run([Message.user("essay")])
    assert outcome.reason is TerminalReason.COMPLETED
    assert "cut off" in model.requests[1].messages[-1].text


async def test_three_denials_stop_with_permission_denied(workspace: Path) -> None:
    model = ScriptedModel([respond(tool_use("write_note", {"note": str(n)})) for n in range(3)])
    loop = make_loop(model, workspace)
    outcome = await loop.run([Message.user("write")])
    assert outcome.reason is TerminalReason.PERMISSION_DENIED
    assert len(loop.runtime.denials) == 3
    first = outcome.messages[2].tool_results[0]
    assert "--allow 'write_note'" in first.content
    assert_valid(outcome)


async def test_bad_tool_calls_become_error_results_not_crashes(workspace: Path) -> None:
    model = ScriptedModel(
        [
            respond(
                tool_use("nope", {}, id="a"),
                tool_use("read_file", {"path": 3}, id="b"),
                tool_use("read_file", {"path": "a", "bogus": 1}, id="c"),
                tool_use("read_file", {}, id="d"),
                tool_use("explode", {"note": "x"}, id="e"),
                tool_use("read_file", {"path": "../../etc/passwd"}, id="f"),
                {"type": "tool_use", "id": "g", "name": "read_file", "input": ["a.txt"]},
                {"type": "tool_use", "id": "h", "name": "read_file", "input": "a.txt"},
            ),
            respond(text("sorry")),
        ]
    )
    events: list[Event] = []
    outcome = await make_loop(model, workspace, events=events).run([Message.user("go")])
    assert outcome.reason is TerminalReason.COMPLETED
    results = {r.tool_use_id: r.content for r in outcome.messages[2].tool_results}
    assert "no tool named 'nope'" in results["a"] and "read_file" in results["a"]
    assert "field 'path'" in results["b"]
    assert "unknown field 'bogus'" in results["c"]
    assert "missing required field 'path'" in results["d"]
    assert "internal error in explode: RuntimeError: kaboom" in results["e"]
    assert results["f"].startswith("[permission_denied]")
    assert "must be a JSON object, not an array" in results["g"] and "path" in results["g"]
    assert "must be a JSON object, not a string" in results["h"]
    # What the model sent goes back verbatim, each call answered once.
    assert outcome.messages[1].content[6].to_wire()["input"] == ["a.txt"]
    assert_valid(outcome)
    assert all(e.is_error for e in events if isinstance(e, ToolCallFinished))


async def test_a_path_outside_the_workspace_is_a_listed_denial(workspace: Path) -> None:
    model = ScriptedModel(
        [respond(tool_use("read_file", {"path": "../../etc/passwd"})), respond(text("ok"))]
    )
    loop = make_loop(model, workspace, mode=PermissionMode.YOLO)
    outcome = await loop.run([Message.user("read it")])
    assert outcome.reason is TerminalReason.COMPLETED
    (denial,) = loop.runtime.denials
    assert denial["tool"] == "read_file" and denial["input"] == {"path": "../../etc/passwd"}
    assert "outside the workspace" in denial["reason"]


async def test_a_tool_call_id_reused_from_an_earlier_turn_ends_the_task_cleanly(
    workspace: Path,
) -> None:
    (workspace / "a.txt").write_text("a\n")
    model = ScriptedModel(
        [
            respond(tool_use("read_file", {"path": "a.txt"}, id="same")),
            respond(tool_use("write_note", {"note": "x"}, id="same")),
        ]
    )
    note = WriteNote()
    loop = make_loop(model, workspace, mode=PermissionMode.YOLO, tools=[ReadFile(), note])
    outcome = await loop.run([Message.user("go")])
    assert outcome.reason is TerminalReason.MODEL_ERROR
    assert "reuses the tool call id 'same'" in (outcome.error or "")
    assert note.calls == []  # the second call never ran
    assert len(outcome.messages) == 3  # its response was not kept
    assert_valid(outcome)


async def test_two_calls_sharing_an_id_in_one_response_end_the_task_cleanly(
    workspace: Path,
) -> None:
    note = WriteNote()
    model = ScriptedModel(
        [
            respond(
                tool_use("write_note", {"note": "a"}, id="dup"),
                tool_use("write_note", {"note": "b"}, id="dup"),
            )
        ]
    )
    loop = make_loop(model, workspace, mode=PermissionMode.YOLO, tools=[note])
    outcome = await loop.run([Message.user("go")])
    assert outcome.reason is TerminalReason.MODEL_ERROR
    assert "reuses the tool call id 'dup'" in (outcome.error or "")
    assert note.calls == [] and len(outcome.messages) == 1
    assert_valid(outcome)


async def test_fatal_tool_error_stops_the_task(workspace: Path) -> None:
    model = ScriptedModel([respond(tool_use("explode", {"note": "fatal"}))])
    outcome = await make_loop(model, workspace).run([Message.user("go")])
    assert outcome.reason is TerminalReason.FATAL_TOOL_ERROR
    assert outcome.error == "credentials missing"
    assert_valid(outcome)


async def test_observers_can_nudge_and_stop(workspace: Path) -> None:
    class Guard:
        def __init__(self) -> None:
            self.seen = 0

        async def after_tools(self, records: Any) -> Nudge | Stop | None:
            self.seen += 1
            if self.seen == 1:
                return Nudge("change approach")
            return Stop(TerminalReason.NO_PROGRESS, "repeated")

    model = ScriptedModel([respond(tool_use("read_file", {"path": "x"})) for _ in range(2)])
    outcome = await make_loop(model, workspace, observers=(Guard(),)).run([Message.user("go")])
    assert outcome.reason is TerminalReason.NO_PROGRESS
    assert model.requests[1].messages[-1].text == "change approach"
    assert_valid(outcome)


async def test_a_cancel_while_an_observer_looks_keeps_the_calls_real_results(
    workspace: Path,
) -> None:
    (workspace / "a.py").write_text("x = 1\n")
    looking = asyncio.Event()

    class Watcher:
        async def after_tools(self, records: Any) -> Nudge | Stop | None:
            looking.set()
            await asyncio.Event().wait()  # as if awaiting a snapshot; the cancel lands here
            return None

    model = ScriptedModel([respond(tool_use("read_file", {"path": "a.py"}, id="t1"))])
    loop = make_loop(model, workspace, observers=(Watcher(),))
    task = asyncio.create_task(loop.run([Message.user("go")]))
    watching = asyncio.create_task(looking.wait())
    await asyncio.wait({task, watching}, return_when=asyncio.FIRST_COMPLETED)
    watching.cancel()
    assert looking.is_set()  # the loop awaits the observer
    task.cancel()
    outcome = await task
    assert outcome.reason is TerminalReason.ABORTED
    assert_valid(outcome)
    # The call ran before the cancel: its result is what it returned, not "not executed".
    result = outcome.messages[2].tool_results[0]
    assert "1\tx = 1" in result.content and not result.is_error


async def test_independent_reads_run_concurrently_and_results_keep_proposal_order(
    workspace: Path,
) -> None:
    running = 0
    peak = 0

    class Probe(Sleep):
        async def call(self, args: SleepInput, ctx: ToolContext) -> ToolOutput:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(args.seconds)
            running -= 1
            return ToolOutput(text=f"slept {args.seconds}")

    # Later calls finish first; results must still come back in proposal order.
    calls = [tool_use("sleep", {"seconds": 0.05 * (5 - n)}) for n in range(5)]
    model = ScriptedModel([respond(*calls), respond(text("done"))])
    outcome = await make_loop(model, workspace, tools=[Probe()]).run([Message.user("go")])
    assert outcome.reason is TerminalReason.COMPLETED
    assert peak == 5
    ids = [r.tool_use_id for r in outcome.messages[2].tool_results]
    assert ids == [c["id"] for c in calls]


def test_records_report_error_status() -> None:
    record = ToolCallRecord(call_id="x", name="n", input={}, status=CallStatus.DENIED)
    assert record.to_result_block().is_error
    assert record.summary()["status"] == "denied"
