"""Real repositories in temp dirs, built with the real git: what every usergit test starts
from. A repository has its own identity (`user.email`), an initial commit of `a.txt` and
`b.txt`, and no hooks; `git(repo, ...)` runs git there and returns its stdout."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentcli.testing.fake_api import FakeMessagesServer

IDENTITY_VARIABLES = (
    *("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"),
    "EMAIL",
)


def git(repo: Path, *args: str, check: bool = True) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)}: {done.stderr}")
    return done.stdout


@pytest.fixture(autouse=True)
def _own_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """Identity comes from each repository's config, never from the test runner's."""
    for name in IDENTITY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def repo(workspace: Path) -> Path:
    git(workspace, "init", "-q", "-b", "main")
    git(workspace, "config", "user.email", "dev@example.com")
    git(workspace, "config", "user.name", "Dev")
    (workspace / "a.txt").write_text("a\n")
    (workspace / "b.txt").write_text("b\n")
    git(workspace, "add", ".")
    git(workspace, "commit", "-qm", "initial")
    return workspace


def install_hook(repo: Path, name: str, body: str) -> Path:
    """An executable hook script in the repository's hooks dir."""
    hook = repo / ".git" / "hooks" / name
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text("#!/bin/sh\n" + body + "\n")
    hook.chmod(0o755)
    return hook


def staged(repo: Path) -> list[str]:
    return git(repo, "diff", "--cached", "--name-only").splitlines()


def committed(repo: Path, rev: str = "HEAD") -> list[str]:
    """The files `rev` changed."""
    return [
        line for line in git(repo, "show", "--name-only", "--format=", rev).splitlines() if line
    ]


@pytest.fixture
def server() -> Iterator[FakeMessagesServer]:
    with FakeMessagesServer() as fake:
        yield fake
        assert fake.pairing_problems() == []
