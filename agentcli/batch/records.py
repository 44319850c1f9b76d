"""What moves between the batch's driver and its workers: the options every task runs with, one
task to run (`TaskSpec`), and what came of it (`TaskOutcome`). Plain frozen records, so the Ray
engine can send them to other machines as they are."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentcli.batch.taskfile import BatchTask
from agentcli.vocabulary import PermissionMode

ERROR_STATE = "error"
"""`task_state` of a task that produced no run result (its workspace or setup failed, or its
`agentcli run` was killed or crashed)."""
FINISHED_STATES = frozenset({"succeeded", "failed", "unverified", "budget_exhausted"})
"""Task states a rerun skips (`failed` and `budget_exhausted` unless `--retry-failed`)."""
FAILED_STATES = frozenset({"failed", "budget_exhausted"})


class Start(enum.StrEnum):
    FRESH = "fresh"
    """First run: a workspace at the base commit, setup, a new session."""
    RESUME = "resume"
    """An unfinished run: its session resumed from the journal (or, when the journal cannot be
    found on this machine, started again from the base commit: `restarted`)."""
    RETRY = "retry"
    """`--retry-failed`: a new workspace at the base commit and a new session."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunConfig:
    """The batch's options that reach every task."""

    out: Path
    model: str | None = None
    permission_mode: PermissionMode | None = None
    accept: tuple[str, ...] = ()
    environment: dict[str, str] = field(default_factory=dict)
    """Variables (never credentials) the driver passes on to every task: the API's base URL,
    the model and provider, so workers on other machines talk to the same API."""
    max_requests: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskSpec:
    task: BatchTask
    base: str
    """The commit it starts from, resolved before the batch started."""
    start: Start
    attempts_before: int = 0
    """How many times it was started in this directory before."""
    session_id: str | None = None
    """The session its last run recorded (RESUME): if this machine's journal lacks it, the
    task's earlier work is lost and it starts again from its base commit (`restarted`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskOutcome:
    """One task's run, as `results.jsonl` records it; `started` False: the batch's budget or
    an interrupt kept it from starting (no result is written)."""

    instance_id: str
    result: dict[str, Any]
    attempt: int
    worker: str
    wall_s: float
    workspace: str
    restarted: bool = False
    model_patch: str | None = None
    model: str | None = None
    started: bool = True

    @property
    def state(self) -> str:
        return str(self.result.get("task_state", ERROR_STATE))

    @property
    def cost_usd(self) -> float | None:
        cost = self.result.get("cost_usd")
        return float(cost) if isinstance(cost, int | float) else None

    def line(self) -> dict[str, Any]:
        """Its `results.jsonl` line: the run's JSON result plus where and how it ran."""
        return {
            **self.result,
            "instance_id": self.instance_id,
            "attempt": self.attempt,
            "worker": self.worker,
            "wall_s": round(self.wall_s, 3),
            "workspace": self.workspace,
            "restarted": self.restarted,
        }


def error_result(message: str, *, session_id: str = "") -> dict[str, Any]:
    """The result of a task whose run gave none, shaped like a run's result."""
    return {
        "type": "result",
        "subtype": "error_batch",
        "is_error": True,
        "session_id": session_id,
        "task_id": "",
        "task_state": ERROR_STATE,
        "terminal_reason": "batch_error",
        "cost_usd": None,
        "total_cost_usd": None,
        "error": message,
    }
