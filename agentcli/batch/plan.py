"""Before anything runs: the batch's options checked, its directory chosen (or found again),
every task line checked, every repository reached and its base commit resolved, and each task's
fate decided from what the directory already holds (skip it, start it, resume it, retry it).

Whatever is wrong here is a usage error (exit 2) naming every problem at once, and nothing has
started: bad lines with their numbers (unless `--skip-bad-lines`), repositories that cannot be
reached, tasks that changed since the directory was made.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from agentcli.batch.output import BatchOutput
from agentcli.batch.records import FAILED_STATES, FINISHED_STATES, Start, TaskSpec
from agentcli.batch.taskfile import BadLine, BatchTask, RepoSource, read_task_file
from agentcli.errors import UsageError
from agentcli.vocabulary import PermissionMode

ENGINES = ("local", "ray")
MANIFEST = "batch.json"


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchOptions:
    """`agentcli batch`'s options, as given."""

    tasks_file: Path
    out: Path | None = None
    workers: int = 4
    engine: str = "local"
    ray_address: str | None = None
    max_cost: float | None = None
    model: str | None = None
    permission_mode: str | None = None
    accept: list[str] = field(default_factory=list)
    resume: bool = False
    retry_failed: bool = False
    skip_bad_lines: bool = False
    cpus_per_task: float = 1.0
    max_requests: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    out: Path
    tasks: tuple[BatchTask, ...]
    """Every good line, in file order."""
    to_run: tuple[TaskSpec, ...]
    skipped: tuple[str, ...]
    bad: tuple[BadLine, ...]
    permission_mode: PermissionMode | None


def check_options(options: BatchOptions) -> PermissionMode | None:
    if options.engine not in ENGINES:
        raise UsageError(f"unknown --engine {options.engine!r}", hint="local or ray")
    if options.workers < 1:
        raise UsageError(f"--workers must be at least 1 (got {options.workers})")
    if options.max_requests is not None and options.max_requests < 1:
        raise UsageError(f"--max-requests must be at least 1 (got {options.max_requests})")
    if not (math.isfinite(options.cpus_per_task) and options.cpus_per_task > 0):
        raise UsageError(f"--cpus-per-task must be positive (got {options.cpus_per_task})")
    if options.max_cost is not None and not (
        math.isfinite(options.max_cost) and options.max_cost > 0
    ):
        raise UsageError(f"--max-cost must be a positive number (got {options.max_cost})")
    if options.ray_address and options.engine != "ray":
        raise UsageError("--ray-address needs --engine ray")
    if options.permission_mode is None:
        return None
    try:
        return PermissionMode(options.permission_mode)
    except ValueError:
        known = ", ".join(mode.value for mode in PermissionMode)
        raise UsageError(
            f"unknown --permission-mode {options.permission_mode!r}", hint=known
        ) from None


def make_plan(
    options: BatchOptions,
    resolve: Callable[
        [Iterable[tuple[RepoSource, str | None]]], dict[tuple[str, str | None], str | Exception]
    ],
) -> Plan:
    """Everything decided before the first task starts. `resolve` reaches each distinct
    (repository, base commit) and returns its commit id, or the error saying why it cannot
    (the engine's: the Ray engine asks a worker)."""
    mode = check_options(options)
    try:
        loaded = read_task_file(options.tasks_file)
    except OSError as exc:
        raise UsageError(f"cannot read {options.tasks_file}: {exc.strerror or exc}") from None
    if loaded.bad and not options.skip_bad_lines:
        raise UsageError(
            _listed(f"{options.tasks_file} has bad lines", loaded.bad),
            hint="fix them, or --skip-bad-lines to run the rest",
        )
    if not loaded.tasks:
        raise UsageError(f"{options.tasks_file} has no task")
    out = _directory(options)
    previous = BatchOutput(out) if out.exists() else None
    _check_manifest(out, options.tasks_file, loaded.tasks)
    wanted = {(t.repo.shown, t.base_commit): t for t in loaded.tasks}
    resolved = resolve((t.repo, t.base_commit) for t in wanted.values())
    unreachable = [
        BadLine(task.line, f"repo {key[0]}: {resolved[key]}")
        for key, task in wanted.items()
        if isinstance(resolved[key], Exception)
    ]
    if unreachable:
        raise UsageError(_listed("repositories that cannot be reached", unreachable))
    to_run, skipped = [], []
    for task in loaded.tasks:
        base = resolved[(task.repo.shown, task.base_commit)]
        assert isinstance(base, str)
        spec = _spec_for(task, base, previous, retry_failed=options.retry_failed)
        if spec is None:
            skipped.append(task.instance_id)
        else:
            to_run.append(spec)
    return Plan(
        out=out,
        tasks=loaded.tasks,
        to_run=tuple(to_run),
        skipped=tuple(skipped),
        bad=loaded.bad,
        permission_mode=mode,
    )


