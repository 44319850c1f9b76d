"""`run` starts the sandbox probe on another thread while it starts up (issue 35): the session
gets the same answer as a probe of its own, only its own data dir's answer, and a run refused
before the session asks leaves neither a cached answer nor the probe's scratch directory."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentcli.sandbox import support
from tests.sandbox.conftest import requires_landlock


@pytest.fixture
def fresh_probe() -> Iterator[None]:
    """No answer known to this process before the test, nor after it (other tests get the
    process's usual one again)."""
    support.probe_support.cache_clear()
    support._started = None
    yield
    support.probe_support.cache_clear()
    support._started = None


def _cached_answers(home: Path) -> list[str]:
    return sorted(p.name for p in home.glob(f"{support.CACHE_FILE}.*")) if home.exists() else []


@requires_landlock
def test_the_session_gets_the_started_probes_answer_and_keeps_it(
    fresh_probe: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "data"
    monkeypatch.setenv("AGENTCLI_HOME", str(home))
    probes: list[int] = []
    real = support._probe
    monkeypatch.setattr(support, "_probe", lambda abi: probes.append(abi) or real(abi))
    support.start_probe()
    support.start_probe()  # once per process
    assert _cached_answers(home) == []  # nothing written before the session asks
    answer = support.probe_support()
    assert answer.ok, answer.problem
    assert len(probes) == 1  # the started probe's answer, not a second probe
    assert len(_cached_answers(home)) == 1  # kept for the next run, as a probe of its own is
    assert support.probe_support() is answer


@requires_landlock
def test_a_probe_started_for_another_data_dir_is_not_taken(
    fresh_probe: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTCLI_HOME", str(tmp_path / "first"))
    support.start_probe()
    monkeypatch.setenv("AGENTCLI_HOME", str(tmp_path / "second"))
    answer = support.probe_support()
    assert answer.ok, answer.problem
    assert _cached_answers(tmp_path / "second") != []
    assert _cached_answers(tmp_path / "first") == []


def test_a_run_refused_before_the_session_leaves_no_probe_behind(tmp_path: Path) -> None:
    """The real binary (a fresh process: the probe really starts) without an API key."""
    home, scratch, workspace = tmp_path / "data", tmp_path / "tmp", tmp_path / "ws"
    scratch.mkdir()
    workspace.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY",)}
    env.update(AGENTCLI_HOME=str(home), TMPDIR=str(scratch))
    done = subprocess.run(
        [sys.executable, "-m", "agentcli", "run", "hi"],
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "ANTHROPIC_API_KEY" in done.stderr
    assert _cached_answers(home) == []
    assert list(scratch.iterdir()) == []  # the probe's scratch directory is gone too
