"""ToolRuntime: the call contract (find → validate → tool validation → permission → call → format
→ record), typed errors, the output cap, and parallel scheduling by resources."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from pydantic import Field

from agentcli.call_records import CallStatus, PreState
from agentcli.errors import ToolError, ToolErrorKind
from agentcli.events import ToolCallFinished
from agentcli.loop import LoopSettings, QueryLoop
from agentcli.messages import Message, ToolUseBlock, pairing_problems
from agentcli.permissions import NonInteractivePrompter, PermissionMode
from agentcli.permissions.basic import ModePolicy
from agentcli.store import MemoryJournal
from agentcli.testing import ScriptedModel, respond, text, tool_use
from agentcli.tools.base import (
    Resources,
    Risk,
    Tool,
    ToolContext,
    ToolInput,
    ToolOutput,
)
from agentcli.tools.runtime import ToolRuntime
from agentcli.usage import Budget


class SlowInput(ToolInput):
    key: str = Field(description="resource key")
    seconds: float = Field(default=0.0, description="latency")
    write: bool = Field(default=False, description="write the key instead of reading it")


class Slow(Tool[SlowInput]):
    """Waits, and logs when each call started and ended (for ordering assertions)."""

    name = "slow"
    description = "test tool with latency and declared resources"
    input_model = SlowInput
    risk = Risk.READ

    def __init__(self) -> None:
        self.log: list[tuple[str, str, float]] = []
        self.running = 0
        self.max_running = 0

    def resources(self, args: SlowInput, ctx: ToolContext) -> Resources:
        key = frozenset({f"key:{args.key}"})
        return Resources(writes=key) if args.write else Resources(reads=key)

    async def call(self, args: SlowInput, ctx: ToolContext) -> ToolOutput:
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        self.log.append(("start", args.key, time.monotonic()))
        try:
            await asyncio.sleep(args.seconds)
        finally:
            self.running -= 1
            self.log.append(("end", args.key, time.monotonic()))
        return ToolOutput(text=f"done {args.key}")


class NoteInput(ToolInput):
    note: str = Field(description="anything")


class Hooks(Tool[NoteInput]):
    """Misbehaves on demand in each stage of the contract."""

    name = "hooks"
    description = "test tool whose hooks fail"
    input_model = NoteInput
    risk = Risk.WRITE

    def validate(self, args: NoteInput, ctx: ToolContext) -> None:
        if args.note == "bug-in-validate":
            raise KeyError("oops")
        if args.note == "refuse":
            raise ToolError(ToolErrorKind.INVALID_ARGUMENTS, "field 'note' must not be refuse")

    def pre_state(self, args: NoteInput, ctx: ToolContext) -> PreState | None:
        if args.note == "stale":
            raise ToolError(ToolErrorKind.CONFLICT, "the file changed")
        return None

    async def call(self, args: NoteInput, ctx: ToolContext) -> ToolOutput:
        if args.note == "huge":
            return ToolOutput(text="".join(f"line {n}\n" for n in range(1, 20_001)))
        if args.note == "huge-error":
            raise ToolError(ToolErrorKind.INTERNAL, "x" * 100_000)
        if args.note == "failed-result":
            return ToolOutput(text="exit code 2", is_error=True)
        if args.note == "crash":
            raise ZeroDivisionError("division by zero")
        return ToolOutput(text=f"ok {args.note}", source={"note": args.note})


async def test_unknown_tool_names_the_tools_that_exist(harness: Any) -> None:
    record = await harness.call("rm_rf", path="/")
    assert record.error_kind is ToolErrorKind.UNKNOWN_TOOL and record.is_error
    assert "'rm_rf'" in record.result_text
    assert "edit_file, glob, grep, read_file, shell, write_file" in record.result_text


async def test_invalid_arguments_name_the_field_and_the_expected_input(harness: Any) -> None:
    extra = await harness.call("read_file", path="a", bogus=1)
    assert extra.error_kind is ToolErrorKind.INVALID_ARGUMENTS
    assert "unknown field 'bogus'" in extra.result_text
    assert "read_file(path: string, offset?: integer, limit?: integer)" in extra.result_text
    missing = await harness.call("edit_file", path="a")
    assert "missing required field 'old_string'" in missing.result_text
    wrong = await harness.call("read_file", path="a", offset="ten")
    assert "field 'offset'" in wrong.result_text and "integer" in wrong.result_text
    enum = await harness.call("grep", pattern="x", output_mode="lines")
    assert "field 'output_mode'" in enum.result_text
    assert '"files_with_matches"|"content"|"count"' in enum.result_text
    too_long = await harness.call("shell", command="ls", timeout=601)
    assert "field 'timeout'" in too_long.result_text and "600" in too_long.result_text
    assert all(r.status is CallStatus.FAILED for r in (extra, missing, wrong, enum, too_long))
    assert not any(e[0] == "started" for e in harness.journal.events)


async def test_a_bug_in_a_tool_hook_is_an_internal_error_not_a_crash(make_harness: Any) -> None:
    harness = make_harness([Hooks()])
    bug, fine = await harness.batch(
        ("hooks", {"note": "bug-in-validate"}), ("hooks", {"note": "fine"})
    )
    assert bug.error_kind is ToolErrorKind.INTERNAL and "KeyError" in bug.result_text
    assert fine.status is CallStatus.SUCCEEDED and fine.result_text == "ok fine"
    crash = await harness.call("hooks", note="crash")
    assert crash.error_kind is ToolErrorKind.INTERNAL
    assert "ZeroDivisionError: division by zero" in crash.result_text


async def test_tool_validation_runs_before_permission(make_harness: Any) -> None:
    harness = make_harness([Hooks()], mode=PermissionMode.DEFAULT)
    record = await harness.call("hooks", note="refuse")
    assert record.error_kind is ToolErrorKind.INVALID_ARGUMENTS
    assert harness.prompter.requests == []  # nobody was asked about a call that cannot run
    await harness.call("hooks", note="fine")
    assert len(harness.prompter.requests) == 1


async def test_a_refusing_pre_state_means_the_call_never_started(make_harness: Any) -> None:
    harness = make_harness([Hooks()])
    record = await harness.call("hooks", note="stale")
    assert record.status is CallStatus.FAILED and record.error_kind is ToolErrorKind.CONFLICT
    assert ("started", record.call_id, "hooks") not in harness.journal.events


async def test_results_carry_status_data_and_source(make_harness: Any) -> None:
    harness = make_harness([Hooks()])
    record = await harness.call("hooks", note="hello")
    assert record.status is CallStatus.SUCCEEDED and not record.is_error
    assert record.source == {"note": "hello"}
    block = record.to_result_block()
    assert block.content == "ok hello" and block.is_error is False


async def test_a_failed_result_is_an_error_but_the_call_ran(make_harness: Any) -> None:
    harness = make_harness([Hooks()])
    record = await harness.call("hooks", note="failed-result")
    assert record.status is CallStatus.SUCCEEDED  # executed: nothing to reconcile
    assert record.is_error and record.to_result_block().is_error
    assert record.summary()["is_error"] is True


async def test_every_result_is_capped_and_spilled(make_harness: Any, ctx: ToolContext) -> None:
    ctx.output_cap = 5_000
    harness = make_harness([Hooks()])
    record = await harness.call("hooks", note="huge")
    assert len(record.result_text) < 5_000 + 600
    assert "[output truncated: showing characters 1-" in record.result_text
    assert "of 208894 characters (20000 lines)" in record.result_text
    spill = Path(record.result_text.split("Full output saved to ")[1].split(";")[0])
    assert spill.parent == ctx.data_dir / "spill"
    assert spill.read_text().count("\n") == 20_000
    error = await harness.call("hooks", note="huge-error")
    assert error.is_error and len(error.result_text) < 5_000 + 600
    assert "of 100000 characters" in error.result_text


async def test_output_cap_is_configurable_on_the_runtime(ctx: ToolContext) -> None:
    runtime = ToolRuntime(
        [Hooks()],
        ctx=ctx,
        policy=ModePolicy(mode=PermissionMode.YOLO),
        prompter=NonInteractivePrompter(),
        journal=MemoryJournal(),
        events=lambda _e: None,
        output_cap=1234,
    )
    assert runtime.ctx.output_cap == 1234
    (record,) = runtime.propose([ToolUseBlock(id="t1", name="hooks", input={"note": "huge"})])
    await runtime.execute([ToolUseBlock(id="t1", name="hooks", input={"note": "huge"})], [record])
    assert "showing characters 1-" in record.result_text and len(record.result_text) < 1234 + 600


async def test_independent_calls_run_concurrently(make_harness: Any) -> None:
    slow = Slow()
    harness = make_harness([slow])
    records = await harness.batch(*(("slow", {"key": f"k{n}", "seconds": 0.2}) for n in range(8)))
    assert slow.max_running == 8
    assert [r.result_text for r in records] == [f"done k{n}" for n in range(8)]


async def test_results_come_back_in_proposal_order(make_harness: Any) -> None:
    harness = make_harness([Slow()])
    records = await harness.batch(
        ("slow", {"key": "a", "seconds": 0.15}), ("slow", {"key": "b", "seconds": 0.0})
    )
    assert [r.result_text for r in records] == ["done a", "done b"]
    finished = [e.call_id for e in harness.events if isinstance(e, ToolCallFinished)]
    assert finished == [records[1].call_id, records[0].call_id]  # b finished first


async def test_conflicting_calls_keep_proposal_order(make_harness: Any) -> None:
    slow = Slow()
    harness = make_harness([slow])
    await harness.batch(
        ("slow", {"key": "f", "seconds": 0.1, "write": True}),
        ("slow", {"key": "f", "seconds": 0.0}),
        ("slow", {"key": "g", "seconds": 0.0}),
        ("slow", {"key": "f", "seconds": 0.0, "write": True}),
    )
    order = [(kind, key) for kind, key, _ in slow.log]
    # g does not wait for the write of f; the read of f waits for it; the second write waits
    # for the read.
    assert order.index(("start", "g")) < order.index(("end", "f"))
    ends = [i for i, item in enumerate(order) if item == ("end", "f")]
    starts = [i for i, item in enumerate(order) if item == ("start", "f")]
    assert starts[1] > ends[0] and starts[2] > ends[1]


async def test_exclusive_calls_run_alone(make_harness: Any) -> None:
    class Exclusive(Slow):
        name = "exclusive"

        def resources(self, args: SlowInput, ctx: ToolContext) -> Resources:
            return Resources(exclusive=True)

    slow, exclusive = Slow(), Exclusive()
    exclusive.log = slow.log
    harness = make_harness([slow, exclusive])
    await harness.batch(
        ("slow", {"key": "a", "seconds": 0.05}),
        ("exclusive", {"key": "x", "seconds": 0.05}),
        ("slow", {"key": "b", "seconds": 0.0}),
    )
    order = [(kind, key) for kind, key, _ in slow.log]
    assert order == [
        ("start", "a"),
        ("end", "a"),
        ("start", "x"),
        ("end", "x"),
        ("start", "b"),
        ("end", "b"),
    ]


async def test_concurrency_is_bounded(make_harness: Any) -> None:
    slow = Slow()
    harness = make_harness([slow], max_parallel=3)
    await harness.batch(*(("slow", {"key": f"k{n}", "seconds": 0.02}) for n in range(10)))
    assert slow.max_running == 3


async def test_an_edit_and_a_read_of_one_file_keep_their_order(
    harness: Any, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("old\n")
    await harness.call("read_file", path="a.txt")
    edit, read = await harness.batch(
        ("edit_file", {"path": "a.txt", "old_string": "old", "new_string": "new"}),
        ("read_file", {"path": "a.txt"}),
    )
    assert edit.status is CallStatus.SUCCEEDED and "1\tnew" in read.result_text
    read, edit = await harness.batch(
        ("read_file", {"path": "a.txt"}),
        ("edit_file", {"path": "a.txt", "old_string": "new", "new_string": "newer"}),
    )
    assert "1\tnew" in read.result_text and edit.status is CallStatus.SUCCEEDED


async def test_two_edits_of_one_file_in_one_response_apply_in_order(
    harness: Any, workspace: Path
) -> None:
    (workspace / "a.py").write_text("def f():\n    return 1\n")
    await harness.call("read_file", path="a.py")
    first, second = await harness.batch(
        ("edit_file", {"path": "a.py", "old_string": "return 1", "new_string": "return g()"}),
        ("edit_file", {"path": "a.py", "old_string": "g()", "new_string": "g(2)"}),
    )
    assert first.status is CallStatus.SUCCEEDED, first.result_text
    assert second.status is CallStatus.SUCCEEDED, second.result_text
    assert (workspace / "a.py").read_text() == "def f():\n    return g(2)\n"


async def test_permission_prompt_gets_a_preview(make_harness: Any, workspace: Path) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    harness = make_harness(mode=PermissionMode.DEFAULT)
    await harness.call("read_file", path="a.txt")
    await harness.call("edit_file", path="a.txt", old_string="alpha", new_string="beta")
    await harness.call("shell", command="echo hi")
    edit, shell = harness.prompter.requests
    assert "-alpha\n+beta" in edit.preview
    assert edit.target.rule_class == "write" and edit.target.subject == "a.txt"
    assert shell.preview.startswith("$ echo hi\nin ")
    assert shell.target.rule_class == "shell" and shell.target.subject == "echo hi"


async def test_cancellation_gives_every_call_a_final_status(make_harness: Any) -> None:
    harness = make_harness([Slow(), Hooks()])
    blocks_input = [
        ("slow", {"key": "a", "seconds": 10, "write": True}),
        ("slow", {"key": "a", "seconds": 0}),
    ]
    task = asyncio.create_task(harness.batch(*blocks_input))
    await asyncio.sleep(0.1)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    records = harness.runtime.records
    harness.runtime.interrupt(records, "the task was cancelled")
    assert [r.status for r in records] == [CallStatus.NOT_EXECUTED, CallStatus.NOT_EXECUTED]
    assert "while this read was running" in records[0].result_text
    assert "before this call started" in records[1].result_text


async def test_malformed_input_through_the_loop_is_an_error_result(
    workspace: Path, ctx: ToolContext, make_harness: Any
) -> None:
    model = ScriptedModel(
        [
            respond(
                tool_use("edit_file", {"path": 3, "old_string": None}, id="bad1"),
                tool_use("grep", {"pattern": "("}, id="bad2"),
                tool_use("nope", {}, id="bad3"),
            ),
            respond(text("gave up")),
        ]
    )
    loop = QueryLoop(
        model=model,
        runtime=make_harness().runtime,
        journal=MemoryJournal(),
        system="sys",
        events=lambda _e: None,
        budget=Budget(),
        settings=LoopSettings(),
    )
    outcome = await loop.run([Message.user("go")])
    assert outcome.final_text == "gave up" and pairing_problems(outcome.messages) == []
    results = outcome.messages[2].tool_results
    assert [r.is_error for r in results] == [True, True, True]
    assert "[invalid_arguments]" in results[0].content and "'path'" in results[0].content
    assert "regex parse error" in results[1].content
    assert "[unknown_tool]" in results[2].content


async def test_a_user_tool_from_the_public_api(make_harness: Any) -> None:
    from agentcli.tools import Resources as PublicResources
    from agentcli.tools import Risk as PublicRisk
    from agentcli.tools import Tool as PublicTool
    from agentcli.tools import ToolInput as PublicInput
    from agentcli.tools import ToolOutput as PublicOutput

    class TicketInput(PublicInput):
        ticket: str = Field(description="Ticket id.")

    class LookupTicket(PublicTool[TicketInput]):
        name = "lookup_ticket"
        description = "Fetch a ticket. Read-only."
        input_model = TicketInput
        risk = PublicRisk.EXTERNAL

        def resources(self, args: TicketInput, ctx: ToolContext) -> PublicResources:
            return PublicResources(reads=frozenset({f"ticket:{args.ticket}"}))

        async def call(self, args: TicketInput, ctx: ToolContext) -> PublicOutput:
            return PublicOutput(text=f"{args.ticket}: open", source={"ticket": args.ticket})

    harness = make_harness([LookupTicket()])
    spec = harness.runtime.specs()[0]
    assert spec.input_schema["properties"] == {
        "ticket": {"description": "Ticket id.", "type": "string"}
    }
    record = await harness.call("lookup_ticket", ticket="ABC-1")
    assert record.result_text == "ABC-1: open" and record.source == {"ticket": "ABC-1"}
    assert record.risk == "external"


async def test_a_read_is_summarized_by_its_lines_not_by_the_file_s_first_line(
    harness: Any, workspace: Path
) -> None:
    """A progress line (and stream-json's `summary`) said `1\tprint('hi')` for a read."""
    (workspace / "a.py").write_text("print('hi')\nprint('there')\n")
    await harness.call("read_file", path="a.py")
    (finished,) = [e for e in harness.events if isinstance(e, ToolCallFinished)]
    assert finished.summary == "lines 1-2 of 2"


async def test_a_denied_call_is_summarized_by_its_reason_not_by_what_the_model_is_told(
    make_harness: Any,
) -> None:
    harness = make_harness([Hooks()], mode=PermissionMode.READ_ONLY)
    record = await harness.call("hooks", note="hello")
    assert record.status is CallStatus.DENIED
    assert "Do not retry" in record.result_text  # the model is told what to do...
    (finished,) = [e for e in harness.events if isinstance(e, ToolCallFinished)]
    assert "Do not retry" not in finished.summary  # ...the user sees why, whole
    assert finished.summary == "read-only mode denies every write and command"
