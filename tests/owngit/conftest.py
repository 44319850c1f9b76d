"""Fixtures for agentcli's own git on hostile repositories (see `hostile`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.owngit.hostile import Hostile, build_hostile, program


@pytest.fixture
def markers(tmp_path: Path) -> Path:
    path = tmp_path / "markers"
    path.mkdir()
    return path


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    path = tmp_path / "programs"
    path.mkdir()
    return path


@pytest.fixture
def hostile(tmp_path: Path, markers: Path, bin_dir: Path) -> Hostile:
    repo = build_hostile(tmp_path / "repo", markers, bin_dir)
    assert list(markers.iterdir()) == []  # setting it up ran nothing
    return Hostile(repo=repo, markers=markers, bin=bin_dir)


@pytest.fixture(autouse=True)
def hostile_environment(
    tmp_path: Path, markers: Path, bin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """The user's environment names programs too; agentcli's own git must ignore all of it."""
    programs = {
        name: program(bin_dir, markers, f"env-{name}")
        for name in ("fsmonitor", "hookspath", "external-diff", "ssh", "askpass", "pager", "editor")
    }
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    global_config = (
        f"[core]\n\tfsmonitor = {program(bin_dir, markers, 'global-fsmonitor')}\n"
        f"\thooksPath = {bin_dir}\n"
        f"[diff]\n\texternal = {program(bin_dir, markers, 'global-diff-external')}\n"
        f'[filter "x"]\n\tclean = {program(bin_dir, markers, "global-filter-clean")}\n'
    )
    (home / ".gitconfig").write_text(global_config)
    (home / ".config" / "git" / "config").write_text(global_config)
    (home / ".config" / "git" / "attributes").write_text("* filter=x\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("GIT_CONFIG_COUNT", "2")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.fsmonitor")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", programs["fsmonitor"])
    monkeypatch.setenv("GIT_CONFIG_KEY_1", "core.hooksPath")
    monkeypatch.setenv("GIT_CONFIG_VALUE_1", str(bin_dir))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'core.fsmonitor'='{programs['fsmonitor']}'")
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", programs["external-diff"])
    monkeypatch.setenv("GIT_SSH_COMMAND", programs["ssh"])
    monkeypatch.setenv("GIT_SSH", programs["ssh"])
    monkeypatch.setenv("GIT_ASKPASS", programs["askpass"])
    monkeypatch.setenv("SSH_ASKPASS", programs["askpass"])
    monkeypatch.setenv("GIT_PAGER", programs["pager"])
    monkeypatch.setenv("PAGER", programs["pager"])
    monkeypatch.setenv("GIT_EDITOR", programs["editor"])
    monkeypatch.setenv("EDITOR", programs["editor"])
    monkeypatch.setenv("GIT_EXEC_PATH", str(bin_dir))
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "nowhere"))
    monkeypatch.setenv("GIT_WORK_TREE", str(tmp_path))
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "elsewhere-index"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_TRACE", "0")
    yield
