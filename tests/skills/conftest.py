"""Skills tests run with a home directory of their own: `~/.agents`, `~/.claude` and
`~/.codex` are temporary directories laid out as a user's would be, never the real ones."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    return home


@pytest.fixture
def workspace(tmp_path: Path, home: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws
