"""`--resume [ID]` on the command line: the only option whose value may be left out. What each
argument list turns into (a REPL on a terminal, a run without one), and the usage error a bare
`--resume` gets where no one can pick a session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentcli.session.options import SessionOptions
from agentcli.ui.cli import run_app
from agentcli.ui.resume_arg import PICK, pick_when_bare
from agentcli.ui.run import run_command


class Terminal:
    """A stdin that is (or is not) a terminal."""

    def __init__(self, tty: bool) -> None:
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """The REPL and `run` replaced by recorders of what they were given."""
    seen: list[tuple[str, Any]] = []

    def repl(settings: SessionOptions, first_task: str | None = None) -> int:
        seen.append(("repl", (settings, first_task)))
        return 0

    def run(options: SessionOptions) -> int:
        seen.append(("run", options))
        return 0

    import agentcli.ui.repl.main
    import agentcli.ui.run

    monkeypatch.setattr(agentcli.ui.repl.main, "main", repl)
    monkeypatch.setattr(agentcli.ui.run, "run_command", run)
    return seen


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], []),
        (["--resume"], [f"--resume={PICK}"]),
        (["--resume", "01ABC"], ["--resume", "01ABC"]),
        (["--resume", "-m", "opus"], [f"--resume={PICK}", "-m", "opus"]),
        (["--resume", "--continue"], [f"--resume={PICK}", "--continue"]),
        (["--resume=01ABC"], ["--resume=01ABC"]),
        (["run", "--resume", "-"], ["run", f"--resume={PICK}", "-"]),
        (["run", "t", "--", "--resume"], ["run", "t", "--", "--resume"]),
        (["run", "--resume --x"], ["run", "--resume --x"]),
    ],
)
def test_a_bare_resume_gets_the_pick_value(args: list[str], expected: list[str]) -> None:
    assert pick_when_bare(args) == expected


@pytest.mark.parametrize(
    ("args", "resume", "continue_", "model", "first_task"),
    [
        (["--resume"], PICK, False, None, None),
        (["--resume", "-m", "opus"], PICK, False, "opus", None),
        (["-m", "opus", "--resume"], PICK, False, "opus", None),
        (["--resume", "01ABC"], "01ABC", False, None, None),
        (["--resume", "01ABC", "and now the tests"], "01ABC", False, None, "and now the tests"),
        (["--continue"], None, True, None, None),
        (["--continue", "go on"], None, True, None, "go on"),
    ],
)
def test_in_a_terminal_resume_and_continue_open_the_repl_on_a_session(
    args: list[str],
    resume: str | None,
    continue_: bool,
    model: str | None,
    first_task: str | None,
    calls: list[tuple[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sys.stdin", Terminal(tty=True))
    assert run_app(args) == 0
    settings = SessionOptions(resume=resume, continue_=continue_, model=model)
    assert calls == [("repl", (settings, first_task))]


def test_trust_project_before_the_task_reaches_the_repl_and_the_run(
    calls: list[tuple[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", Terminal(tty=True))
    assert run_app(["--trust-project", "fix it"]) == 0
    monkeypatch.setattr("sys.stdin", Terminal(tty=False))
    assert run_app(["--trust-project", "fix it"]) == 0
    assert calls == [
        ("repl", (SessionOptions(trust_project=True), "fix it")),
        ("run", SessionOptions(task="fix it", trust_project=True)),
    ]
    assert run_app(["--trust-project", "doctor"]) == 2  # before a command: the REPL's


def test_without_a_terminal_they_are_a_run(
    calls: list[tuple[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", Terminal(tty=False))
    assert run_app(["--resume", "01ABC", "t"]) == 0
    assert run_app(["--continue"]) == 0
    assert run_app(["--resume"]) == 0  # run_command says why it cannot (below)
    assert [options for _, options in calls] == [
        SessionOptions(task="t", resume="01ABC"),
        SessionOptions(task=None, continue_=True),
        SessionOptions(task=None, resume=PICK),
    ]


@pytest.mark.parametrize("args", [["--resume", "01ABC", "doctor"], ["--continue", "doctor"]])
def test_they_are_refused_before_another_command(
    args: list[str], calls: list[tuple[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_app(args) == 2
    assert "options before 'doctor' are for the REPL" in capsys.readouterr().err
    assert calls == []


@pytest.mark.parametrize("output_format", ["text", "json"])
def test_a_bare_resume_without_a_terminal_is_a_usage_error_naming_the_ways(
    output_format: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    workspace: Path,
) -> None:
    """`echo task | agentcli --resume` and `agentcli run --resume`: nothing is read or run."""
    monkeypatch.setattr("sys.stdin", Terminal(tty=False))
    options = SessionOptions(task=None, resume=PICK, cwd=workspace, output_format=output_format)
    assert run_command(options) == 2
    out, err = capsys.readouterr()
    assert "agentcli: error: --resume without an id picks a session in the REPL" in err
    for alternative in ("--resume ID", "--continue", "agentcli sessions list"):
        assert alternative in err
    assert "Traceback" not in err
    if output_format == "json":
        assert '"terminal_reason": "usage_error"' in out
    else:
        assert out == ""


def test_run_resume_without_an_id_is_refused_through_the_parser(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, workspace: Path
) -> None:
    monkeypatch.setattr("sys.stdin", Terminal(tty=True))
    assert run_app(["run", "--resume", "-C", str(workspace), "t"]) == 2
    err = capsys.readouterr().err
    assert "--resume without an id" in err and "--continue" in err


def test_help_shows_the_optional_id(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_app(["--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "--resume [ID] REPL: resume session ID; without ID, pick one of this workspace's" in out
    assert "--continue REPL: continue the latest session in this workspace." in out
