"""Config files are parsed by git once per process while they are unchanged: deciding again
(the REPL's sessions, `undo` elsewhere) starts no git process for them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from agentcli.owngit import discover, find_repo
from tests.owngit.hostile import plain_git


def test_a_second_decision_reads_no_config_through_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    plain_git(root, "init", "-q")
    started: list[str] = []
    run_git = discover.run_git

    def counted(git: str, args: Any, **kwargs: Any) -> Any:
        started.append(args[2] if args[0] == "config" else args[0])
        return run_git(git, args, **kwargs)

    monkeypatch.setattr(discover, "run_git", counted)
    first = find_repo(root)
    assert first is not None and started  # the repository's and the user's config files
    started.clear()
    assert find_repo(root) is not None
    assert started == []
    config = root / ".git" / "config"
    config.write_text(config.read_text() + "[core]\n\tfilemode = false\n")
    os.utime(config, ns=(1, 1))  # even if the clock did not move: size and ctime did
    again = find_repo(root)
    assert started == [str(config)]
    assert again is not None and ("-c", "core.filemode=false") == again.settings[:2]
