"""`/branch`, `/commit` and the status line in the REPL, in-process on real repositories, with
the REPL's real session builder and a scripted model (tests/repl/test_features.py's harness)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcli.testing import ScriptedModel, respond, text, tool_use
from tests.repl.test_features import session
from tests.usergit.conftest import committed, git


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")


def writes_new_file() -> ScriptedModel:
    return ScriptedModel(
        [
            respond(tool_use("write_file", {"path": "new.txt", "content": "hello\n"})),
            respond(text("Added new.txt")),
        ]
    )


async def test_branch_then_commit_a_verified_task(repo: Path) -> None:
    (repo / "a.txt").write_text("the user's own change\n")
    keys = (
        "/branch\r"
        "/branch feat/hello\r"
        "/accept test -f new.txt\r"
        "add a greeting file\r"
        "y"
        "/commit\r"
        "/exit\r"
    )
    out, repl = await session(repo, writes_new_file(), keys)
    assert "on branch main · 1 changed" in out
    assert "switched to a new branch feat/hello" in out
    sha = git(repo, "rev-parse", "HEAD").strip()
    assert f"committed {sha[:12]} on feat/hello" in out
    assert git(repo, "symbolic-ref", "--short", "HEAD").strip() == "feat/hello"
    assert committed(repo) == ["new.txt"]
    assert git(repo, "log", "-1", "--format=%s").strip() == "Added new.txt"
    assert "Verified by agentcli" in git(repo, "log", "-1", "--format=%b")
    assert git(repo, "status", "--porcelain").splitlines() == [" M a.txt"]
    # The status line: the branch and the one file still changed (the user's).
    assert repl.status.repo == "feat/hello · 1 changed"
    assert "feat/hello · 1 changed" in repl.status.line(120)
    assert "Traceback" not in out


@pytest.mark.parametrize(("answer", "commits"), [("n", False), ("y", True)])
async def test_commit_of_an_unverified_task_asks_first(
    repo: Path, answer: str, commits: bool
) -> None:
    keys = f"add a greeting file\ry/commit Say hello\r{answer}\r/exit\r"
    out, _ = await session(repo, writes_new_file(), keys)
    assert "the last task is not verified: no acceptance checks were set" in out
    count = git(repo, "rev-list", "--count", "HEAD").strip()
    if not commits:
        assert count == "1" and "not committed" in out
        return
    assert count == "2" and committed(repo) == ["new.txt"]
    message = git(repo, "log", "-1", "--format=%B")
    assert message.startswith("Say hello\n\nNot verified by agentcli: no acceptance checks")


async def test_commit_before_any_task_and_branch_refusals(repo: Path) -> None:
    keys = "/commit\r/branch main\r/branch bad..name\r/exit\r"
    out, _ = await session(repo, ScriptedModel([]), keys)
    assert "no task to commit yet" in out
    assert "branch: branch main already exists" in out
    assert "is not a valid branch name" in out
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "1"


async def test_outside_git(workspace: Path) -> None:
    out, repl = await session(workspace, ScriptedModel([]), "/branch\r/exit\r")
    assert "not a git repository" in out
    assert repl.status.repo == ""
