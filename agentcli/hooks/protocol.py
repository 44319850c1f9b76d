"""Claude Code's hook protocol: the JSON a hook reads on stdin, and what its exit code and
stdout mean.

- stdin: one JSON object: `session_id`, `transcript_path`, `cwd`, `hook_event_name`,
  `permission_mode` (Claude Code's names: `default`, `acceptEdits`, `plan` for read-only,
  `auto`, `bypassPermissions` for yolo), and the event's own fields.
- Exit 0: stdout is read as JSON when it starts with `{`; otherwise, for UserPromptSubmit and
  SessionStart, plain stdout is context the model sees (for other events it is ignored).
- Exit 2 blocks: the reason is stderr (or the JSON reason, if stdout has one).
- Any other exit code, a timeout, or stdout that starts with `{` and is not the JSON below: a
  notice, and nothing is blocked (`problem`).
- JSON: `continue` (false ends the task; `stopReason` says why), `systemMessage` (shown to the
  user), `decision: "block"` + `reason` (`approve` is the old PreToolUse allow; Gemini's
  `allow`/`deny` are read too), and `hookSpecificOutput` with `permissionDecision`
  (`allow|deny|ask`), `permissionDecisionReason`, `updatedInput`, `additionalContext`.
  Unknown fields are ignored, as Claude Code ignores them; a known field of the wrong type
  makes the output unusable (a notice).

Each text that goes on (context, messages, reasons) is capped at 10,000 characters; a longer one
is kept whole in a spill file, and a preview names it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentcli.tools.output import cap_head, new_spill_path
from agentcli.truncation import one_line
from agentcli.vocabulary import Decision

OUTPUT_CAP = 10_000
"""Characters of a hook's context, message or reason that go on; the rest is in a spill file."""
PLAIN_CONTEXT_EVENTS = ("UserPromptSubmit", "SessionStart")
"""Events whose plain (non-JSON) stdout is context for the model."""
CLAUDE_CODE_MODES = {
    "default": "default",
    "accept-edits": "acceptEdits",
    "read-only": "plan",
    "auto": "auto",
    "yolo": "bypassPermissions",
}


class _Specific(BaseModel):
    model_config = ConfigDict(
        extra="allow", strict=True, defer_build=True
    )  # built when a hook replies

    hookEventName: str | None = None
    permissionDecision: Literal["allow", "deny", "ask"] | None = None
    permissionDecisionReason: str | None = None
    updatedInput: dict[str, Any] | None = None
    additionalContext: str | None = None


class _Reply(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True, populate_by_name=True, defer_build=True)

    continue_: bool = Field(True, alias="continue")
    stopReason: str | None = None
    suppressOutput: bool | None = None
    systemMessage: str | None = None
    decision: Literal["block", "approve", "allow", "deny"] | None = None
    reason: str | None = None
    hookSpecificOutput: _Specific | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Ran:
    """How a hook's process ended, and what it wrote."""

    exit_code: int | None
    timed_out: bool
    stdout: str
    stderr: str
    duration_s: float
    failure: str | None = None
    """It could not be run at all (why)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """What one hook said, read by the protocol."""

    problem: str | None = None
    """Why its output counts for nothing (a notice; nothing is blocked)."""
    blocks: bool = False
    """Exit code 2, `decision: block` (or `deny`), or `permissionDecision: deny`."""
    reason: str = ""
    stop: str | None = None
    """`continue: false`: the task ends, for this reason."""
    system_message: str = ""
    permission: Decision | None = None
    updated_input: dict[str, Any] | None = None
    context: str = ""

    @property
    def decision(self) -> str | None:
        """How the journal and the events name what it decided."""
        if self.stop is not None:
            return "stop"
        if self.permission is not None:
            return self.permission.value
        return "block" if self.blocks else None


def payload(event: str, common: dict[str, Any], fields: dict[str, Any]) -> bytes:
    """The JSON a hook of `event` reads on stdin."""
    data = {**common, "hook_event_name": event, **fields}
    return json.dumps(data, ensure_ascii=False).encode("utf-8", errors="surrogateescape")


def claude_code_mode(mode: str) -> str:
    return CLAUDE_CODE_MODES.get(mode, mode)


def read_reply(event: str, ran: Ran, spill_dir: Path) -> Reply:
    """What a hook of `event` that ended as `ran` said."""

    def capped(text: str, stem: str) -> str:
        return cap_head(text, OUTPUT_CAP, new_spill_path(spill_dir, f"hook-{stem}"))

    if ran.failure is not None:
        return Reply(problem=ran.failure)
    if ran.timed_out:
        return Reply(
            problem=f"it ran longer than its timeout ({ran.duration_s:.0f}s) and was stopped"
        )
    stdout = ran.stdout.strip()
    parsed: _Reply | None = None
    if stdout.startswith("{"):
        try:
            parsed = _Reply.model_validate(json.loads(stdout))
        except (ValueError, ValidationError) as exc:
            if ran.exit_code == 0:
                return Reply(problem=f"its output is not valid hook JSON: {_why(exc)}")
    if ran.exit_code == 2:
        why = _reason(parsed) or ran.stderr.strip() or "(no reason given)"
        return Reply(blocks=True, reason=capped(why, "reason"), permission=_deny_if(event))
    if ran.exit_code != 0:
        tail = one_line(ran.stderr.strip(), 200)
        return Reply(problem=f"it exited {ran.exit_code}" + (f": {tail}" if tail else ""))
    if parsed is None:
        context = stdout if event in PLAIN_CONTEXT_EVENTS else ""
        return Reply(context=capped(context, "context") if context else "")
    return _from_json(event, parsed, capped)


def _from_json(event: str, parsed: _Reply, capped: Any) -> Reply:
    specific = parsed.hookSpecificOutput
    permission: Decision | None = None
    if event == "PreToolUse":
        if specific is not None and specific.permissionDecision is not None:
            permission = Decision(specific.permissionDecision)
        elif parsed.decision in ("approve", "allow"):
            permission = Decision.ALLOW
        elif parsed.decision in ("block", "deny"):
            permission = Decision.DENY
    blocks = parsed.decision in ("block", "deny") or permission is Decision.DENY
    context = specific.additionalContext if specific is not None else None
    stop = None
    if not parsed.continue_:
        stop = capped(parsed.stopReason or "a hook said `continue: false`", "stop")
    return Reply(
        blocks=blocks,
        reason=capped(_reason(parsed), "reason"),
        stop=stop,
        system_message=capped(parsed.systemMessage or "", "message"),
        permission=permission,
        updated_input=specific.updatedInput if specific is not None else None,
        context=capped(context, "context") if context else "",
    )


def _reason(parsed: _Reply | None) -> str:
    if parsed is None:
        return ""
    specific = parsed.hookSpecificOutput
    if specific is not None and specific.permissionDecisionReason:
        return specific.permissionDecisionReason
    return parsed.reason or ""


def _deny_if(event: str) -> Decision | None:
    return Decision.DENY if event == "PreToolUse" else None


def _why(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "(the object)"
        return f"`{where}`: {error['msg']}"
    return one_line(str(exc), 200)
