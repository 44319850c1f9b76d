"""Shared fixtures for the adversarial tests (issue 12): the batch cache, kernel feature skips,
and a last sweep for processes an attack left behind.

The machinery (the lab, payloads, evidence) is in `tests.adversarial.lab`.
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.lab import BatchCache, require, sweep_processes


def _landlock_abi() -> int:
    """The kernel's Landlock ABI version (0: none). agentcli's own probe when it has one,
    else the syscall itself (the sandbox is being rebuilt; these tests must not depend on its
    module layout)."""
    try:
        from agentcli.sandbox import landlock

        return int(landlock.abi_version())
    except Exception:
        pass
    try:  # landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION); 444 on x86_64/arm64
        return max(int(ctypes.CDLL(None, use_errno=True).syscall(444, None, 0, 1)), 0)
    except Exception:
        return 0


LANDLOCK_ABI = _landlock_abi()
KERNEL = f"{platform.system()} {platform.release()}"
requires_landlock = pytest.mark.skipif(
    LANDLOCK_ABI < 1,
    reason=f"this kernel ({KERNEL}) has no Landlock: agentcli cannot sandbox here (it must "
    "ask instead), so what a command can do inside the sandbox cannot be tested",
)


@functools.cache
def sandbox_problem() -> str | None:
    """Why agentcli's sandbox does not work on this machine, or None (also when agentcli has
    no probe to ask: then the tests find out)."""
    try:
        from agentcli.sandbox.support import probe_support

        support = probe_support()
    except Exception:
        return None
    return None if support.ok else str(support.problem)


@pytest.fixture
def needs_sandbox() -> None:
    """Skip a check of what must keep working inside the sandbox where there is none."""
    if LANDLOCK_ABI < 1:
        pytest.skip(f"this kernel ({KERNEL}) has no Landlock")
    problem = sandbox_problem()
    if problem:
        pytest.skip(f"agentcli's sandbox does not work here: {problem}")


BATCH_COST = {
    **{"c1-git": 10, "c1-tools": 7, "c2": 6, "c3": 7, "c4": 5, "c5": 10, "c6": 5, "ok": 3},
    **{"i26-c4-outside": 8, "i26-c4": 5, "i26-c6": 6, "i26-c9": 5},
}
"""Rough seconds each batch takes, by key prefix: to split the batches evenly between workers."""
BatchOf = Callable[[dict[str, Any]], tuple[str, Callable[[Path], dict[str, Any]]]]


def _batch_of(item: pytest.Item) -> tuple[str, Callable[[Path], dict[str, Any]]] | None:
    batch_of: BatchOf | None = getattr(getattr(item, "module", None), "batch_of", None)
    if batch_of is None or "outcome" not in getattr(item, "fixturenames", ()):
        return None
    if any(m.args and m.args[0] for m in item.iter_markers("skipif")):
        return None
    callspec = getattr(item, "callspec", None)
    return batch_of(dict(callspec.params) if callspec else {})


def _cost(key: str) -> int:
    return next((c for prefix, c in BATCH_COST.items() if key.startswith(prefix)), 5)


@pytest.fixture(scope="session")
def batches(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> Iterator[BatchCache]:
    """One cache for the whole session. Under xdist the workers share the parent of their
    base temp dirs (unique to this session), and each first plays its own share of the
    session's batches, so that no worker waits for a batch the other is playing while it has
    batches of its own to play."""
    base = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        base = base.parent
    cache = BatchCache(base / "adv")
    if worker_id != "master":
        plan = dict(filter(None, (_batch_of(item) for item in request.session.items)))
        count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
        loads = [0] * count
        mine = []
        for key in sorted(plan, key=lambda k: (-_cost(k), k)):
            worker = loads.index(min(loads))
            loads[worker] += _cost(key)
            if f"gw{worker}" == worker_id:
                mine.append(key)
        for key in mine:
            cache.get(key, plan[key])
    yield cache
    # A safety net: no attack process survives the session, whatever a test did.
    sweep_processes()


@pytest.fixture
def outcome(request: pytest.FixtureRequest, batches: BatchCache) -> dict[str, Any]:
    """The outcome of the batch this test reads (its module's `batch_of(params)`)."""
    found = _batch_of(request.node)
    assert found is not None, f"{request.node.nodeid} has no batch"
    return require(batches.get(*found))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A batch plays when its first test runs (and a worker first plays its share of all of
    them), which can take minutes on a loaded machine: a longer safety limit here."""
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(900))


@pytest.fixture
def curl() -> str:
    found = shutil.which("curl")
    if found is None:
        pytest.skip("curl is not installed on this machine")
    return found
