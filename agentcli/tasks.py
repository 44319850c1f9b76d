"""Task state, exit codes, and the task result that `run` reports (SPEC §5 and §7).

The task state is recorded independently of the model: the loop's terminal reason and the
acceptance evidence decide it, never the model's final words.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from agentcli.terminal_reason import TerminalReason
from agentcli.usage import Usage


class TaskState(enum.StrEnum):
    RUNNING = "running"
    WAITING = "waiting"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    BUDGET_EXHAUSTED = "budget_exhausted"
    ABORTED = "aborted"
    UNVERIFIED = "unverified"


class ExitCode(enum.IntEnum):
    OK = 0
    FAILED = 1
    USAGE = 2
    LIMITS = 3
    PERMISSION = 4
    ABORTED = 130


_LIMIT_REASONS = frozenset(
    {TerminalReason.MAX_TURNS, TerminalReason.BUDGET_EXCEEDED, TerminalReason.TIMEOUT}
)


def task_state_for(reason: TerminalReason, acceptance_passed: bool | None) -> TaskState:
    """`acceptance_passed` is None when the task had no acceptance criteria."""
    if reason is TerminalReason.COMPLETED:
        if acceptance_passed is None:
            return TaskState.UNVERIFIED
        return TaskState.SUCCEEDED if acceptance_passed else TaskState.FAILED
    if reason in _LIMIT_REASONS:
        return TaskState.BUDGET_EXHAUSTED
    if reason is TerminalReason.ABORTED:
        return TaskState.ABORTED
    return TaskState.FAILED


def exit_code_for(state: TaskState, reason: TerminalReason) -> ExitCode:
    if reason in (TerminalReason.USAGE_ERROR, TerminalReason.CONFIG_ERROR):
        return ExitCode.USAGE
    if state in (TaskState.SUCCEEDED, TaskState.UNVERIFIED):
        return ExitCode.OK
    if state is TaskState.BUDGET_EXHAUSTED:
        return ExitCode.LIMITS
    if state is TaskState.ABORTED:
        return ExitCode.ABORTED
    if reason is TerminalReason.PERMISSION_DENIED:
        return ExitCode.PERMISSION
    return ExitCode.FAILED


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandOrigin:
    """The custom command or skill a task's prompt was expanded from (`/name args`)."""

    name: str
    """With its slash: `/git:commit`."""
    arguments: str
    path: str
    """The definition file."""

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "arguments": self.arguments, "path": self.path}


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckEvidence:
    """One acceptance check, run by agentcli itself on a specific artifact version."""

    command: str
    exit_code: int | None
    passed: bool
    artifact_version: str | None
    output_tail: str
    duration_s: float
    full_output: str = field(default="", repr=False)
    """The whole captured output (for the model's repair round; not in the JSON result)."""
    round: int = 0
    """The repair round it belongs to (0: the checks after the model first finished)."""
    reused: bool = False
    """Not run again: the workspace was the same version as when this evidence was taken."""
    setup_problem: str | None = field(default=None, repr=False)
    """Why the check could not start at all (`agentcli.check_setup`): not the model's to fix
    (not in the JSON result: the task's `error` says it)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "exit_code": self.exit_code,
            "passed": self.passed,
            "artifact_version": self.artifact_version,
            "output_tail": self.output_tail,
            "duration_s": round(self.duration_s, 3),
            "round": self.round,
            "reused": self.reused,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitOutcome:
    """What `--commit` (or `/commit`) did after the task: a commit, or why there is none."""

    sha: str | None = None
    branch: str | None = None
    skipped: str | None = None
    """Why nothing was committed (the task did not succeed, it changed nothing, git refused)."""
    failed: bool = False
    """git refused the commit of a task that succeeded: the run fails (exit 1)."""


@dataclass(kw_only=True)
class TaskResult:
    """What a finished task reports: the JSON object of `--output-format json`."""

    session_id: str
    task_id: str
    state: TaskState
    reason: TerminalReason
    final_text: str | None
    turns: int
    duration_s: float
    usage: Usage
    cost_usd: float | None
    acceptance: list[CheckEvidence] = field(default_factory=list)
    artifact_version: str | None = None
    changed_files: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    permission_denials: list[dict[str, Any]] = field(default_factory=list)
    hook_blocks: list[dict[str, Any]] = field(default_factory=list)
    """What the task's hooks blocked or stopped, with the hook that did it."""
    subagents: list[dict[str, Any]] = field(default_factory=list)
    """One entry per subagent the task ran (`agentcli.task_scope.SubagentRecord`)."""
    error: str | None = None
    model: str | None = None
    stop_reason: str | None = None
    """The last model response's stop reason (None: no response)."""
    duration_api_s: float = 0.0
    repair_rounds: int = 0
    compactions: int = 0
    """Times the task's context was compacted (a summary replaced older turns)."""
    todos: list[dict[str, str]] = field(default_factory=list)
    """The todo list when the task ended (`{"content", "status", "activeForm"}` each)."""
    commit: CommitOutcome | None = None
    """Set when the task was to be committed (`--commit`): see `agentcli.usergit`."""

    @property
    def exit_code(self) -> ExitCode:
        code = exit_code_for(self.state, self.reason)
        if code is ExitCode.OK and self.commit is not None and self.commit.failed:
            return ExitCode.FAILED
        return code

    @property
    def subtype(self) -> str:
        """`success`, or `error_` and what went wrong: the terminal reason, or
        `acceptance_failed` for a task whose checks failed."""
        if self.exit_code is ExitCode.OK:
            return "success"
        if self.commit is not None and self.commit.failed:
            return "error_commit_failed"
        if self.reason is TerminalReason.COMPLETED:
            return "error_acceptance_failed"
        return f"error_{self.reason.value}"

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "result",
            "subtype": self.subtype,
            "is_error": self.exit_code is not ExitCode.OK,
            "session_id": self.session_id,
            "task_id": self.task_id,
            "task_state": self.state.value,
            "terminal_reason": self.reason.value,
            "model": self.model,
            "stop_reason": self.stop_reason,
            "final_text": self.final_text,
            "result": self.final_text,
            "turns": self.turns,
            "num_turns": self.turns,
            "duration_s": round(self.duration_s, 3),
            "duration_ms": round(self.duration_s * 1000),
            "duration_api_s": round(self.duration_api_s, 3),
            "duration_api_ms": round(self.duration_api_s * 1000),
            "usage": self.usage.as_dict(),
            "cost_usd": self.cost_usd,
            "total_cost_usd": self.cost_usd,
            "repair_rounds": self.repair_rounds,
            "acceptance": [check.to_json() for check in self.acceptance],
            "artifact_version": self.artifact_version,
            "changed_files": self.changed_files,
            "tool_calls": self.tool_calls,
            "permission_denials": self.permission_denials,
            "hook_blocks": self.hook_blocks,
            "subagents": self.subagents,
            "compactions": self.compactions,
            "todos": self.todos,
            "commit": None
            if self.commit is None or self.commit.sha is None
            else {"sha": self.commit.sha, "branch": self.commit.branch},
            "commit_skipped": None if self.commit is None else self.commit.skipped,
            "error": self.error,
        }


def aborted_before_start(session_id: str) -> TaskResult:
    """The result of a task cancelled before it started (Ctrl-C while the session opened)."""
    return TaskResult(
        session_id=session_id,
        task_id="",
        state=TaskState.ABORTED,
        reason=TerminalReason.ABORTED,
        final_text=None,
        turns=0,
        duration_s=0.0,
        usage=Usage(),
        cost_usd=None,
        error="cancelled before the task started",
    )
