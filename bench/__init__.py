"""Benchmarks of agentcli's quality bars (SPEC §10). Run them all with `python -m bench.run`.

`python -m bench.run --smoke` runs each on its smallest sizes instead (`sized`): every code
path of the benchmark, in a second or so, with numbers that mean nothing. The test suite runs
the quick benchmarks that way, so that a change cannot break one unnoticed.
"""

from __future__ import annotations

import os

SMOKE_ENV = "AGENTCLI_BENCH_SMOKE"


def sized(full: int, smoke: int) -> int:
    """`full`, or `smoke` under `--smoke` (read when a benchmark module is imported)."""
    return smoke if os.environ.get(SMOKE_ENV) == "1" else full
