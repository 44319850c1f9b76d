"""The benchmarks keep working as the code changes (nothing here times anything).

`python -m bench.run` is not part of CI, so a change can break a benchmark unnoticed (the
session lock once made the journal benchmark's repeated resume fail). The quick ones run here,
all of their code on their smallest sizes (`python -m bench.run --smoke`: the same code as a
full run, on sizes whose numbers mean nothing); the slow ones (start-up, REPL, tools, hooks:
minutes of subprocesses; the 600-turn session) are imported.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SLOW = [
    "bench_startup",
    "bench_repl",
    "bench_tools",
    "bench_sandbox",
    "bench_long",
    "bench_exit",
    "bench_hooks",
    "bench_batch",
]
QUICK = sorted({p.stem for p in (ROOT / "bench").glob("bench_*.py")} - set(SLOW))


def test_every_benchmark_is_either_run_or_imported_here() -> None:
    assert set(QUICK) == {"bench_cost", "bench_journal", "bench_loop", "bench_snapshot"}


@pytest.mark.parametrize("name", SLOW)
def test_slow_benchmarks_import(name: str) -> None:
    module = importlib.import_module(f"bench.{name}")
    assert callable(module.run)


def test_quick_benchmarks_run(tmp_path: Path) -> None:
    """One process for all of them: each started its own, and importing agentcli cost more
    than the smoke-sized benchmarks themselves."""
    names = [name.removeprefix("bench_") for name in QUICK]
    done = subprocess.run(
        [sys.executable, "-m", "bench.run", "--smoke", *names],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=110,
        env={**os.environ, "AGENTCLI_HOME": str(tmp_path / "home")},
    )
    assert done.returncode == 0, done.stderr
    assert "FAILED" not in done.stdout
    rows = [line.split()[0] for line in done.stdout.splitlines() if line.strip()]
    assert sorted(set(rows)) == sorted(names), done.stdout  # each printed its rows


def test_the_floor_client_of_the_startup_benchmark_sends_a_request_the_api_accepts() -> None:
    """bench_startup compares `run` with this script: it must really send one request."""
    from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text
    from bench.bench_startup import FLOOR_SCRIPT

    with FakeMessagesServer() as server:
        server.push(stream_message([text("ok")]))
        env = {**os.environ, "ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "k"}
        done = subprocess.run([sys.executable, "-c", FLOOR_SCRIPT], env=env, timeout=60)
    assert done.returncode == 0
    assert [r.path for r in server.requests] == ["/v1/messages"]
