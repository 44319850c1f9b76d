"""`agentcli batch`, start to end: plan (everything checked before anything starts), run the
tasks on the engine, write what finished, summarise, and the exit code.

Exit codes: 0 every task succeeded or is unverified; 1 some failed (or errored, or were left
aborted); 2 usage (bad lines, an unreachable repository, a bad option: nothing started); 3 the
batch's budget (`--max-cost`) kept tasks from starting; 130 interrupted.

Ctrl-C (SIGINT, or SIGTERM): no task starts any more, every running task is interrupted (its
`agentcli run` ends as `aborted`, resumable), what finished is written, exit 130. A second one
ends the batch at once (its runs die with it, and are resumed from their journals next time).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Protocol

from agentcli.batch import ledger as ledger_module
from agentcli.batch.ledger import Ledger, LocalLedger
from agentcli.batch.output import BatchOutput, Summary
from agentcli.batch.plan import BatchOptions, Plan, make_plan, write_manifest
from agentcli.batch.records import FINISHED_STATES, RunConfig, TaskOutcome
from agentcli.errors import UsageError
from agentcli.tasks import ExitCode

if TYPE_CHECKING:
    from agentcli.batch.engine_ray import RayEngine

FORWARDED = (
    *("ANTHROPIC_BASE_URL", "AGENTCLI_MODEL", "AGENTCLI_PROVIDER", "AGENTCLI_TRANSPORT"),
    *("OPENAI_BASE_URL", "AGENTCLI_CONFIG_DIR"),
)
"""What every task's `agentcli run` gets from the driver's environment, wherever it runs (no
credential: a worker of a cluster has its own)."""


@dataclass(frozen=True, slots=True)
class BatchReport:
    summary: Summary
    out: Path
    exit_code: int


class BatchView(Protocol):
    """What the user is shown while the batch runs (`ui.batch_progress`)."""

    def started(self, total: int) -> None: ...
    def said(self, line: str) -> None: ...
    def finished(self, outcome: TaskOutcome) -> None: ...
    def close(self) -> None: ...


class Unseen:
    """A batch nobody watches."""

    def started(self, total: int) -> None:
        pass

    def said(self, line: str) -> None:
        pass

    def finished(self, outcome: TaskOutcome) -> None:
        pass

    def close(self) -> None:
        pass


def run_batch(options: BatchOptions, view: BatchView | None = None) -> BatchReport:
    """Run the batch `options` describe. UsageError (exit 2) when it cannot start."""
    engine = None
    if options.engine == "ray":
        try:
            from agentcli.batch.engine_ray import RayEngine
        except ModuleNotFoundError as exc:
            if exc.name != "ray":
                raise
            raise UsageError(
                "--engine ray needs Ray, which is not installed",
                hint="pip install 'agentcli[ray]'",
            ) from None
        engine = RayEngine(
            address=options.ray_address,
            workers=options.workers,
            cpus_per_task=options.cpus_per_task,
        )
    try:
        if engine is None:
            from agentcli.batch.workspace import resolve_all

            plan = make_plan(options, resolve_all)
        else:
            plan = make_plan(options, engine.resolve)
        return _run_plan(plan, options, engine, view or Unseen())
    finally:
        if engine is not None:
            engine.close()


def _run_plan(
    plan: Plan, options: BatchOptions, engine: RayEngine | None, view: BatchView
) -> BatchReport:
    write_manifest(plan.out, options.tasks_file, plan.tasks)
    output = BatchOutput(plan.out)
    ledger = Ledger(
        max_cost_usd=options.max_cost,
        spent_usd=output.spent_usd(),
        max_requests=options.max_requests,
        lease_s=ledger_module.LEASE_S,  # looked up now: a test shortens it
    )
    config = RunConfig(
        out=plan.out,
        model=options.model,
        permission_mode=plan.permission_mode,
        accept=tuple(options.accept),
        environment={name: os.environ[name] for name in FORWARDED if os.environ.get(name)},
        max_requests=options.max_requests,
    )
    progress = view
    progress.started(len(plan.to_run))
    for bad in plan.bad:
        progress.said(f"agentcli batch: skipped {options.tasks_file}:{bad}")
    if plan.skipped:
        progress.said(f"agentcli batch: {len(plan.skipped)} tasks already finished in {plan.out}")
    started = time.monotonic()
    ran = 0
    stop = threading.Event()

    def on_outcome(outcome: TaskOutcome) -> None:
        nonlocal ran
        if not outcome.started:
            return
        ran += 1
        output.record(outcome)
        progress.finished(outcome)

    try:
        with _interrupts(stop):
            if engine is None:
                _run_locally(plan, config, ledger, options.workers, on_outcome, stop)
            else:
                engine.run(plan.to_run, config, ledger, on_outcome=on_outcome, stop=stop)
    finally:
        progress.close()
        order = [task.instance_id for task in plan.tasks]
        output.finish(order)
    summary = output.summary(order, ran=ran, wall_s=time.monotonic() - started)
    return BatchReport(summary, plan.out, _exit_code(output, order, ledger, stop))


def _run_locally(
    plan: Plan,
    config: RunConfig,
    ledger: Ledger,
    workers: int,
    on_outcome: Callable[[TaskOutcome], None],
    stop: threading.Event,
) -> None:
    from agentcli.batch.engine_local import run_local

    shared = LocalLedger(ledger)
    finished = threading.Event()

    def watch() -> None:  # a signal handler must not take the ledger's lock: this thread does
        while not finished.is_set():
            if stop.wait(0.1):
                shared.stop()
                return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        run_local(plan.to_run, config, shared, workers=workers, on_outcome=on_outcome)
    finally:
        finished.set()
        watcher.join()
    ledger.spent_usd, ledger.budget_stopped = shared.totals()


def _exit_code(output: BatchOutput, order: list[str], ledger: Ledger, stop: threading.Event) -> int:
    if stop.is_set():
        return int(ExitCode.ABORTED)
    if ledger.budget_stopped:
        return int(ExitCode.LIMITS)
    states = [output.latest[i].get("task_state") for i in order if i in output.latest]
    if any(state not in ("succeeded", "unverified") for state in states) or not all(
        state in FINISHED_STATES for state in states
    ):
        return int(ExitCode.FAILED)
    return int(ExitCode.OK)


@contextmanager
def _interrupts(stop: threading.Event) -> Iterator[None]:
    """SIGINT/SIGTERM set `stop`; a second one ends the process at once."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(_signum: int, _frame: FrameType | None) -> None:
        if stop.is_set():
            os._exit(int(ExitCode.ABORTED))
        stop.set()

    saved = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, previous in saved.items():
            signal.signal(sig, previous)
