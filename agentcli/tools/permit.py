"""Whether one tool call may run: the policy's verdict, what the PreToolUse hooks decided, and,
when that asks, the user's answer through the `Prompter` (an "always" answer is remembered as a
rule for the session).

A hook's `ask` makes an allowed call ask; its `allow` skips only a question an allow rule could
have skipped (never a deny, an ask rule, a protected path, a destructive command or running
unconfined: the verdict's `firm`), and the call runs confined as the policy said.

The permission events are sent either way. A denial comes back with its reason (for the task's
list of denials) and the text the model is told, which names the rule the user could add.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentcli.call_records import ToolCallRecord
from agentcli.confinement import Confinement
from agentcli.events import EventSink, PermissionAsked, PermissionDecided
from agentcli.hook_seams import NO_OPINION, BeforeCall
from agentcli.permissions import Answer, Decision, PermissionPolicy, PermissionRequest, Prompter
from agentcli.tools.base import Tool
from agentcli.vocabulary import PermissionTarget, Verdict


@dataclass(frozen=True, slots=True)
class Permission:
    allowed: bool
    confinement: Confinement | None = None
    """How an allowed call runs (what the policy's verdict said)."""
    reason: str = ""
    """Why the call was denied, in the user's terms."""
    rule: str | None = None
    """The allow rule that would let such a call run (None: none would)."""
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
    preview: Callable[[], str] = str,
    hook: BeforeCall = NO_OPINION,
    precheck: Callable[[], None] | None = None,
) -> Permission:
    """Whether the call may run, and how it is confined if it does (`hook`: what the
    PreToolUse hooks decided; `preview`: what a person asked is shown, made only then).

    Before anyone is asked, `precheck` may refuse the call (a ToolError, raised from here):
    nobody is asked to approve a call that cannot run. Not before a firm ask (a protected
    path, an `ask` rule): what the call touches is said first. Not where nobody can answer
    (no terminal): the denial, with the rule that would allow the call, is what the model
    gets."""
    verdict = with_hook(policy.decide(tool.risk, target), hook)
    decision, reason = verdict.decision, verdict.reason
    if decision is Decision.ASK:
        if precheck is not None and not verdict.firm and prompter.asks_a_person:
            precheck()
        events(PermissionAsked(call_id=record.call_id, name=tool.name, summary=target.summary))
        answer = await prompter.ask(
            PermissionRequest(
                call_id=record.call_id,
                tool=tool.name,
                risk=tool.risk,
                target=target,
                suggested_rule=verdict.suggested_rule,
                preview=preview(),
                reason=verdict.reason,
                confinement=verdict.confinement,
            )
        )
        if answer.answer is Answer.ALWAYS and verdict.suggested_rule:
            policy.remember(verdict.suggested_rule)
        decision = Decision.DENY if answer.answer is Answer.NO else Decision.ALLOW
        reason = answer.reason or f"user answered {answer.answer.value}"
    denied = decision is not Decision.ALLOW
    rule = verdict.suggested_rule if denied and verdict.decision is not Decision.DENY else None
    events(
        PermissionDecided(
            call_id=record.call_id,
            name=tool.name,
            decision=decision.value,
            reason=reason,
            rule=rule,
        )
    )
    if not denied:
        return Permission(allowed=True, confinement=verdict.confinement)
    hint = f" The user can allow it with --allow '{rule}'." if rule else ""
    return Permission(
        allowed=False,
        reason=reason,
        rule=rule,
        message=f"permission denied: {reason}.{hint} Do not retry the same call; "
        "continue without it or explain what you need.",
    )


def with_hook(verdict: Verdict, hook: BeforeCall) -> Verdict:
    """The policy's `verdict` after the hooks' decision (see the module docstring)."""
    by = f"the PreToolUse hook `{hook.hook}`"
    why = f": {hook.reason}" if hook.reason else ""
    if hook.decision is Decision.ASK and verdict.decision is Decision.ALLOW:
        return Verdict(Decision.ASK, f"{by} asks{why}", confinement=verdict.confinement)
    if hook.decision is Decision.ALLOW and verdict.decision is Decision.ASK and not verdict.firm:
        return Verdict(Decision.ALLOW, f"allowed by {by}{why}", confinement=verdict.confinement)
    return verdict
