"""The command line is defined once (`agentcli/ui/cli.py`): what each argument list turns into,
read against expectations written out by hand, and the errors a bad one gets."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from agentcli.errors import UsageError
from agentcli.session.options import SessionOptions
from agentcli.ui import cli
from agentcli.ui.cli import guarded, run_app

PACKAGE = Path(cli.__file__).resolve().parents[1]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """Every command's handler replaced by a recorder: (handler, what it was given)."""
    seen: list[tuple[str, Any]] = []

    def recorder(name: str):  # type: ignore[no-untyped-def]
        def record(*args: Any, **kwargs: Any) -> int:
            seen.append((name, args[0] if len(args) == 1 and not kwargs else (args, kwargs)))
            return 0

        return record

    import agentcli.ui.doctor
    import agentcli.ui.repl.main
    import agentcli.ui.run
    import agentcli.ui.sessions

    monkeypatch.setattr(agentcli.ui.run, "run_command", recorder("run"))
    monkeypatch.setattr(agentcli.ui.repl.main, "main", recorder("repl"))
    monkeypatch.setattr(agentcli.ui.doctor, "doctor_command", recorder("doctor"))
    for name in ("sessions_list", "sessions_show", "sessions_export", "undo_command"):
        monkeypatch.setattr(agentcli.ui.sessions, name, recorder(name))
    monkeypatch.delenv("AGENTCLI_MODEL", raising=False)
    return seen


RUNS = [
    (["run"], SessionOptions(task=None)),
    (["run", "fix the failing test"], SessionOptions(task="fix the failing test")),
    (["run", "-"], SessionOptions(task="-")),
    (
        ["run", "--accept", "pytest -q", "task", "--accept=make lint", "--max-turns", "7"],
        SessionOptions(task="task", accept=["pytest -q", "make lint"], max_turns=7),
    ),
    (
        ["run", "t", "-m", "claude-x", "--cwd", "w", "--permission-mode", "auto", "--continue"],
        SessionOptions(
            task="t", model="claude-x", cwd=Path("w"), permission_mode="auto", continue_=True
        ),
    ),
    (
        ["run", "--allow", "shell(ls *)", "--deny", "write(**/.env)", "--allow=read(**)", "t"],
        SessionOptions(task="t", allow=["shell(ls *)", "read(**)"], deny=["write(**/.env)"]),
    ),
    (
        ["run", "t", "--max-cost", "0.5", "--timeout", "30", "--max-tokens", "1000"],
        SessionOptions(task="t", max_cost=0.5, timeout=30.0, max_tokens=1000),
    ),
    (
        ["run", "t", "--accept-retries", "0", "--resume", "01ABC", "--output-format", "json"],
        SessionOptions(task="t", accept_retries=0, resume="01ABC", output_format="json"),
    ),
    (
        ["run", "t", "-q", "--trust-project", "--output-format=stream-json"],
        SessionOptions(task="t", quiet=True, trust_project=True, output_format="stream-json"),
    ),
]


@pytest.mark.parametrize(
    ("args", "expected"), RUNS, ids=lambda v: " ".join(v) if isinstance(v, list) else ""
)
def test_run_options(
    args: list[str], expected: SessionOptions, calls: list[tuple[str, Any]]
) -> None:
    assert run_app(args) == 0
    assert calls == [("run", expected)]


