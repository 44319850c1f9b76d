"""The command line coerces a parameter only when it was given a value (issue 35: typer built a
pydantic TypeAdapter for each of the ~40 options a `run` was not given). Every parse must come
out as typer's own coercion makes it (the oracle: the same command tree with typer's coercion
left in place), values and refusals alike."""

from __future__ import annotations

from typing import Any

import pytest
from typer.main import get_command

from agentcli.ui import cli

ARGUMENTS = [
    ["run", "hi"],
    ["run"],
    ["run", "-"],
    [
        *["run", "fix it", "-m", "opus", "--effort", "high", "-C", ".", "--allow", "shell(ls)"],
        *["--allow", "read_file", "--deny", "shell(rm *)", "--max-turns", "3", "--max-cost"],
        *["0.25", "--max-tokens", "1000", "--timeout", "2.5", "--accept", "pytest -q"],
        *["--accept", "tests", "--accept-retries", "0", "--output-format", "json", "-q"],
    ],
    ["run", "hi", "--max-turns", "three"],
    ["run", "hi", "--max-cost", "lots"],
    ["run", "hi", "--timeout", "nan"],
    ["run", "hi", "--bogus"],
    ["run", "hi", "-m"],
    ["run", "hi", "--commit", "--branch", "topic"],
    ["--permission-mode", "auto", "-C", "/tmp", "run", "hi"],
    ["--resume", "abc", "run", "hi"],
    ["sessions", "list"],
    ["sessions", "show", "0123abcd"],
    ["sessions", "export", "0123abcd"],
    ["undo"],
    ["undo", "--task", "xyz"],
    ["doctor"],
    ["trust"],
    ["mcp", "list"],
    ["hooks", "approve"],
    ["skills", "lint"],
    ["batch", "tasks.jsonl", "--workers", "2", "--engine", "ray", "--max-cost", "1.5"],
    ["batch", "tasks.jsonl", "--workers", "two"],
]


def _typer_coercion_everywhere(command: Any) -> None:
    for param in command.params:
        if isinstance(getattr(param, "_runtime_param", None), cli._CoercedWhenGiven):
            param._runtime_param = None  # typer builds its own on first use
    for sub in getattr(command, "commands", {}).values():
        _typer_coercion_everywhere(sub)


def _parsed(group: Any, args: list[str]) -> list[tuple[str, Any]]:
    """What each level of the command line parsed `args` into, or the refusal's message."""
    levels: list[tuple[str, Any]] = []
    try:
        ctx = group.make_context("agentcli", list(args))
        levels.append(("agentcli", repr(ctx.params)))  # repr: nan is nan
        command, rest = group, [*ctx._protected_args, *ctx.args]
        while rest and hasattr(command, "resolve_command"):
            name, command, rest = command.resolve_command(ctx, rest)
            ctx = command.make_context(name, list(rest), parent=ctx)
            levels.append((str(name), repr(ctx.params)))
            rest = [*ctx._protected_args, *ctx.args]
    except Exception as exc:  # a refusal: its kind and message must be the same
        levels.append((type(exc).__name__, str(exc)))
    return levels


@pytest.fixture(scope="module")
def trees() -> tuple[Any, Any]:
    given_only = get_command(cli.app)
    typers_own = get_command(cli.app)
    _typer_coercion_everywhere(typers_own)
    return given_only, typers_own


def test_every_parameter_waits_for_a_value_before_building_its_coercion(
    trees: tuple[Any, Any],
) -> None:
    given_only, _ = trees
    run = given_only.commands["run"]
    waiting = [p for p in run.params if isinstance(p._runtime_param, cli._CoercedWhenGiven)]
    assert len(waiting) == len(run.params)  # were typer to change, this says so


@pytest.mark.parametrize("args", ARGUMENTS, ids=" ".join)
def test_a_parse_is_what_typers_own_coercion_makes_it(
    trees: tuple[Any, Any], args: list[str]
) -> None:
    given_only, typers_own = trees
    assert _parsed(given_only, args) == _parsed(typers_own, args)
