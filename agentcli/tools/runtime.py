"""ToolRuntime: turns the model's proposed calls into executed, recorded results.

For every call, in this order: find the tool → validate the input against its pydantic model →
tool-specific validation → permission (`tools.permit`) → call → format success or error as a
`tool_result` → journal. Permission prompts are asked one at a time, in proposal order, before
anything runs. Then the allowed calls run: calls whose resources do not conflict run
concurrently (bounded); a call waits for every earlier call it conflicts with, so conflicting
calls keep proposal order. Results are returned in proposal order whatever order they finished
in. A call that may change something (risk write, execute or external) first awaits
`before_change` (the conversation's undo checkpoint and the start of finding which paths it
changes), then is journaled `started`, then runs; what `before_change` returned is awaited
when it has ended, however it ended.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import ValidationError

from agentcli.call_records import CallStatus, PreState, ToolCallRecord
from agentcli.errors import FatalToolError, TaskStopError, ToolError, ToolErrorKind
from agentcli.events import EventSink, ToolCallFinished, ToolCallProposed, ToolCallStarted
from agentcli.fsnames import for_model
from agentcli.hook_seams import NO_HOOKS, BeforeCall, ToolHooks
from agentcli.messages import ToolUseBlock
from agentcli.model import ToolSpec
from agentcli.permissions import PermissionPolicy, Prompter
from agentcli.store import Journal
from agentcli.task_scope import TaskScope
from agentcli.terminal_reason import TerminalReason
from agentcli.tools.base import PermissionTarget, Resources, Risk, Tool, ToolContext, ToolInput
from agentcli.tools.once import call_once
from agentcli.tools.output import cap_head, new_spill_path
from agentcli.tools.permit import ask_permission

AfterChange = Callable[[], Awaitable[None]]
"""Awaited once a call that may change something has ended, however it ended."""
BeforeChange = Callable[[ToolCallRecord, PreState | None], Awaitable[AfterChange | None]]
"""Awaited before a call that may change something starts, with its record and pre-state; what
it returns is awaited when the call has ended."""


_CHANGES_NOTHING = frozenset({"", Risk.READ.value, Risk.DELEGATE.value})
"""Risks of calls that change nothing themselves (a subagent's own calls are each bracketed)."""


@dataclass(slots=True)
class _Ready:
    record: ToolCallRecord
    tool: Tool[Any]
    args: ToolInput
    resources: Resources
    ctx: ToolContext
    """The session's context, with this call's confinement (what its permission said)."""
    done: asyncio.Event = field(default_factory=asyncio.Event)


class _CannotRun(Exception):
    """A precheck's refusal, on its way out of `ask_permission`."""

    def __init__(self, error: ToolError) -> None:
        super().__init__(str(error))
        self.error = error


class ToolRuntime:
    def __init__(
        self,
        tools: Sequence[Tool[Any]],
        *,
        ctx: ToolContext,
        policy: PermissionPolicy,
        prompter: Prompter,
        journal: Journal,
        events: EventSink,
        output_cap: int | None = None,
        max_parallel: int = 8,
        before_change: BeforeChange | None = None,
        hooks: ToolHooks | None = None,
    ) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.ctx = ctx
        self.policy = policy
        self.prompter = prompter
        self.journal = journal
        self.events = events
        if output_cap is not None:
            ctx.output_cap = output_cap
        # The search tools filter their results through the policy that allowed the call.
        ctx.policy = policy
        self.max_parallel = max_parallel
        self.before_change = before_change
        self.hooks = hooks or NO_HOOKS.for_task()
        """The task's PreToolUse / PostToolUse hooks (`agentcli.hook_seams`)."""
        self.records: list[ToolCallRecord] = []
        self.denials: list[dict[str, Any]] = []
        self.task: TaskScope | None = None
        """The task the calls run in (the conversation sets it): each call's context has it."""
        self._specs: list[ToolSpec] | None = None

    def specs(self) -> list[ToolSpec]:
        # Derived once: the tool set is fixed for the runtime's life, and deriving the JSON
        # schemas from the pydantic models costs more than the rest of a turn's overhead.
        if self._specs is None:
            self._specs = [tool.spec() for tool in self.tools.values()]
        return list(self._specs)

    def propose(self, calls: Sequence[ToolUseBlock]) -> list[ToolCallRecord]:
        """Create and journal a `proposed` record for each call, in proposal order."""
        records = []
        for call in calls:
            tool = self.tools.get(call.name)
            record = ToolCallRecord(
                call_id=call.id,
                name=call.name,
                input=call.input,
                risk=tool.risk.value if tool else "",
            )
            self.journal.call_proposed(record)
            self.events(ToolCallProposed(call_id=call.id, name=call.name, input=call.input))
            records.append(record)
            self.records.append(record)
        return records

    async def execute(
        self, calls: Sequence[ToolUseBlock], records: Sequence[ToolCallRecord]
    ) -> None:
        """Run proposed calls to completion. Every record ends in a final status."""
        ready: list[_Ready] = []
        for call, record in zip(calls, records, strict=True):
            prepared = await self._prepare(call, record, ready)
            if prepared is not None:
                ready.append(prepared)
        limiter = asyncio.Semaphore(self.max_parallel)
        tasks = [
            asyncio.create_task(self._run_when_free(item, ready[:index], limiter))
            for index, item in enumerate(ready)
        ]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def _prepare(
        self, call: ToolUseBlock, record: ToolCallRecord, earlier: Sequence[_Ready]
    ) -> _Ready | None:
        """Validate a call, run the PreToolUse hooks and decide whether it may run (asking,
        where the policy says so, once the call is checked against the workspace); None when
        it ended there (its record finished). `earlier`: the calls of the same response
        already prepared, which run before it where they conflict."""
        if not call.complete:
            self._finish(
                record,
                CallStatus.NOT_EXECUTED,
                ToolErrorKind.NOT_EXECUTED,
                "not executed: your response hit the output token limit before this "
                "call's input was complete. Issue the call again, with smaller input "
                "(for a large file, write it in parts).",
            )
            return None
        tool = self.tools.get(call.name)
        if tool is None:
            self._finish(
                record,
                CallStatus.FAILED,
                ToolErrorKind.UNKNOWN_TOOL,
                f"there is no tool named {call.name!r}; available tools: "
                f"{', '.join(sorted(self.tools))}",
            )
            return None
        if call.input_problem is not None:
            self._finish(
                record,
                CallStatus.FAILED,
                ToolErrorKind.INVALID_ARGUMENTS,
                f"invalid arguments for {tool.name}: {call.input_problem}. "
                f"Expected input: {_signature(tool)}",
            )
            return None
        try:
            args = tool.input_model.model_validate(call.input)
            tool.validate(args, self.ctx)
            target = tool.permission_target(args, self.ctx)
            resources = tool.resources(args, self.ctx)
        except FatalToolError:
            raise
        except Exception as exc:
            self._refuse(record, tool, exc)
            return None
        hook = await self.hooks.before_call(record)
        if hook.stop is not None:
            raise TaskStopError(TerminalReason.HOOK_STOPPED, hook.stop.describe())
        if hook.block is not None:
            self._finish(
                record,
                CallStatus.DENIED,
                ToolErrorKind.PERMISSION_DENIED,
                f"blocked by the PreToolUse hook `{hook.hook}`: {hook.reason}. Do not retry "
                "the same call; continue without it or explain what you need.",
            )
            return None
        if hook.updated_input is not None:
            replaced = self._hook_input(record, tool, hook)
            if replaced is None:
                return None
            args, target, resources = replaced
        try:
            permission = await ask_permission(
                self.policy,
                self.prompter,
                self.events,
                tool=tool,
                record=record,
                target=target,
                preview=lambda: self._preview(tool, args),
                hook=hook,
                precheck=lambda: self._precheck(tool, args, resources, earlier),
            )
        except _CannotRun as cannot:  # the precheck: nobody was asked
            self._refuse(record, tool, cannot.error)
            return None
        if not permission.allowed:
            self.denials.append(
                {
                    "tool": tool.name,
                    "input": record.input,
                    "reason": permission.reason,
                    "rule": permission.rule,
                }
            )
            self._finish(
                record,
                CallStatus.DENIED,
                ToolErrorKind.PERMISSION_DENIED,
                permission.message,
                summary=permission.reason,
            )
            return None
        ctx = replace(
            self.ctx,
            confinement=permission.confinement or self.ctx.confinement,
            call_id=record.call_id,
            task=self.task,
        )
        return _Ready(record=record, tool=tool, args=args, resources=resources, ctx=ctx)

    def _hook_input(
        self, record: ToolCallRecord, tool: Tool[Any], hook: BeforeCall
    ) -> tuple[ToolInput, PermissionTarget, Resources] | None:
        """The input a PreToolUse hook put in the model's place, checked as the model's is;
        None (the call finished as failed) when it is not valid."""
        updated = dict(hook.updated_input or {})
        try:
            args = tool.input_model.model_validate(updated)
            tool.validate(args, self.ctx)
            target = tool.permission_target(args, self.ctx)
            resources = tool.resources(args, self.ctx)
        except FatalToolError:
            raise
        except Exception as exc:
            self._refuse(
                record, tool, exc, f" (the input the PreToolUse hook `{hook.updated_by}` gave)"
            )
            return None
        record.input = updated
        return args, target, resources

    def _refuse(
        self, record: ToolCallRecord, tool: Tool[Any], exc: Exception, whose: str = ""
    ) -> None:
        """Finish a call whose input or checks failed before permission was asked (`whose`:
        where the input came from, when not from the model)."""
        if isinstance(exc, ValidationError):
            self._finish(
                record,
                CallStatus.FAILED,
                ToolErrorKind.INVALID_ARGUMENTS,
                f"invalid arguments for {tool.name}{whose}: {_describe_validation(exc)}. "
                f"Expected input: {_signature(tool)}",
            )
        elif isinstance(exc, ToolError):
            denied = exc.kind is ToolErrorKind.PERMISSION_DENIED
            if denied:  # e.g. a path outside the workspace: the user sees it refused, as any denial
                self.denials.append(
                    {"tool": tool.name, "input": record.input, "reason": exc.message}
                )
            status = CallStatus.DENIED if denied else CallStatus.FAILED
            self._finish(record, status, exc.kind, self._cap(record, exc.message + whose))
        else:  # a bug in a tool's hooks must not crash the loop
            self._finish(
                record,
                CallStatus.FAILED,
                ToolErrorKind.INTERNAL,
                f"internal error in {tool.name} while checking the call: "
                f"{type(exc).__name__}: {exc}",
            )

    def _precheck(
        self, tool: Tool[Any], args: ToolInput, resources: Resources, earlier: Sequence[_Ready]
    ) -> None:
        """`tool.precheck`, unless an earlier call of the response runs first on what this one
        touches (a read_file of the file a write_file then overwrites: the read is what lets
        the write through)."""
        if any(resources.conflicts_with(other.resources) for other in earlier):
            return
        try:
            tool.precheck(args, self.ctx)
        except FatalToolError:
            raise
        except ToolError as exc:
            raise _CannotRun(exc) from exc
        except Exception:  # a check that failed itself refuses nothing: the call is asked
            return  # about and checked again when it runs, as without it

    def _preview(self, tool: Tool[Any], args: ToolInput) -> str:
        try:
            return tool.preview(args, self.ctx)
        except Exception as exc:  # a preview is a courtesy; never let it block the call
            return f"(no preview: {exc})"

    async def _run_when_free(
        self, item: _Ready, earlier: Sequence[_Ready], limiter: asyncio.Semaphore
    ) -> None:
        try:
            for other in earlier:
                if item.resources.conflicts_with(other.resources):
                    await other.done.wait()
            async with limiter:
                await self._call(item)
        finally:
            item.done.set()

    async def _call(self, item: _Ready) -> None:
        record = item.record
        try:
            pre_state = item.tool.pre_state(item.args, item.ctx)
        except ToolError as exc:  # e.g. the file changed since it was read: nothing ran
            self._finish(record, CallStatus.FAILED, exc.kind, self._cap(record, exc.message))
            return
        except Exception as exc:
            self._finish(
                record,
                CallStatus.FAILED,
                ToolErrorKind.INTERNAL,
                f"internal error in {record.name} before it ran: {type(exc).__name__}: {exc}",
            )
            return
        after: AfterChange | None = None
        if self.before_change is not None and record.risk not in _CHANGES_NOTHING:
            after = await self.before_change(record, pre_state)
        try:
            await self._run(item, pre_state)
            if record.started_at is not None:  # it ran: PostToolUse (or ...Failure) hooks
                await self.hooks.after_call(record)
        finally:
            if after is not None:
                await after()

    async def _run(self, item: _Ready, pre_state: PreState | None) -> None:
        record = item.record
        record.status = CallStatus.STARTED
        record.started_at = time.time()
        self.journal.call_started(record, pre_state)
        self.events(ToolCallStarted(call_id=record.call_id, name=record.name, input=record.input))
        started = time.monotonic()
        try:
            output = await call_once(
                item.tool, item.args, item.ctx, record, self.journal.operations
            )
        except ToolError as exc:
            record.duration_s = time.monotonic() - started
            self._finish(record, CallStatus.FAILED, exc.kind, self._cap(record, exc.message))
            return
        except (FatalToolError, asyncio.CancelledError):
            record.duration_s = time.monotonic() - started
            raise
        except Exception as exc:
            record.duration_s = time.monotonic() - started
            self._finish(
                record,
                CallStatus.FAILED,
                ToolErrorKind.INTERNAL,
                f"internal error in {record.name}: {type(exc).__name__}: {exc}",
            )
            return
        record.duration_s = time.monotonic() - started
        record.source = output.source
        record.result_is_error = output.is_error
        self._finish(record, CallStatus.SUCCEEDED, None, self._cap(record, output.text))

    def _cap(self, record: ToolCallRecord, text: str) -> str:
        """The one output cap, applied to every result (tools that know their output's
        shape cut it themselves first, so this only catches what they let through)."""
        if len(text) <= self.ctx.output_cap:
            return text
        return cap_head(
            text, self.ctx.output_cap, new_spill_path(self.ctx.data_dir, record.call_id)
        )

    def _finish(
        self,
        record: ToolCallRecord,
        status: CallStatus,
        kind: ToolErrorKind | None,
        text: str,
        *,
        summary: str | None = None,
    ) -> None:
        """Record how the call ended and say so; `summary`: what a progress line says of it
        (default: its result's first line; a denial's is its reason, not what the model is
        told)."""
        record.status = status
        record.error_kind = kind
        text = for_model(text)  # names that are not UTF-8 as `\xff`: valid for the API
        record.result_text = text if kind is None else f"[{kind.value}] {text}"
        self.journal.call_finished(record)
        self.events(
            ToolCallFinished(
                call_id=record.call_id,
                name=record.name,
                status=status.value,
                is_error=record.is_error,
                summary=summary if summary is not None else _summary(record, text),
                duration_s=round(record.duration_s, 3),
            )
        )

    def interrupt(self, records: Sequence[ToolCallRecord], why: str) -> None:
        """Give every unfinished record a final status after a cancel, timeout or crash.

        A call that never started is `not_executed`. A read that was running did nothing
        lasting. Anything else that was running may or may not have taken effect: it is
        `outcome_unknown`, and the model is told to verify before retrying.
        """
        for record in records:
            if record.status is CallStatus.PROPOSED:
                self._finish(
                    record,
                    CallStatus.NOT_EXECUTED,
                    ToolErrorKind.CANCELLED,
                    f"not executed: {why} before this call started",
                )
            elif record.status is CallStatus.STARTED:
                if record.risk == Risk.READ.value:
                    self._finish(
                        record,
                        CallStatus.NOT_EXECUTED,
                        ToolErrorKind.CANCELLED,
                        f"interrupted: {why} while this read was running",
                    )
                else:
                    self._finish(
                        record,
                        CallStatus.OUTCOME_UNKNOWN,
                        ToolErrorKind.OUTCOME_UNKNOWN,
                        f"interrupted: {why} while this call was running; it may or "
                        "may not have taken effect. Verify the current state before "
                        "retrying it.",
                    )


def _describe_validation(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "(input)"
        if error["type"] == "extra_forbidden":
            parts.append(f"unknown field '{where}'")
        elif error["type"] == "missing":
            parts.append(f"missing required field '{where}'")
        else:
            got = json.dumps(error.get("input"), default=str)[:80]
            parts.append(f"field '{where}': {error['msg']} (got {got})")
    return "; ".join(parts)


def _signature(tool: Tool[Any]) -> str:
    """A compact reminder of the input shape, e.g. `read_file(path: string, offset?: integer)`."""
    schema = tool.input_model.model_json_schema()
    required = set(schema.get("required", []))
    fields = []
    for name, prop in schema.get("properties", {}).items():
        kinds = [p.get("type") for p in prop.get("anyOf", [prop]) if p.get("type") != "null"]
        kind = "|".join(str(k) for k in kinds if k) or "any"
        if "enum" in prop:
            kind = "|".join(json.dumps(v) for v in prop["enum"])
        fields.append(f"{name}{'' if name in required else '?'}: {kind}")
    return f"{tool.name}({', '.join(fields)})"


def _summary(record: ToolCallRecord, text: str) -> str:
    """What a progress line says of a call's result: for a read, which lines of how many (its
    first line would be the file's own first line); else the result's first line."""
    lines, total = record.source.get("lines"), record.source.get("total_lines")
    if record.status is CallStatus.SUCCEEDED and isinstance(total, int) and isinstance(lines, list):
        if len(lines) == 2 and all(isinstance(n, int) for n in lines):
            return f"lines {lines[0]}-{lines[1]} of {total}" if total else "empty file"
    return _first_line(text)


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line[:200]
