"""One task's hooks: what UserPromptSubmit, PreToolUse, PostToolUse(Failure) and Stop hooks
said, turned into what the task does (`hook_seams.TaskHooks`).

- UserPromptSubmit: a block (exit 2, `decision: block`) or `continue: false` keeps the prompt
  from the model and ends the task; context (JSON `additionalContext`, or plain stdout) goes
  with the prompt, after what SessionStart hooks said.
- PreToolUse: deny > ask > allow among the hooks (exit 2 is a deny); the last `updatedInput`
  of a hook that did not deny replaces the input; `continue: false` ends the task.
- PostToolUse / PostToolUseFailure: a block's reason (exit 2's stderr) and context are told to
  the model with the batch's results; `continue: false` ends the task after the batch.
- Stop: a block sends the model back to work with the reason (`hook_seams.STOP_CONTINUATIONS`
  times in a row at most: the conversation counts); `continue: false` ends the task, failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from agentcli.call_records import ToolCallRecord
from agentcli.hook_seams import BeforeCall, HookBlock, PromptVerdict, StopVerdict, SubagentLabel
from agentcli.hooks.catalog import HookDef
from agentcli.loop_steps import Nudge, Stop
from agentcli.terminal_reason import TerminalReason
from agentcli.vocabulary import Decision

if TYPE_CHECKING:
    from agentcli.hooks.protocol import Reply

_RANK = {Decision.DENY: 3, Decision.ASK: 2, Decision.ALLOW: 1}


@dataclass(frozen=True, slots=True)
class Said:
    """What one hook said at one event."""

    hook: HookDef
    reply: Reply

    def block(self, event: str, reason: str) -> HookBlock:
        return HookBlock(
            event=event, hook=self.hook.command, source=self.hook.source.value, reason=reason
        )


class Firing(Protocol):
    """What a task's hooks need of the session's (`engine.HookEngine`)."""

    async def fire(
        self,
        event: str,
        subject: str | None,
        fields: dict[str, Any],
        *,
        tool_use_id: str | None = None,
    ) -> list[Said]: ...

    def take_session_context(self) -> list[str]: ...


class TaskHookRun:
    """The hooks of one task (made by `HookEngine.for_task`)."""

    def __init__(self, engine: Firing, agent: SubagentLabel | None = None) -> None:
        self._engine = engine
        self._agent = agent
        """The subagent whose child task this is (None: the user's task)."""
        self._blocks: list[HookBlock] = []
        self._notes: list[str] = []
        """What the hooks said for the model since the last batch of results."""
        self._stop: HookBlock | None = None

    @property
    def blocks(self) -> Sequence[HookBlock]:
        return tuple(self._blocks)

    def _blocked(self, block: HookBlock) -> HookBlock:
        self._blocks.append(block)
        return block

    # -- the prompt --------------------------------------------------------------------------
    async def prompt_submitted(self, prompt: str) -> PromptVerdict:
        said = await self._engine.fire("UserPromptSubmit", None, {"prompt": prompt})
        context = [*self._engine.take_session_context()]
        for one in said:
            reply = one.reply
            if reply.stop is not None or reply.blocks:
                reason = reply.stop if reply.stop is not None else reply.reason
                return PromptVerdict(block=self._blocked(one.block("UserPromptSubmit", reason)))
            if reply.context:
                context.append(reply.context)
        return PromptVerdict(context="\n\n".join(context))

    # -- tool calls --------------------------------------------------------------------------
    async def before_call(self, record: ToolCallRecord) -> BeforeCall:
        said = await self._engine.fire(
            "PreToolUse", record.name, self._tool_fields(record), tool_use_id=record.call_id
        )
        decided: Said | None = None
        updated: Said | None = None
        for one in said:
            reply = one.reply
            if reply.stop is not None:
                block = self._blocked(_on_call(one.block("PreToolUse", reply.stop), record))
                return BeforeCall(stop=block)
            if reply.context:
                self._notes.append(_note("PreToolUse", one, record, reply.context))
            if reply.permission is not None and (
                decided is None or _RANK[reply.permission] > _RANK[decided.reply.permission]  # type: ignore[index]
            ):
                decided = one
            if reply.updated_input is not None and reply.permission is not Decision.DENY:
                updated = one
        if decided is None:
            return _updated(updated)
        decision = decided.reply.permission
        reason = decided.reply.reason
        if decision is Decision.DENY:
            why = reason or "no reason given"
            block = self._blocked(_on_call(decided.block("PreToolUse", why), record))
            return BeforeCall(decision=decision, reason=why, hook=decided.hook.command, block=block)
        return BeforeCall(
            decision=decision,
            reason=reason,
            hook=decided.hook.command,
            updated_input=updated.reply.updated_input if updated is not None else None,
            updated_by=updated.hook.command if updated is not None else "",
        )

    async def after_call(self, record: ToolCallRecord) -> None:
        failed = record.is_error
        event = "PostToolUseFailure" if failed else "PostToolUse"
        fields = self._tool_fields(record)
        if failed:
            fields["error"] = record.result_text
        else:
            fields["tool_response"] = {"content": record.result_text, **record.source}
        for one in await self._engine.fire(event, record.name, fields, tool_use_id=record.call_id):
            reply = one.reply
            if reply.stop is not None and self._stop is None:
                self._stop = self._blocked(_on_call(one.block(event, reply.stop), record))
            if reply.blocks:
                self._blocked(_on_call(one.block(event, reply.reason), record))
                self._notes.append(_note(event, one, record, reply.reason))
            if reply.context:
                self._notes.append(_note(event, one, record, reply.context))

    async def after_tools(self, records: Sequence[ToolCallRecord]) -> Nudge | Stop | None:
        """What the hooks said for the model goes with the batch's results; a hook's
        `continue: false` ends the task after it."""
        if self._stop is not None:
            return Stop(TerminalReason.HOOK_STOPPED, self._stop.describe())
        if not self._notes:
            return None
        notes, self._notes = self._notes, []
        return Nudge("\n\n".join(notes))

    # -- the end -----------------------------------------------------------------------------
    async def stopping(self, last_message: str | None, *, active: bool) -> StopVerdict:
        fields = {"stop_hook_active": active, "last_assistant_message": last_message or ""}
        said = await self._engine.fire("Stop", None, fields)
        for one in said:
            if one.reply.stop is not None:
                return StopVerdict(stop=self._blocked(one.block("Stop", one.reply.stop)))
        reasons = [one for one in said if one.reply.blocks]
        if not reasons:
            return StopVerdict()
        first = reasons[0]
        text = "\n\n".join(one.reply.reason or "(no reason given)" for one in reasons)
        return StopVerdict(again=self._blocked(first.block("Stop", text)))

    def _tool_fields(self, record: ToolCallRecord) -> dict[str, object]:
        fields: dict[str, object] = {
            "tool_name": record.name,
            "tool_input": record.input,
            "tool_use_id": record.call_id,
        }
        if self._agent is not None:  # a subagent's call, as Claude Code tells its hooks
            fields.update(agent_id=self._agent.agent_id, agent_type=self._agent.agent_type)
        return fields


def _on_call(block: HookBlock, record: ToolCallRecord) -> HookBlock:
    return HookBlock(
        event=block.event,
        hook=block.hook,
        source=block.source,
        reason=block.reason,
        tool=record.name,
        call_id=record.call_id,
    )


def _note(event: str, one: Said, record: ToolCallRecord, text: str) -> str:
    return f"[{event} hook `{one.hook.command}` on {record.name} call {record.call_id}]\n{text}"


def _updated(updated: Said | None) -> BeforeCall:
    if updated is None:
        return BeforeCall()
    return BeforeCall(updated_input=updated.reply.updated_input, updated_by=updated.hook.command)