def test_the_model_comes_from_the_environment_unless_given(
    calls: list[tuple[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTCLI_MODEL", "from-env")
    run_app(["run", "t"])
    run_app(["run", "t", "-m", "from-flag"])
    assert [options.model for _, options in calls] == ["from-env", "from-flag"]


class Terminal:
    """A stdin that is (or is not) a terminal."""

    def __init__(self, tty: bool) -> None:
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


REPL_OPTIONS = ["--permission-mode", "auto", "-C", "ws", "--allow", "shell(ls *)"]
REPL_SETTINGS = SessionOptions(
    cwd=Path("ws"), permission_mode="auto", allow=["shell(ls *)"], deny=[], accept=[]
)


@pytest.mark.parametrize(
    ("args", "first_task"),
    [([], None), (["fix the failing test"], "fix the failing test"), (["hello"], "hello")],
)
def test_in_a_terminal_no_command_starts_the_repl(
    args: list[str],
    first_task: str | None,
    calls: list[tuple[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sys.stdin", Terminal(tty=True))
    assert run_app([*REPL_OPTIONS, *args]) == 0
    assert calls == [("repl", ((REPL_SETTINGS,), {"first_task": first_task}))]


def test_every_repl_option(calls: list[tuple[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", Terminal(tty=True))
    args = ["-m", "claude-x", "--deny", "write(**/.env)", "--accept", "make", "--allow=read(**)"]
    assert run_app(args) == 0
    expected = SessionOptions(
        model="claude-x", allow=["read(**)"], deny=["write(**/.env)"], accept=["make"]
    )
    assert calls == [("repl", ((expected,), {"first_task": None}))]


@pytest.mark.parametrize(
    ("args", "task"), [([], None), (["fix the failing test"], "fix the failing test")]
)
def test_without_a_terminal_no_command_is_a_run(
    args: list[str], task: str | None, calls: list[tuple[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`echo task | agentcli` and `agentcli "task" < context` run as `agentcli run` would."""
    monkeypatch.setattr("sys.stdin", Terminal(tty=False))
    assert run_app([*REPL_OPTIONS, *args]) == 0
    assert calls == [
        (
            "run",
            SessionOptions(
                task=task, cwd=Path("ws"), permission_mode="auto", allow=["shell(ls *)"]
            ),
        )
    ]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["-q", "--output-format", "json", "--max-turns", "3"],
            SessionOptions(task=None, quiet=True, output_format="json", max_turns=3),
        ),
        (["--max-cost", "1.5", "fix it"], SessionOptions(task="fix it", max_cost=1.5)),
        (
            ["--timeout", "60", "--accept-retries", "1", "--max-tokens", "9"],
            SessionOptions(task=None, timeout=60.0, accept_retries=1, max_tokens=9),
        ),
    ],
    ids=["output options", "task and a limit", "other limits"],
)
def test_without_a_terminal_the_bare_command_takes_run_s_options(
    args: list[str],
    expected: SessionOptions,
    calls: list[tuple[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`echo task | agentcli -q` is `agentcli run -q` (it was refused: no such option)."""
    monkeypatch.setattr("sys.stdin", Terminal(tty=False))
    assert run_app(args) == 0
    assert calls == [("run", expected)]


def test_in_a_terminal_the_limits_apply_to_the_repl_and_output_options_are_refused(
    calls: list[tuple[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr("sys.stdin", Terminal(tty=True))
    assert run_app(["--max-turns", "5"]) == 0
    assert calls == [("repl", ((SessionOptions(max_turns=5),), {"first_task": None}))]
    assert run_app(["-q"]) == 2
    assert "-q and --output-format are for a run without a terminal" in capsys.readouterr().err


def test_limits_before_a_command_are_refused_like_the_other_repl_options(
    calls: list[tuple[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_app(["--max-turns", "5", "doctor"]) == 2
    assert "options before 'doctor' are for the REPL" in capsys.readouterr().err
    assert calls == []


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["rnu", "hi"], "no command 'rnu'; did you mean 'run'?"),
        (["fix", "the", "login", "bug"], "no command 'fix'\n"),
    ],
)
def test_an_unquoted_task_of_several_words_is_refused_with_the_quoted_form(
    args: list[str], said: str, calls: list[tuple[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_app(args) == 2
    err = capsys.readouterr().err
    assert said in err and "unexpected extra argument" not in err
    assert f"agentcli run '{' '.join(args)}'" in err
    assert calls == []


@pytest.mark.parametrize(("word", "command"), [("doctr", "doctor"), ("sesions", "sessions")])
def test_a_word_close_to_a_command_is_a_typo_not_a_task(
    word: str, command: str, calls: list[tuple[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_app([word]) == 2
    err = capsys.readouterr().err
    assert f"did you mean '{command}'" in err and f"agentcli run '{word}'" in err
    assert calls == []


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["sessions", "list"], ("sessions_list", ((None, False), {}))),
        (["sessions", "list", "-C", "d", "--all"], ("sessions_list", ((Path("d"), True), {}))),
        (
            ["sessions", "list", "--cwd=some dir"],
            ("sessions_list", ((Path("some dir"), False), {})),
        ),
        (["sessions", "show", "01ABC"], ("sessions_show", "01ABC")),
        (["sessions", "export", "01ABC"], ("sessions_export", "01ABC")),
        (["undo"], ("undo_command", ((None, None), {}))),
        (["undo", "--task=t1", "--cwd", "ws"], ("undo_command", ((Path("ws"), "t1"), {}))),
        (["doctor"], ("doctor", None)),
        (["doctor", "-C", "ws"], ("doctor", Path("ws"))),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else "",
)
def test_model_free_commands(
    args: list[str], expected: tuple[str, Any], calls: list[tuple[str, Any]]
) -> None:
    assert run_app(args) == 0
    assert calls == [expected]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["sessions"], "Usage"),
        (["sessions", "list", "--al"], "--al"),
        (["sessions", "list", "extra"], "extra"),
        (["sessions", "list", "-C"], "-C"),
        (["sessions", "show"], "Missing argument 'ID'"),
        (["sessions", "remove", "a"], "remove"),
        (["undo", "--task"], "--task"),
        (["doctor", "--verbose"], "--verbose"),
        (["-m"], "-m"),
        (["run", "a", "b"], "b"),
        (["run", "--fix-it"], "--fix-it"),
        (["run", "t", "--max-turns", "1e3"], "--max-turns"),
        (["run", "t", "--max-turns", "three"], "--max-turns"),
        (["run", "t", "--max-cost", "cheap"], "--max-cost"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else "",
)
def test_a_bad_command_line_is_exit_2_and_says_what_is_wrong(
    args: list[str], needle: str, calls: list[tuple[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_app(args) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert calls == []


@pytest.mark.parametrize("command", ["run", "doctor", "undo"])
def test_repl_options_before_a_command_are_a_usage_error(
    command: str, calls: list[tuple[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_app(["-m", "x", command]) == 2
    err = capsys.readouterr().err
    assert err.startswith("agentcli: error: options before") and f"agentcli {command}" in err
    assert calls == []


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["sessions", "list", "-h"]])
def test_help_names_the_options_and_runs_nothing(
    args: list[str], calls: list[tuple[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_app(args) == 0
    out = capsys.readouterr().out
    assert out.startswith("Usage: agentcli") and "--cwd" in out
    assert calls == []


@pytest.mark.parametrize("command", [["doctor"], ["undo"], ["sessions", "list"]], ids=" ".join)
def test_a_workspace_that_is_not_a_directory_is_a_one_line_usage_error(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing"
    code = run_app([*command, "-C", str(missing)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("agentcli: error: ") and "Traceback" not in err
    assert str(missing) in err


def test_a_usage_error_has_its_hint(capsys: pytest.CaptureFixture[str]) -> None:
    def refused() -> int:
        raise UsageError("no task given", hint="agentcli run TASK")

    assert guarded(refused) == 2
    assert capsys.readouterr().err == "agentcli: error: no task given\n  hint: agentcli run TASK\n"


def test_a_bug_is_one_line_exit_code_1_and_a_logged_traceback(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENTCLI_HOME", str(tmp_path))

    def broken() -> int:
        raise KeyError("boom")

    code = guarded(broken)
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("agentcli: internal error: KeyError") and "Traceback" not in err
    assert "KeyError: 'boom'" in (tmp_path / "errors.log").read_text()


def test_the_command_line_is_defined_once() -> None:
    """Only `ui/cli.py` knows options: nothing else imports typer or argparse, and the entry
    point tells apart only the two argument lists with nothing to parse."""
    parsers = {"typer", "argparse", "click", "optparse", "getopt"}
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            used = {name.partition(".")[0] for name in names} & parsers
            if used:
                found.setdefault(str(path.relative_to(PACKAGE)), set()).update(used)
    assert found == {"ui/cli.py": {"typer"}}
    entry = (PACKAGE / "ui" / "entry.py").read_text()
    assert entry.count("args ==") + entry.count("not args") == 2


def _float_options() -> list[str]:
    import dataclasses

    return [f.name for f in dataclasses.fields(SessionOptions) if f.type == "float | None"]


def test_the_float_options_are_found() -> None:
    assert set(_float_options()) == {"max_cost", "timeout"}


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN", "Infinity", "1e999"])
@pytest.mark.parametrize("option", _float_options())
def test_a_non_finite_number_is_a_usage_error_naming_the_option(option: str, value: str) -> None:
    """typer reads these as floats (`1e999` overflows to inf): a budget of nan would stop the
    task at once, one of inf would be no budget at all."""

    flag = "--" + option.replace("_", "-")
    with pytest.raises(UsageError) as caught:
        SessionOptions(task="t", **{option: float(value)}).budget()
    assert caught.value.message.startswith(f"{flag} must be a finite number")


@pytest.mark.parametrize("command", ["show", "export"])
def test_a_required_argument_reads_as_its_name_in_the_usage_line(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_app(["sessions", command, "--help"]) == 0
    assert f"Usage: agentcli sessions {command} [OPTIONS] ID\n" in capsys.readouterr().out
