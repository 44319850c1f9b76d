"""Shared fixtures for the adversarial tests (issue 12): the batch cache, kernel feature skips,
and a last sweep for processes an attack left behind.

The machinery (the lab, payloads, evidence) is in `tests.adversarial.lab`.
"""

from __future__ import annotations

import functools
import platform
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentcli.sandbox import landlock
from tests.adversarial.lab import BatchCache, sweep_processes

LANDLOCK_ABI = landlock.abi_version()
KERNEL = f"{platform.system()} {platform.release()}"
requires_landlock = pytest.mark.skipif(
    LANDLOCK_ABI < 1,
    reason=f"this kernel ({KERNEL}) has no Landlock: agentcli cannot sandbox here (it must "
    "ask instead), so what a command can do inside the sandbox cannot be tested",
)


@functools.cache
def sandbox_problem() -> str | None:
    """Why agentcli's sandbox does not work on this machine, or None."""
    from agentcli.sandbox.support import probe_support

    support = probe_support()
    return None if support.ok else support.problem


@pytest.fixture
def needs_sandbox() -> None:
    """Skip a check of what must keep working inside the sandbox where there is none."""
    if LANDLOCK_ABI < 1:
        pytest.skip(f"this kernel ({KERNEL}) has no Landlock")
    problem = sandbox_problem()
    if problem:
        pytest.skip(f"agentcli's sandbox does not work here: {problem}")


@pytest.fixture(scope="session")
def batches(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Iterator[BatchCache]:
    """One cache for the whole session: under xdist the workers share the parent of their
    base temp dirs (unique to this session)."""
    base = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        base = base.parent
    yield BatchCache(base / "adv")
    # A safety net: no attack process survives the session, whatever a test did.
    sweep_processes()


@pytest.fixture
def curl() -> str:
    found = shutil.which("curl")
    if found is None:
        pytest.skip("curl is not installed on this machine")
    return found


@pytest.fixture
def lab_root(tmp_path: Path) -> Path:
    root = tmp_path / "lab"
    root.mkdir()
    return root
