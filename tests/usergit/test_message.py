"""The commit message of a task, checked against git's own reading of it (`git
interpret-trailers --parse`, `git log --format=%s`), not against the code that wrote it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agentcli.tasks import CheckEvidence, TaskResult, TaskState
from agentcli.terminal_reason import TerminalReason
from agentcli.usage import Usage
from agentcli.usergit.message import (
    SUMMARY_MAX,
    MessageParts,
    compose,
    parts_for_task,
    summary_line,
)


def check(command: str, passed: bool, round_: int = 0, version: str = "git:abc") -> CheckEvidence:
    return CheckEvidence(
        command=command,
        exit_code=0 if passed else 1,
        passed=passed,
        artifact_version=version,
        output_tail="",
        duration_s=0.1,
        round=round_,
    )


def result(state: TaskState, final_text: str | None, checks: list[CheckEvidence]) -> TaskResult:
    return TaskResult(
        session_id="S1",
        task_id="T1",
        state=state,
        reason=TerminalReason.COMPLETED,
        final_text=final_text,
        turns=1,
        duration_s=1.0,
        usage=Usage(),
        cost_usd=None,
        acceptance=checks,
        artifact_version="git:abc",
    )


def trailers(message: str) -> list[str]:
    done = subprocess.run(
        ["git", "interpret-trailers", "--parse"],
        input=message,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.splitlines()


@pytest.mark.parametrize(
    ("final_text", "prompt", "expected"),
    [
        ("Fixed the off-by-one in add.\n\nDetails…", "fix add", "Fixed the off-by-one in add."),
        ("## **Added** `greet()`\nmore", "add greet", "Added greet()"),
        ("- Renamed the flag", "rename", "Renamed the flag"),
        (None, "fix the failing test in calc", "fix the failing test in calc"),
        ("\n\n   \n", "fix it\nplease, in detail", "fix it please, in detail"),
        # A summary that does not fit the subject line gives way to the prompt.
        ("I " + "really " * 20 + "fixed it", "fix add", "fix add"),
    ],
)
def test_the_summary_is_the_models_line_else_the_prompt(
    final_text: str | None, prompt: str, expected: str
) -> None:
    assert summary_line(final_text, prompt) == expected


def test_a_long_prompt_is_cut_at_a_word_within_72_characters() -> None:
    prompt = "please refactor the configuration loader so that every section is validated " * 2
    line = summary_line(None, prompt)
    assert len(line) <= SUMMARY_MAX and line.endswith("…")
    assert prompt.startswith(line.removesuffix("…"))
    assert summary_line(None, "x\x1b[31m\ty") == "x [31m y"  # no control character survives


def test_the_body_holds_each_passing_check_of_the_last_round_and_the_trailers() -> None:
    checks = [
        check("pytest -q", False, 0, "git:old"),
        check("ruff check", True, 0, "git:old"),
        check("pytest -q", True, 1, "git:new"),
        check("ruff check", True, 1, "git:new"),
    ]
    parts = parts_for_task(result(TaskState.SUCCEEDED, "Fixed add", checks), "fix add")
    message = compose(parts, committed_tree="new")
    lines = message.splitlines()
    assert lines[0] == "Fixed add" and lines[1] == ""
    assert "- `pytest -q` passed (exit 0) on git:new" in lines
    assert "- `ruff check` passed (exit 0) on git:new" in lines
    assert not any("git:old" in line for line in lines)
    assert trailers(message) == ["Agentcli-Session: S1", "Agentcli-Task: T1"]


def test_the_body_says_whether_the_committed_tree_is_the_checked_one() -> None:
    parts = MessageParts(summary="s", session_id="S", task_id="T", checked_version="git:abc")
    assert "The committed tree is the version the checks ran on." in compose(parts, "abc")
    other = compose(parts, "def")
    assert "other uncommitted changes" in other and "is the version" not in other


def test_an_unverified_task_says_so_and_claims_no_evidence() -> None:
    unverified = parts_for_task(result(TaskState.UNVERIFIED, "Done", []), "do it")
    text = compose(unverified)
    assert "Not verified by agentcli: no acceptance checks were set." in text
    assert "Verified by agentcli" not in text.replace("Not verified by agentcli", "")
    failed = parts_for_task(result(TaskState.FAILED, "Done", [check("make test", False)]), "do")
    assert "the task failed: `make test` did not pass" in compose(failed)
    assert trailers(compose(failed)) == ["Agentcli-Session: S1", "Agentcli-Task: T1"]


def test_the_users_own_message_is_the_subject_and_body(tmp_path: Path) -> None:
    parts = parts_for_task(
        result(TaskState.SUCCEEDED, "Model words", [check("true", True)]),
        "prompt",
        message="Tidy the parser\n\nIt was hard to read.",
    )
    text = compose(parts)
    assert text.startswith("Tidy the parser\n\nIt was hard to read.\n\nVerified by agentcli")
    # git reads the subject line as the first line.
    repo = tmp_path / "r"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(
        ["git", "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty",
         "--cleanup=whitespace", "-F", "-"],
        input=text, text=True, cwd=repo, check=True,
    )  # fmt: skip
    subject = subprocess.run(
        ["git", "log", "-1", "--format=%s"], cwd=repo, capture_output=True, text=True, check=True
    )
    assert subject.stdout.strip() == "Tidy the parser"