def _spec_for(
    task: BatchTask, base: str, previous: BatchOutput | None, *, retry_failed: bool
) -> TaskSpec | None:
    line = previous.latest.get(task.instance_id) if previous is not None else None
    before = previous.attempts(task.instance_id) if previous is not None else 0
    if line is None:
        # Started in a batch that was killed before it wrote a result: resume what is there.
        start = Start.RESUME if before else Start.FRESH
        return TaskSpec(task=task, base=base, start=start, attempts_before=before)
    state = line.get("task_state")
    if state in FAILED_STATES and retry_failed:
        return TaskSpec(task=task, base=base, start=Start.RETRY, attempts_before=before)
    if state in FINISHED_STATES:
        return None
    session = line.get("session_id")
    return TaskSpec(
        task=task,
        base=base,
        start=Start.RESUME,
        attempts_before=before,
        session_id=session if isinstance(session, str) and session else None,
    )


def _directory(options: BatchOptions) -> Path:
    if options.out is not None:
        return options.out.expanduser().resolve()
    if options.resume:
        found = _latest_batch_of(options.tasks_file.resolve(), Path.cwd())
        if found is None:
            raise UsageError(
                f"no batch-* directory here was made from {options.tasks_file}",
                hint="give the directory with --out DIR",
            )
        return found
    return (Path.cwd() / time.strftime("batch-%Y%m%d-%H%M%S")).resolve()


def _latest_batch_of(tasks_file: Path, where: Path) -> Path | None:
    candidates = sorted(where.glob("batch-*"), reverse=True)
    for candidate in candidates:
        manifest = candidate / MANIFEST
        try:
            recorded = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(recorded, dict) and recorded.get("task_file") == str(tasks_file):
            return candidate.resolve()
    return None


def _check_manifest(out: Path, tasks_file: Path, tasks: Iterable[BatchTask]) -> None:
    """Each task of a directory is the same task on every run into it."""
    manifest = out / MANIFEST
    try:
        recorded = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        recorded = {}
    known: dict[str, str] = recorded.get("tasks", {}) if isinstance(recorded, dict) else {}
    changed = [
        BadLine(t.line, f"task {t.instance_id!r} is not the one {out} ran under that id")
        for t in tasks
        if t.instance_id in known and known[t.instance_id] != t.fingerprint()
    ]
    if changed:
        raise UsageError(
            _listed("tasks changed since this directory was made", changed),
            hint="give them new ids, or use another --out DIR",
        )


def write_manifest(out: Path, tasks_file: Path, tasks: Iterable[BatchTask]) -> None:
    manifest = out / MANIFEST
    try:
        recorded = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        recorded = {}
    known = recorded.get("tasks", {}) if isinstance(recorded, dict) else {}
    known.update({t.instance_id: t.fingerprint() for t in tasks})
    out.mkdir(parents=True, exist_ok=True)
    manifest.write_text(
        json.dumps({"task_file": str(tasks_file.resolve()), "tasks": known}, indent=1) + "\n",
        encoding="utf-8",
    )


def _listed(what: str, problems: Iterable[BadLine]) -> str:
    lines = [str(problem) for problem in problems]
    shown = lines[:20] + ([f"… and {len(lines) - 20} more"] if len(lines) > 20 else [])
    return f"{what}:\n  " + "\n  ".join(shown)
