"""`agentcli run --branch/--commit` in-process against the fake Messages API, in real
repositories: the branch and the commit, the message and its trailers, what is left
uncommitted, no commit for a failed or unverified task, hooks only when trusted, `[git] commit`,
and each refusal before the model is asked anything (exit 2)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text, tool_use
from tests.test_cli_run import cli, result_of
from tests.usergit.conftest import committed, git, staged


def write_then_say(
    server: FakeMessagesServer, words: str = "Added new.txt with a greeting"
) -> None:
    server.push(
        stream_message([tool_use("write_file", {"path": "new.txt", "content": "hello\n"})]),
        stream_message([text(words)]),
    )


def run(
    server: FakeMessagesServer, repo: Path, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    return cli(
        "run", "add a greeting file", "--permission-mode", "accept-edits", *args,
        server=server, cwd=repo, **env,
    )  # fmt: skip


def run_json(server: FakeMessagesServer, repo: Path, *args: str) -> tuple[int, dict[str, Any]]:
    proc = run(server, repo, *args, "--output-format", "json")
    return proc.returncode, result_of(proc)


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def test_branch_and_commit_of_exactly_the_tasks_files(
    server: FakeMessagesServer, repo: Path
) -> None:
    (repo / "a.txt").write_text("a, staged by the user\n")
    git(repo, "add", "a.txt")
    (repo / "b.txt").write_text("b, changed but not staged\n")
    (repo / "mine.txt").write_text("untracked, the user's\n")
    start = head(repo)
    write_then_say(server)
    code, result = run_json(server, repo, "--branch", "feat/greeting", "--commit",
                            "--accept", "test -f new.txt")  # fmt: skip
    assert code == 0 and result["task_state"] == "succeeded"
    assert result["commit_skipped"] is None
    assert result["commit"] == {"sha": head(repo), "branch": "feat/greeting"}
    assert git(repo, "symbolic-ref", "--short", "HEAD").strip() == "feat/greeting"
    assert git(repo, "rev-parse", "HEAD~1").strip() == start
    assert committed(repo) == ["new.txt"] == result["changed_files"]
    # What was left uncommitted is as the user left it.
    assert staged(repo) == ["a.txt"]
    status = git(repo, "status", "--porcelain").splitlines()
    assert sorted(status) == sorted(["M  a.txt", " M b.txt", "?? mine.txt"])
    # The message: the model's summary, the evidence, the ids.
    message = git(repo, "log", "-1", "--format=%B")
    assert message.splitlines()[0] == "Added new.txt with a greeting"
    version = result["acceptance"][-1]["artifact_version"]
    assert f"- `test -f new.txt` passed (exit 0) on {version}" in message
    trailers = git(repo, "log", "-1", "--format=%(trailers:only,unfold)").splitlines()
    assert trailers[:2] == [
        f"Agentcli-Session: {result['session_id']}",
        f"Agentcli-Task: {result['task_id']}",
    ]


def test_a_commit_of_changes_a_command_made(server: FakeMessagesServer, repo: Path) -> None:
    server.push(
        stream_message([tool_use("shell", {"command": "sed -i s/a/A/ a.txt && rm b.txt"})]),
        stream_message([text("Capitalised a.txt and removed b.txt")]),
    )
    (repo / "notes.txt").write_text("not the task's\n")
    code, result = run_json(server, repo, "--commit", "--allow", "shell(*)", "--accept", "true")
    assert code == 0, result
    assert result["commit"]["sha"] == head(repo)
    assert git(repo, "show", "--name-status", "--format=", "HEAD").split() == [
        "M", "a.txt", "D", "b.txt",
    ]  # fmt: skip
    assert git(repo, "status", "--porcelain").splitlines() == ["?? notes.txt"]


def test_a_failed_task_is_not_committed_and_says_why(
    server: FakeMessagesServer, repo: Path
) -> None:
    write_then_say(server)
    start = head(repo)
    proc = run(server, repo, "--commit", "--accept", "false", "--accept-retries", "0")
    assert proc.returncode == 1
    assert head(repo) == start
    assert (
        "agentcli: not committed: the task is not verified: the task failed: `false` did not pass\n"
    ) in proc.stderr
    assert proc.stderr.splitlines()[-1].startswith("agentcli: task failed:")
    write_then_say(server)
    code, result = run_json(server, repo, "--commit", "--accept", "false",
                            "--accept-retries", "0")  # fmt: skip
    assert code == 1 and result["commit"] is None
    assert result["commit_skipped"].startswith("the task is not verified: the task failed")
    assert result["subtype"] == "error_acceptance_failed"


def test_an_unverified_task_is_not_committed_and_exits_as_it_would(
    server: FakeMessagesServer, repo: Path
) -> None:
    write_then_say(server)
    code, result = run_json(server, repo, "--commit")
    assert code == 0 and result["task_state"] == "unverified"
    assert result["commit"] is None
    assert result["commit_skipped"] == ("the task is not verified: no acceptance checks were set")
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "1"
    assert "?? new.txt" in git(repo, "status", "--porcelain")


def test_without_commit_the_result_has_neither_field_set(
    server: FakeMessagesServer, repo: Path
) -> None:
    write_then_say(server)
    code, result = run_json(server, repo, "--accept", "true")
    assert code == 0 and (result["commit"], result["commit_skipped"]) == (None, None)
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "1"


# -- refusals: before the model is asked anything --------------------------------------------
def detach(repo: Path) -> None:
    git(repo, "checkout", "-q", "--detach")


def merging(repo: Path) -> None:
    (repo / ".git" / "MERGE_HEAD").write_text(head(repo) + "\n")


def no_repository(repo: Path) -> None:
    subprocess.run(["rm", "-rf", str(repo / ".git")], check=True)


@pytest.mark.parametrize(
    ("setup", "args", "message"),
    [
        (lambda r: None, ["--branch", "main"], "branch main already exists"),
        (lambda r: None, ["--branch", "no..dots"], "is not a valid branch name"),
        (no_repository, ["--branch", "x"], "is not in a git repository"),
        (no_repository, ["--commit"], "is not in a git repository"),
        (detach, ["--commit"], "HEAD is detached"),
        (merging, ["--commit"], "a merge is in progress"),
        (merging, ["--branch", "x"], "a merge is in progress"),
    ],
    ids=["exists", "invalid", "no-repo-branch", "no-repo-commit", "detached", "merge", "merge-b"],
)
def test_refusals_exit_2_before_the_task(
    server: FakeMessagesServer, repo: Path, setup: Any, args: list[str], message: str
) -> None:
    setup(repo)
    proc = run(server, repo, *args, "--output-format", "json")
    assert proc.returncode == 2, proc.stderr
    result = json.loads(proc.stdout)
    assert result["terminal_reason"] == "usage_error" and message in result["error"]
    assert "agentcli: error: " in proc.stderr and message in proc.stderr
    assert server.requests == []  # the model was never asked
    assert "Traceback" not in proc.stderr


def test_a_detached_head_with_a_branch_is_committed_on_the_branch(
    server: FakeMessagesServer, repo: Path
) -> None:
    detach(repo)
    write_then_say(server)
    code, result = run_json(server, repo, "--branch", "rescue", "--commit", "--accept", "true")
    assert code == 0 and result["commit"]["branch"] == "rescue"
    assert git(repo, "rev-parse", "rescue").strip() == result["commit"]["sha"]


def test_no_identity_is_refused_before_the_task(
    server: FakeMessagesServer, repo: Path, tmp_path: Path
) -> None:
    home = tmp_path / "empty-home"
    home.mkdir()
    git(repo, "config", "--unset", "user.email")
    proc = run(server, repo, "--commit", HOME=str(home), GIT_CONFIG_NOSYSTEM="1")
    assert proc.returncode == 2
    assert "git does not know who you are: user.email is not set" in proc.stderr
    assert 'hint: git config --global user.email "you@example.com"' in proc.stderr
    assert server.requests == []


def test_a_locked_index_after_the_task_is_a_failed_commit(
    server: FakeMessagesServer, repo: Path
) -> None:
    # Another git process takes the lock while the task runs (here, the task's own command,
    # unconfined in yolo mode: a sandboxed command cannot write .git).
    server.push(
        stream_message([tool_use("shell", {"command": "touch .git/index.lock new.txt"})]),
        stream_message([text("Made new.txt")]),
    )
    code, result = run_json(server, repo, "--commit", "--accept", "true",
                            "--permission-mode", "yolo")  # fmt: skip
    assert code == 1
    assert result["task_state"] == "succeeded" and result["subtype"] == "error_commit_failed"
    assert result["commit"] is None and "index is locked" in result["commit_skipped"]
    assert result["error"].startswith("not committed: the repository's index is locked")
    assert (repo / ".git" / "index.lock").exists()
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "1"
