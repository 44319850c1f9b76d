"""The `local` engine: `--workers` workers on this machine, each running one task's `agentcli
run` process at a time (the workers are threads of the batch process: a task's work happens in
its own process, so they only wait on it)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed

from agentcli.batch.ledger import LocalLedger
from agentcli.batch.records import RunConfig, TaskOutcome, TaskSpec, error_result
from agentcli.batch.runner import run_task, task_paths


def run_local(
    specs: Sequence[TaskSpec],
    config: RunConfig,
    ledger: LocalLedger,
    *,
    workers: int,
    on_outcome: Callable[[TaskOutcome], None],
) -> None:
    """Run every spec, `workers` at a time; `on_outcome` is called in this thread as each
    ends. Once `ledger.stop()` is called, no task starts and running ones are interrupted."""
    numbers = itertools.count(1)
    local = threading.local()

    def worker() -> str:
        if not hasattr(local, "name"):
            local.name = f"local:{next(numbers)}"
        name: str = local.name
        return name

    def one(spec: TaskSpec) -> TaskOutcome:
        return run_task(spec, config, ledger, worker=worker())

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="batch") as pool:
        futures: dict[Future[TaskOutcome], TaskSpec] = {
            pool.submit(one, spec): spec for spec in specs
        }
        for future in as_completed(futures):
            spec = futures[future]
            try:
                outcome = future.result()
            except Exception as exc:  # a bug in one task's handling ends that task alone
                outcome = TaskOutcome(
                    instance_id=spec.task.instance_id,
                    result=error_result(f"internal error: {type(exc).__name__}: {exc}"),
                    attempt=spec.attempts_before + 1,
                    worker="local",
                    wall_s=0.0,
                    workspace=str(task_paths(config.out, spec.task.instance_id).workspace),
                )
            on_outcome(outcome)
