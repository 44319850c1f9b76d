"""Run every benchmark and print one table: `python -m bench.run [NAME ...]`.

Each `bench/bench_*.py` module exposes `run() -> list[tuple[str, str]]`: rows of (what was
measured, the result with its ratio or target). Benchmarks measure their comparisons side by
side in the same run, so the ratios hold on whatever machine runs them. Give names (e.g.
`tools journal`) to run only `bench_tools.py` and `bench_journal.py`; `--smoke` runs them on
their smallest sizes (`bench.sized`: does each still work? its numbers mean nothing).
"""

from __future__ import annotations

import importlib
import os
import sys
import time
import traceback
from pathlib import Path

from bench import SMOKE_ENV

BENCH_DIR = Path(__file__).resolve().parent


def discover(only: list[str]) -> list[str]:
    names = sorted(path.stem for path in BENCH_DIR.glob("bench_*.py"))
    if only:
        wanted = {n if n.startswith("bench_") else f"bench_{n}" for n in only}
        unknown = wanted - set(names)
        if unknown:
            raise SystemExit(f"unknown benchmark(s): {', '.join(sorted(unknown))}; have {names}")
        names = [n for n in names if n in wanted]
    return names


def main(argv: list[str]) -> int:
    if str(BENCH_DIR.parent) not in sys.path:
        sys.path.insert(0, str(BENCH_DIR.parent))
    if "--smoke" in argv:
        argv = [arg for arg in argv if arg != "--smoke"]
        os.environ[SMOKE_ENV] = "1"  # before the benchmarks are imported: they size on import
    failed = 0
    rows: list[tuple[str, str, str]] = []
    for name in discover(argv):
        started = time.perf_counter()
        print(f"running {name} ...", file=sys.stderr, flush=True)
        try:
            module = importlib.import_module(f"bench.{name}")
            results = module.run()
        except Exception:
            failed += 1
            traceback.print_exc()
            rows.append((name, "FAILED", "see the traceback above"))
            continue
        short = name.removeprefix("bench_")
        rows.extend((short, what, result) for what, result in results)
        print(f"  {name} took {time.perf_counter() - started:.1f} s", file=sys.stderr)
    width = max((len(what) for _, what, _ in rows), default=0)
    group_width = max((len(group) for group, _, _ in rows), default=0)
    for group, what, result in rows:
        print(f"{group:{group_width}}  {what:{width}}  {result}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
