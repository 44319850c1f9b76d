"""Whether one tool call may run: the policy's verdict and, when the policy asks, the user's
answer through the `Prompter` (an "always" answer is remembered as a rule for the session).

The permission events are sent either way. A denial comes back with its reason (for the task's
list of denials) and the text the model is told, which names the rule the user could add.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentcli.call_records import ToolCallRecord
from agentcli.confinement import Confinement
from agentcli.events import EventSink, PermissionAsked, PermissionDecided
from agentcli.permissions import Answer, Decision, PermissionPolicy, PermissionRequest, Prompter
from agentcli.tools.base import Tool
from agentcli.vocabulary import PermissionTarget


@dataclass(frozen=True, slots=True)
class Permission:
    allowed: bool
    confinement: Confinement | None = None
    """How an allowed call runs (what the policy's verdict said)."""
    reason: str = ""
    """Why the call was denied."""
    message: str = ""
    """What the model is told about a denied call."""


async def ask_permission(
    policy: PermissionPolicy,
    prompter: Prompter,
    events: EventSink,
    *,
    tool: Tool[Any],
    record: ToolCallRecord,
    target: PermissionTarget,
    preview: str = "",
) -> Permission:
    """Whether the call may run, and how it is confined if it does."""
    verdict = policy.decide(tool.risk, target)
    decision, reason = verdict.decision, verdict.reason
    if decision is Decision.ASK:
        events(PermissionAsked(call_id=record.call_id, name=tool.name, summary=target.summary))
        answer = await prompter.ask(
            PermissionRequest(
                call_id=record.call_id,
                tool=tool.name,
                risk=tool.risk,
                target=target,
                suggested_rule=verdict.suggested_rule,
                preview=preview,
                reason=verdict.reason,
                confinement=verdict.confinement,
            )
        )
        if answer.answer is Answer.ALWAYS and verdict.suggested_rule:
            policy.remember(verdict.suggested_rule)
        decision = Decision.DENY if answer.answer is Answer.NO else Decision.ALLOW
        reason = answer.reason or f"user answered {answer.answer.value}"
    events(
        PermissionDecided(
            call_id=record.call_id, name=tool.name, decision=decision.value, reason=reason
        )
    )
    if decision is Decision.ALLOW:
        return Permission(allowed=True, confinement=verdict.confinement)
    hint = (
        f" The user can allow it with --allow '{verdict.suggested_rule}'."
        if verdict.suggested_rule
        else ""
    )
    return Permission(
        allowed=False,
        reason=reason,
        message=f"permission denied: {reason}.{hint} Do not retry the same call; "
        "continue without it or explain what you need.",
    )
