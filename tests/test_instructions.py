"""Instruction files: which are given to the model, in which order, and what the user is told."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agentcli.instructions import MAX_INSTRUCTION_CHARS, instruction_files, system_prompt


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg" / "sub").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def user_file() -> Path:
    path = Path(os.environ["AGENTCLI_CONFIG_DIR"]) / "AGENTS.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def test_agents_md_from_the_root_down_to_the_workspace(repo: Path) -> None:
    (repo / "AGENTS.md").write_text("root rules")
    (repo / "pkg" / "sub" / "AGENTS.md").write_text("sub rules")
    workspace = repo / "pkg" / "sub"
    assert instruction_files(workspace) == [repo / "AGENTS.md", workspace / "AGENTS.md"]
    prompt = system_prompt(workspace)
    assert prompt.index("root rules") < prompt.index("sub rules")


def test_claude_md_where_a_directory_has_no_agents_md(repo: Path) -> None:
    (repo / "CLAUDE.md").write_text("claude rules")
    (repo / "pkg" / "CLAUDE.md").write_text("ignored: pkg has an AGENTS.md")
    (repo / "pkg" / "AGENTS.md").write_text("pkg rules")
    files = instruction_files(repo / "pkg")
    assert files == [repo / "CLAUDE.md", repo / "pkg" / "AGENTS.md"]
    prompt = system_prompt(repo / "pkg")
    assert "claude rules" in prompt and "pkg rules" in prompt and "ignored" not in prompt


def test_the_users_own_agents_md_comes_first(repo: Path) -> None:
    user_file().write_text("always use tabs")
    (repo / "AGENTS.md").write_text("project rules")
    assert instruction_files(repo) == [user_file(), repo / "AGENTS.md"]
    prompt = system_prompt(repo)
    assert prompt.index("always use tabs") < prompt.index("project rules")


def test_no_files_no_section(tmp_path: Path) -> None:
    assert instruction_files(tmp_path) == []
    assert "Instructions (from" not in system_prompt(tmp_path)


def test_a_huge_file_is_cut_and_says_so(repo: Path) -> None:
    (repo / "AGENTS.md").write_text("x" * (MAX_INSTRUCTION_CHARS + 500))
    prompt = system_prompt(repo)
    assert f"truncated at {MAX_INSTRUCTION_CHARS} characters" in prompt
    assert prompt.count("x") <= MAX_INSTRUCTION_CHARS + 50


def test_an_unreadable_file_is_skipped(repo: Path) -> None:
    (repo / "AGENTS.md").mkdir()  # a directory where a file was expected: not a file at all
    (repo / "CLAUDE.md").write_text("fallback")
    assert instruction_files(repo) == [repo / "CLAUDE.md"]
