"""`agentcli doctor` reports the setup and the sandbox, never a secret, without the SDK."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def test_doctor_reports_setup_and_sandbox(workspace: Path) -> None:
    (workspace / ".agentcli").mkdir()
    (workspace / ".agentcli" / "config.toml").write_text('model = "claude-test-model"\n')
    proc = subprocess.run(
        [sys.executable, "-m", "agentcli", "doctor"],
        cwd=workspace,
        env={**os.environ, "ANTHROPIC_API_KEY": "sk-ant-secret-value"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "model: claude-test-model" in out
    assert "API key: ANTHROPIC_API_KEY is set" in out
    assert "sk-ant-secret-value" not in out + proc.stderr
    assert "git: git version" in out
    assert "ripgrep: " in out
    assert "sandbox: " in out and "read-only profile" in out


def test_doctor_does_not_import_the_sdk(workspace: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from agentcli.ui.doctor import doctor_lines; "
        f"doctor_lines(Path({str(workspace)!r})); print('anthropic' in sys.modules)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert proc.stdout.strip() == "False"


def test_doctor_says_when_the_key_is_missing(workspace: Path) -> None:
    from agentcli.ui.doctor import doctor_lines

    lines = doctor_lines(workspace)
    assert "API key: missing (export ANTHROPIC_API_KEY=…)" in lines


def test_a_missing_key_is_a_problem_and_a_non_zero_exit(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentcli.ui.doctor import doctor_command

    monkeypatch.chdir(workspace)
    assert doctor_command(None) == 1
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == "1 problem: no API key: export ANTHROPIC_API_KEY=…"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-x")
    assert doctor_command(None) == 0
    assert "problem" not in capsys.readouterr().out


def test_a_broken_config_is_reported_and_every_other_check_still_runs(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentcli.ui.doctor import doctor_command

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-x")
    (workspace / ".agentcli").mkdir()
    (workspace / ".agentcli" / "config.toml").write_text("modle = 'x'\n")
    monkeypatch.chdir(workspace)
    assert doctor_command(None) == 1
    out = capsys.readouterr().out
    assert "config: error: " in out and "unknown key `modle`" in out and "`model`" in out
    for later in ("API key: ANTHROPIC_API_KEY is set", "git: git version", "sandbox: "):
        assert later in out
    assert out.strip().splitlines()[-1].startswith("1 problem: ")
