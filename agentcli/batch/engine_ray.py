"""The `ray` engine (`pip install 'agentcli[ray]'`): one Ray task per task line, each preparing
its workspace on the worker that runs it and running `agentcli run` there; results stream back
to the driver, which alone writes the batch's files.

- Ray: `--ray-address` (else `RAY_ADDRESS`) names a running cluster to connect to; without
  either, a local Ray is started for the batch (`--workers` × `--cpus-per-task` CPUs), quietly
  (no dashboard, no worker logs on the terminal), and stopped at the end. A Ray already
  initialised in this process is used as it is.
- The batch's shared state (`ledger.Ledger`: the cost ledger, the model-request slots, the
  interrupt) is one actor that every task asks.
- Each task asks for `--cpus-per-task` CPUs (`num_cpus`). A worker lost mid-task (its node
  died, its process was killed) is retried by Ray (`max_retries`); the new attempt resumes
  from the task's journal when `DIR` is on storage both workers see, or else starts again
  from the base commit, and its result says so (`attempt`, `restarted: true`).
- What a worker needs from the driver's environment (the API's base URL, the model) comes with
  each task; credentials do not travel through Ray: workers of an existing cluster need their
  own `ANTHROPIC_API_KEY` (a local Ray inherits the driver's environment).
- Repositories must be reachable from the workers: they are checked up front by a Ray task on
  a worker, not by the driver (a local path must be on storage the workers see).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import ray

from agentcli.batch.ledger import Admission, Ledger
from agentcli.batch.records import RunConfig, TaskOutcome, TaskSpec, error_result
from agentcli.batch.runner import run_task, task_paths, worker_name
from agentcli.batch.taskfile import RepoSource
from agentcli.batch.workspace import resolve_all

MAX_RETRIES = 3
"""Ray's retries of a task whose worker was lost."""
CANCEL_POLL_S = 0.5
LOST = "ray:lost"
"""The worker of a task Ray gave up on."""


class RayEngine:
    def __init__(self, *, address: str | None, workers: int, cpus_per_task: float) -> None:
        self.cpus_per_task = cpus_per_task
        self.address = address
        self.workers = workers
        self.started_here = False
        self.ready = False

    def _start(self) -> None:
        """Connect to Ray, or start it: only once the batch's file and options are checked."""
        if self.ready:
            return
        self.ready = True
        if ray.is_initialized():
            return
        address = self.address or os.environ.get("RAY_ADDRESS") or None
        if address is None:
            ray.init(
                num_cpus=max(1, round(self.workers * self.cpus_per_task)),
                _node_ip_address="127.0.0.1",  # one machine: no lookup of its address
                include_dashboard=False,
                log_to_driver=False,
                logging_level=logging.ERROR,
            )
        else:
            ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
        self.started_here = True

    def resolve(
        self, wanted: Iterable[tuple[RepoSource, str | None]]
    ) -> dict[tuple[str, str | None], str | Exception]:
        """`workspace.resolve_all`, run on a worker: what the workers can reach."""
        self._start()
        remote = ray.remote(num_cpus=0)(resolve_all)
        found: dict[tuple[str, str | None], str | Exception] = ray.get(remote.remote(list(wanted)))
        return found

    def run(
        self,
        specs: Sequence[TaskSpec],
        config: RunConfig,
        ledger: Ledger,
        *,
        on_outcome: Callable[[TaskOutcome], None],
        stop: threading.Event,
    ) -> None:
        self._start()
        actor: Any = ray.remote(num_cpus=0)(Ledger).remote(
            max_cost_usd=ledger.max_cost_usd,
            spent_usd=ledger.spent_usd,
            max_requests=ledger.max_requests,
            lease_s=ledger.lease_s,
        )
        task = ray.remote(num_cpus=self.cpus_per_task, max_retries=MAX_RETRIES)(_run_on_worker)
        pending = {task.remote(spec, config, actor): spec for spec in specs}
        stopped = False
        while pending:
            if stop.is_set() and not stopped:
                stopped = True
                ray.get(actor.stop.remote())
            done, _ = ray.wait(list(pending), num_returns=1, timeout=0.2)
            for ref in done:
                spec = pending.pop(ref)
                outcome = _outcome_of(ref, spec, config)
                if outcome.worker == LOST:  # its slots, had it held any, are free again
                    ray.get(actor.finish.remote(outcome.instance_id, None))
                on_outcome(outcome)
        ledger.spent_usd, ledger.budget_stopped = ray.get(actor.totals.remote())
        ledger.stopped = stopped
        ray.kill(actor)

    def close(self) -> None:
        if self.started_here:
            ray.shutdown()


def _outcome_of(ref: Any, spec: TaskSpec, config: RunConfig) -> TaskOutcome:
    try:
        outcome: TaskOutcome = ray.get(ref)
    except ray.exceptions.RayError as exc:
        said = str(exc).strip().splitlines()
        return TaskOutcome(
            instance_id=spec.task.instance_id,
            result=error_result(
                f"the Ray task failed after {MAX_RETRIES} retries: {said[0] if said else exc}"
            ),
            attempt=spec.attempts_before + 1,
            worker=LOST,
            wall_s=0.0,
            workspace=str(task_paths(config.out, spec.task.instance_id).workspace),
        )
    return outcome


class _RemoteLedger:
    """The ledger actor, as a task's runner asks it (`runner.Coordinator`).

    Every call goes through a thread of its own: Ray lends out the CPUs of a task whose main
    thread waits in `ray.get` (or `ray.wait`) to other tasks, so a task that asked the actor
    every half second (is the batch interrupted?) had its CPUs given away while its `agentcli
    run` went on: measured, 2-CPU tasks ran two at a time on 2 CPUs. A wait on another thread
    lends nothing."""

    def __init__(self, actor: Any) -> None:
        self._actor = actor
        self._asked_at = 0.0
        self._cancelled = False
        self._caller = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ledger")

    def _ask(self, call: Callable[[], Any]) -> Any:
        return self._caller.submit(lambda: ray.get(call())).result()

    def close(self) -> None:
        self._caller.shutdown(wait=True)

    def begin(self, instance_id: str) -> Admission:
        admission: Admission = self._ask(lambda: self._actor.begin.remote(instance_id))
        return admission

    def finish(self, instance_id: str, cost_usd: float | None) -> float:
        total: float = self._ask(lambda: self._actor.finish.remote(instance_id, cost_usd))
        return total

    def cancelled(self) -> bool:
        now = time.monotonic()
        if not self._cancelled and now - self._asked_at >= CANCEL_POLL_S:
            self._asked_at = now
            self._cancelled = bool(self._ask(lambda: self._actor.cancelled.remote()))
        return self._cancelled

    def try_acquire(self, holder: str) -> int | None:
        token: int | None = self._ask(lambda: self._actor.try_acquire.remote(holder))
        return token

    def renew(self, holder: str) -> None:
        self._ask(lambda: self._actor.renew.remote(holder))

    def release(self, holder: str, token: int) -> None:
        self._ask(lambda: self._actor.release.remote(holder, token))


def _run_on_worker(spec: TaskSpec, config: RunConfig, actor: Any) -> TaskOutcome:
    ledger = _RemoteLedger(actor)
    try:
        return run_task(spec, config, ledger, worker=worker_name())
    finally:
        ledger.close()
