"""Shared fixtures: no test reaches the network or the user's real agentcli data, and no test
leaves a process running (`tests.processes`)."""

from __future__ import annotations

import compileall
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from agentcli import environment
from agentcli.testing import guard_network
from tests import processes
from tests.sandbox_skips import SandboxSkips

# CI and the README's test command run the same examples every time (a property test that
# found a new counterexample at random would fail a landing by chance); the explore profile
# (AGENTCLI_HYPOTHESIS=explore) searches afresh each run, to find new ones on purpose. Neither
# has a per-example deadline: hypothesis's default (200 ms) is a wall-clock bound, which a
# loaded 2-core machine misses now and then (timing belongs in bench/, not in tests).
settings.register_profile("repeatable", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None)
settings.load_profile(
    "explore" if os.environ.get("AGENTCLI_HYPOTHESIS") == "explore" else "repeatable"
)

CHECKOUT = Path(__file__).resolve().parents[1]


def pytest_configure(config: pytest.Config) -> None:
    # A sandbox test skipped where the sandbox is enforced fails the run (tests.sandbox_skips).
    config.pluginmanager.register(SandboxSkips(), "agentcli-sandbox-skips")
    if not hasattr(config, "workerinput"):  # once, before xdist starts its workers
        compile_agentcli()


def compile_agentcli() -> None:
    """Write agentcli's byte-code once, as installing a package does. Where
    PYTHONDONTWRITEBYTECODE is set (CI machines, this checkout's editable install), every
    `agentcli` a test starts, and every xdist worker, would otherwise compile all of agentcli's
    sources again on import (~0.15-0.3 s a process, hundreds of processes). Only stale files
    are compiled; a read-only checkout simply goes without."""
    compileall.compile_dir(CHECKOUT / "agentcli", quiet=2, workers=1)


@pytest.fixture(autouse=True)
def _isolated(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    home = tmp_path_factory.mktemp("agentcli-home")
    monkeypatch.setenv("AGENTCLI_HOME", str(home / "data"))
    monkeypatch.setenv("AGENTCLI_CONFIG_DIR", str(home / "config"))
    # Claude Code's and Codex's user directories hold skills and commands a session reads:
    # never the real ones (`~/.agents/skills` follows HOME, which tests of skills set).
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / "claude"))
    monkeypatch.setenv("CODEX_HOME", str(home / "codex"))
    # Anything that forgets to point the SDK at the fake server hits a closed local port.
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.delenv("AGENTCLI_MODEL", raising=False)
    monkeypatch.delenv("AGENTCLI_PROVIDER", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    # `python -m agentcli` in a subprocess imports this checkout, not whichever one the
    # virtualenv's editable install points at (a git worktree shares the virtualenv).
    monkeypatch.setenv("PYTHONPATH", str(CHECKOUT))
    # A provider's claim on a credential lasts for the process: each test starts without one.
    claimed = set(environment._claimed)
    with guard_network():
        yield
    environment._claimed.clear()
    environment._claimed.update(claimed)


@pytest.fixture(scope="session", autouse=True)
def _reaper() -> None:
    """Orphans of any test's processes come to this process (`tests.processes`), so a leak
    cannot hide by re-parenting itself to init."""
    assert processes.become_subreaper(), "cannot become a child subreaper: leaks would hide"


@pytest.fixture(autouse=True)
def _leaves_no_processes(_reaper: None) -> Iterator[None]:
    """Fail the test that leaves a process running (killing it, so the next test starts
    clean). Set up before, and so torn down after, every other fixture of the test: what they
    stop in their teardown is not a leak."""
    before = processes.live_descendants()
    yield
    left = processes.left_behind(before)
    if left:
        described = [processes.describe(proc) for proc in left]
        processes.kill(left)
        pytest.fail(
            "the test left processes running (now killed):\n  " + "\n  ".join(described),
            pytrace=False,
        )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


RECORDINGS = Path(__file__).resolve().parent / "recordings"


@pytest.fixture
def recordings() -> Path:
    """Real recorded Anthropic API traffic (copied from ../shared, licenses included)."""
    return RECORDINGS
