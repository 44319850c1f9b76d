"""The query loop's own cost: time per turn and memory of a long session.

A scripted model asks for one `read_file` per turn (a different file each time, so the
convergence guard stays quiet) through the session `agentcli run` builds (`build_manager`: real
permissions, real SQLite journal, the built-in tools, the convergence guard). The model answers
at once, so the time between two model calls is all agentcli: keeping the response, journaling
it, the permission check, running the read, journaling the result, and building the next
request. Target ≤ 2 ms per turn (median).

Peak memory: tracemalloc's peak over a whole 200-turn task (Python allocations; SQLite's own
page cache is not traced), next to the size of the history it produced (what the model would be
sent on the last turn).

`python -m bench.bench_loop --profile` prints a pyinstrument profile of the turns instead.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agentcli.events import EventSink
from agentcli.model import ModelRequest, ModelResponse
from agentcli.testing import respond, text, tool_use
from bench import sized

TURNS = sized(200, 10)
WARM_UP_TURNS = sized(20, 5)
FILE_LINES = 60


class ReadEveryFile:
    """A scripted model that reads src/m0.py, src/m1.py, … one per turn, then stops. Records
    when each request arrived, and nothing else (no copies of the history)."""

    def __init__(self, turns: int) -> None:
        self.turns = turns
        self.arrivals: list[float] = []
        self._responses = [
            respond(tool_use("read_file", {"path": f"src/m{n}.py"}, id=f"toolu_{n:05d}"))
            for n in range(turns - 1)
        ]
        self._responses.append(respond(text("Read them all.")))

    @property
    def model(self) -> str:
        return "claude-sonnet-4-5"

    async def aclose(self) -> None:
        """Nothing to close."""

    async def complete(self, request: ModelRequest, on_event: EventSink) -> ModelResponse:
        self.arrivals.append(time.perf_counter())
        return self._responses[len(self.arrivals) - 1]


@contextmanager
def isolated_home() -> Iterator[Path]:
    """A throw-away AGENTCLI_HOME and config dir (the journal goes there), restored after."""
    home = Path(tempfile.mkdtemp(prefix="agentcli-bench-loop-"))
    saved = {key: os.environ.get(key) for key in ("AGENTCLI_HOME", "AGENTCLI_CONFIG_DIR")}
    os.environ["AGENTCLI_HOME"] = str(home / "data")
    os.environ["AGENTCLI_CONFIG_DIR"] = str(home / "config")
    try:
        yield home
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(home, ignore_errors=True)


def make_workspace(home: Path, files: int) -> Path:
    workspace = home / "ws"
    (workspace / "src").mkdir(parents=True)
    for n in range(files):
        lines = (f"def f{n}_{i}(x):  # a typical short line of code\n" for i in range(FILE_LINES))
        (workspace / "src" / f"m{n}.py").write_text("".join(lines))
    return workspace


def run_session(workspace: Path, model: ReadEveryFile) -> tuple[int, int]:
    """One task through the `run` session; returns (turns, history size in characters)."""
    from agentcli.session.options import SessionOptions
    from agentcli.ui.run import event_sink, open_run_session

    options = SessionOptions(task="read every file", cwd=workspace, quiet=True)
    events = event_sink(options)
    live = open_run_session(options, events, model_factory=lambda _name: model)
    result = asyncio.run(live.run_task("read every file"))
    if result.turns != model.turns or result.state.value != "unverified":
        raise RuntimeError(f"the scripted session did not run as planned: {result}")
    size = sum(len(str(m.to_wire())) for m in live.messages)
    asyncio.run(live.close())
    return result.turns, size


def per_turn_ms(turns: int = TURNS) -> list[float]:
    with isolated_home() as home:
        workspace = make_workspace(home, turns)
        model = ReadEveryFile(turns)
        run_session(workspace, model)
    gaps = [b - a for a, b in zip(model.arrivals, model.arrivals[1:], strict=False)]
    return [gap * 1000 for gap in gaps]


def peak_memory(turns: int = TURNS) -> tuple[float, float]:
    """(peak MB allocated during a `turns`-turn task, history size in MB)."""
    with isolated_home() as home:
        workspace = make_workspace(home, turns)
        model = ReadEveryFile(turns)
        tracemalloc.start()
        try:
            _, size = run_session(workspace, model)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    return peak / 1e6, size / 1e6


def run() -> list[tuple[str, str]]:
    per_turn_ms(WARM_UP_TURNS)  # warm-up: imports, schema generation, SQLite page cache
    samples = per_turn_ms()
    ordered = sorted(samples)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    peak, history = peak_memory()
    return [
        (
            f"loop overhead per turn ({TURNS} turns, read_file, SQLite journal)",
            f"median {statistics.median(samples):.2f} ms, p95 {p95:.2f} ms (target ≤ 2 ms)",
        ),
        (
            f"peak memory of a {TURNS}-turn task",
            f"{peak:.1f} MB traced (history {history:.2f} MB, {peak / history:.0f}x)",
        ),
    ]


def profile() -> None:
    from pyinstrument import Profiler

    per_turn_ms(WARM_UP_TURNS)
    profiler = Profiler(interval=0.0002)
    with profiler:
        per_turn_ms()
    print(profiler.output_text(unicode=True, color=False, show_all=False))


if __name__ == "__main__":
    if "--profile" in sys.argv[1:]:
        profile()
    else:
        for name, value in run():
            print(f"{name:60} {value}")
