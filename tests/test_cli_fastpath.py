"""The fast path for model-free commands reads arguments exactly as the typer app does, and hands
everything it is unsure of to typer."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import typer._click as click
import typer.main

from agentcli.ui import fastpath
from agentcli.ui.cli import app
from agentcli.ui.repl.settings import ReplSettings
from agentcli.ui.run import RunOptions


def typer_command(path: Sequence[str]) -> tuple[Any, Any]:
    """The click command typer builds for `path` (e.g. ("sessions", "list")) and its parent
    context."""
    command: Any = typer.main.get_command(app)
    ctx = click.Context(command, info_name="agentcli")
    for name in path:
        command = command.get_command(ctx, name)
        assert command is not None, f"the typer app has no command {' '.join(path)}"
        ctx = click.Context(command, info_name=name, parent=ctx)
    return command, ctx.parent if path else None


ENTRY_ONLY = {"version"}
"""Root options `entry.main` answers before any parser (`--version`)."""


def typer_reads(args: Sequence[str]) -> dict[str, Any]:
    for length in (2, 1, 0):
        if len(args) >= length and tuple(args[:length]) in fastpath.COMMANDS:
            command, parent = typer_command(args[:length])
            name = args[length - 1] if length else "agentcli"
            params = command.make_context(name, list(args[length:]), parent=parent).params
            return {k: v for k, v in params.items() if k not in ENTRY_ONLY}
    raise AssertionError(f"not a fast-path command: {args}")


def handler_keywords(command: fastpath.FastCommand) -> dict[str, Any]:
    """What the handler takes, with the defaults it applies (`run` hands them to RunOptions, the
    REPL to ReplSettings)."""
    options_type: type | None = None
    if command is fastpath.COMMANDS[("run",)]:
        options_type = RunOptions
    elif command is fastpath.COMMANDS[()]:
        options_type = ReplSettings
    if options_type is not None:
        missing = dataclasses.MISSING
        defaults = {
            f.name: f.default_factory() if f.default_factory is not missing else f.default
            for f in dataclasses.fields(options_type)
        }
        return defaults | ({"task": None} if options_type is RunOptions else {})
    return {
        name: param.default
        for name, param in inspect.signature(command.handler).parameters.items()
        if param.default is not inspect.Parameter.empty
    }


def fast_reads(args: Sequence[str]) -> dict[str, Any]:
    parsed = fastpath.parse(args)
    assert parsed is not None, f"the fast path should take {args}"
    command, kwargs = parsed
    return {**handler_keywords(command), **kwargs}


@pytest.mark.parametrize("path", list(fastpath.COMMANDS), ids=lambda p: " ".join(p) or "(repl)")
def test_the_table_names_only_what_the_typer_app_declares(path: tuple[str, ...]) -> None:
    spec = fastpath.COMMANDS[path]
    command, _ = typer_command(path)
    options = {opt: p for p in command.params if p.param_type_name == "option" for opt in p.opts}
    for opt, key in spec.options.items():
        assert opt in options and not options[opt].is_flag and options[opt].name == key, opt
    for opt, key in spec.flags.items():
        assert opt in options and options[opt].is_flag and options[opt].name == key, opt
    arguments = [p for p in command.params if p.param_type_name == "argument"]
    assert tuple(p.name for p in arguments if p.required) == spec.positionals
    assert tuple(p.name for p in arguments if not p.required) == spec.optional_positionals
    takes = set(handler_keywords(spec)) | set(spec.positionals)
    assert takes == {p.name for p in command.params} - ENTRY_ONLY
    everything = {*spec.options.values(), *spec.flags.values()}
    everything |= {*spec.positionals, *spec.optional_positionals}
    assert everything == takes, "the fast path must know every option, or typer's defaults differ"


ACCEPTED = [
    ["sessions", "list"],
    ["sessions", "list", "--all"],
    ["sessions", "list", "-C", "some/dir", "--all"],
    ["sessions", "list", "--cwd=some dir"],
    ["sessions", "list", "--all", "--all", "-C", "a", "-C", "b"],
    ["sessions", "show", "01ABC"],
    ["sessions", "export", "01ABC"],
    ["undo"],
    ["undo", "--task", "t1", "--cwd", "ws"],
    ["undo", "--task=t1"],
    ["doctor"],
    ["doctor", "-C", "ws"],
    ["-m", "claude-x"],
    ["--permission-mode", "auto", "-C", "ws", "--allow", "shell(ls *)", "--allow=read(**)"],
    ["--deny", "write(**/.env)", "--accept", "pytest -q", "--model=m"],
    ["run"],
    ["run", "fix the failing test"],
    ["run", "-"],
    ["run", "--accept", "pytest -q", "task", "--accept=make lint", "--max-turns", "7"],
    ["run", "t", "-m", "claude-x", "--cwd", "w", "--permission-mode", "auto", "--continue"],
    ["run", "--allow", "shell(ls *)", "--deny", "write(**/.env)", "--allow=read(**)", "t"],
    ["run", "t", "--max-cost", "0.5", "--timeout", "30", "--max-tokens", "1000"],
    ["run", "t", "--max-cost", ".25", "--timeout", "12", "--accept-retries", "0"],
    ["run", "t", "--resume", "01ABC", "--output-format", "stream-json", "-q", "--trust-project"],
    ["run", "t", "--effort", "high", "-m", "opus"],
    ["--effort=max", "-m", "sonnet"],
]


@pytest.mark.parametrize("args", ACCEPTED, ids=" ".join)
def test_what_the_fast_path_accepts_typer_reads_the_same(
    args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENTCLI_MODEL", raising=False)  # `run` reads it itself
    assert fast_reads(args) == typer_reads(args)


def test_run_options_built_both_ways_are_equal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTCLI_MODEL", raising=False)
    args = ["run", "t", "--accept", "a", "--accept", "b", "--max-turns", "2", "-q"]
    assert RunOptions(**fast_reads(args)) == RunOptions(**typer_reads(args))


HANDED_TO_TYPER = [
    ["sessions"],
    ["sessions", "list", "--help"],
    ["sessions", "list", "-h"],
    ["sessions", "list", "--al"],
    ["sessions", "list", "--all=yes"],
    ["sessions", "list", "extra"],
    ["sessions", "list", "-C"],
    ["sessions", "list", "-C", "--all"],
    ["sessions", "list", "-C=x"],
    ["sessions", "list", "-Cx"],
    ["sessions", "list", "--", "--all"],
    ["sessions", "show"],
    ["sessions", "show", "a", "b"],
    ["sessions", "remove", "a"],
    ["undo", "--task"],
    ["undo", "now"],
    ["doctor", "--verbose"],
    ["trust"],
    ["--model", "x", "doctor"],
    ["-m", "x", "run", "t"],
    ["-C", "ws", "doctor"],
    ["--version", "-m", "x"],
    ["--help"],
    ["-m"],
    ["run", "a", "b"],
    ["run", "--help"],
    ["run", "t", "--max-turns", "1e3"],
    ["run", "t", "--max-turns", "3.0"],
    ["run", "t", "--max-turns", " 3"],
    ["run", "t", "--max-turns", "1_000"],
    ["run", "t", "--max-turns", "-1"],
    ["run", "t", "--max-cost", "inf"],
    ["run", "t", "--max-cost", "1e-3"],
    ["run", "t", "--timeout", "nan"],
    ["run", "t", "--allow"],
    ["run", "--fix-it"],
    ["run", "t", "-qm", "x"],
]


@pytest.mark.parametrize("args", HANDED_TO_TYPER, ids=" ".join)
def test_anything_unusual_is_left_to_typer(args: list[str]) -> None:
    assert fastpath.parse(args) is None


@pytest.mark.parametrize("command", [["doctor"], ["undo"], ["sessions", "list"]], ids=" ".join)
def test_a_workspace_that_is_not_a_directory_is_a_one_line_usage_error(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing"
    code = fastpath.dispatch([*command, "-C", str(missing)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("agentcli: error: ") and "Traceback" not in err
    assert str(missing) in err


def test_a_bug_is_one_line_exit_code_1_and_a_logged_traceback(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENTCLI_HOME", str(tmp_path))

    def broken() -> int:
        raise KeyError("boom")

    code = fastpath.guarded(broken)
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("agentcli: internal error: KeyError") and "Traceback" not in err
    assert "KeyError: 'boom'" in (tmp_path / "errors.log").read_text()
