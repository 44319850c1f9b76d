"""`agentcli batch --engine ray`: throughput on two workers against one, on one local Ray.

TASKS tasks (`BENCH_BATCH_TASKS` overrides), each a real `agentcli run` of two model requests
against the fake Messages API, whose every response takes ~LATENCY_S to stream
(`BENCH_BATCH_LATENCY`; a model thinks: real tasks wait on the API far more than they
compute). One Ray (2 CPUs) runs both
batches, interleaved REPEAT times: one worker (`--cpus-per-task 2`, so one task at a time) and
two (`--cpus-per-task 1`). Target: two workers finish ≥ 1.6× the tasks per second of one.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from agentcli.testing.by_prompt import ByPrompt
from agentcli.testing.fake_api import (
    FakeMessagesServer,
    SseResponse,
    message_events,
    text,
    tool_use,
)

TASKS = int(os.environ.get("BENCH_BATCH_TASKS", "8"))
LATENCY_S = float(os.environ.get("BENCH_BATCH_LATENCY", "3"))
"""Seconds each model response takes (a real one takes 5-30 s). Each task also costs ~1 s of
CPU (an `agentcli run` process, its checkout and diff): on 2 shared cores under load, a
shorter latency measures the CPU contention of the machine, not the engine's scheduling."""
REPEAT = 2


def _slow(content: list[dict[str, object]]) -> SseResponse:
    events = message_events(content)
    return SseResponse(events=events, delay_s=LATENCY_S / len(events))


def _repo(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "start"]):
        if args[0] == "add":
            (repo / "README").write_text("hello\n")
        subprocess.run(
            ["git", "-c", "user.name=b", "-c", "user.email=b@example.com", *args],
            cwd=repo,
            check=True,
            capture_output=True,
        )
    return repo


def _batch(tasks: Path, out: Path, cpus_per_task: float) -> float:
    from agentcli.batch.plan import BatchOptions
    from agentcli.batch.run import run_batch

    started = time.perf_counter()
    report = run_batch(
        BatchOptions(tasks_file=tasks, out=out, engine="ray", cpus_per_task=cpus_per_task)
    )
    elapsed = time.perf_counter() - started
    if report.summary.unverified != TASKS:
        raise RuntimeError(f"the batch did not run every task: {report.summary}")
    return elapsed


def run() -> list[tuple[str, str]]:
    import ray

    root = Path(tempfile.mkdtemp(prefix="bench-batch-"))
    scripts = ByPrompt(
        {
            "work": [
                _slow([tool_use("write_file", {"path": "out.txt", "content": "x\n"})]),
                _slow([text("done")]),
            ]
        }
    )
    saved = dict(os.environ)
    try:
        repo = _repo(root)
        tasks = root / "tasks.jsonl"
        tasks.write_text(
            "".join(
                json.dumps({"id": f"t{n}", "task": "[work] write out.txt", "repo": str(repo)})
                + "\n"
                for n in range(TASKS)
            )
        )
        with FakeMessagesServer(responder=scripts) as server:
            os.environ.update(
                ANTHROPIC_BASE_URL=server.base_url,
                ANTHROPIC_API_KEY="bench",
                AGENTCLI_HOME=str(root / "home"),
                AGENTCLI_CONFIG_DIR=str(root / "config"),
            )
            ray.init(
                num_cpus=2,
                _node_ip_address="127.0.0.1",
                include_dashboard=False,
                log_to_driver=False,
                logging_level=logging.ERROR,
                _temp_dir=str(root / "ray"),
            )
            try:
                one, two = [], []
                for n in range(REPEAT):
                    one.append(_batch(tasks, root / f"one-{n}", 2.0))
                    two.append(_batch(tasks, root / f"two-{n}", 1.0))
            finally:
                ray.shutdown()
    finally:
        os.environ.clear()
        os.environ.update(saved)
        shutil.rmtree(root, ignore_errors=True)
    rate_one = TASKS / statistics.median(one)
    rate_two = TASKS / statistics.median(two)
    ratio = rate_two / rate_one
    return [
        (f"ray, 1 worker: {TASKS} tasks", f"{statistics.median(one):.1f} s"),
        (f"ray, 2 workers: {TASKS} tasks", f"{statistics.median(two):.1f} s"),
        (
            "ray throughput, 2 workers / 1",
            f"{ratio:.2f}x (target >= 1.6x) {'ok' if ratio >= 1.6 else 'MISSED'}",
        ),
    ]
