"""Model-free commands without the command-line framework.

typer 0.29 builds a pydantic `TypeAdapter` for every parameter it parses: importing and building
them costs ~0.3 s, more than `sessions list` or `doctor` spend on their own work (SPEC §10 gives
them 0.4 s in all). So `entry.main` first offers the arguments to this module, which knows the
few options of those commands. It takes an argument list only when every word is one it knows;
anything else — `--help`, an unknown or misspelt option, a missing value, `--` — returns None
and typer parses it, so every usage message and help text still comes from one place, the typer
app in `cli.py`. `tests/ui/test_fastpath.py` checks that both read each accepted argument list
the same way and that this table names only options the typer app declares.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentcli.errors import UsageError


@dataclass(frozen=True, slots=True)
class FastCommand:
    """One command's arguments: options taking a value, flags, positional arguments (all
    required), each mapped to the keyword its handler takes."""

    handler: Callable[..., int]
    options: dict[str, str] = field(default_factory=dict)
    flags: dict[str, str] = field(default_factory=dict)
    positionals: tuple[str, ...] = ()
    paths: frozenset[str] = frozenset({"cwd"})
    """Keywords whose value is a path (typer gives the handler a `Path`)."""


def _sessions_list(cwd: Path | None = None, all_: bool = False) -> int:
    from agentcli.ui import sessions

    return sessions.sessions_list(cwd, all_)


def _sessions_show(session_id: str) -> int:
    from agentcli.ui import sessions

    return sessions.sessions_show(session_id)


def _sessions_export(session_id: str) -> int:
    from agentcli.ui import sessions

    return sessions.sessions_export(session_id)


def _undo(cwd: Path | None = None, task: str | None = None) -> int:
    from agentcli.ui import sessions

    return sessions.undo_command(cwd, task)


def _doctor(cwd: Path | None = None) -> int:
    from agentcli.ui.doctor import doctor_command

    return doctor_command(cwd)


_CWD = {"-C": "cwd", "--cwd": "cwd"}

COMMANDS: dict[tuple[str, ...], FastCommand] = {
    ("sessions", "list"): FastCommand(_sessions_list, options=_CWD, flags={"--all": "all_"}),
    ("sessions", "show"): FastCommand(_sessions_show, positionals=("session_id",)),
    ("sessions", "export"): FastCommand(_sessions_export, positionals=("session_id",)),
    ("undo",): FastCommand(_undo, options={**_CWD, "--task": "task"}),
    ("doctor",): FastCommand(_doctor, options=_CWD),
}


def parse(args: Sequence[str]) -> tuple[FastCommand, dict[str, Any]] | None:
    """The command and its keyword arguments, or None when typer should parse `args`."""
    for length in (2, 1):
        command = COMMANDS.get(tuple(args[:length])) if len(args) >= length else None
        if command is not None:
            kwargs = _parse_rest(command, args[length:])
            return None if kwargs is None else (command, kwargs)
    return None


def _parse_rest(command: FastCommand, rest: Sequence[str]) -> dict[str, Any] | None:
    kwargs: dict[str, Any] = {}
    positionals: list[str] = []
    words = iter(rest)
    for word in words:
        if word.startswith("-") and word != "-":
            name, eq, inline = word.partition("=")
            if eq and not name.startswith("--"):
                return None  # click reads `-C=x` as the value "=x"; leave that to it
            if name in command.flags and not eq:
                kwargs[command.flags[name]] = True
            elif name in command.options:
                value = inline if eq else next(words, None)
                if value is None or (not eq and value.startswith("-")):
                    return None  # missing value: typer says so
                key = command.options[name]
                kwargs[key] = Path(value) if key in command.paths else value
            else:
                return None  # --help, --, an unknown option, a combined short option
        else:
            positionals.append(word)
    if len(positionals) != len(command.positionals):
        return None
    kwargs.update(zip(command.positionals, positionals, strict=True))
    return kwargs


def dispatch(args: Sequence[str]) -> int | None:
    """Run `args` if this module can parse them; None when typer must."""
    parsed = parse(args)
    if parsed is None:
        return None
    command, kwargs = parsed
    return guarded(lambda: command.handler(**kwargs))


def guarded(call: Callable[[], int]) -> int:
    """Run a command: a UsageError becomes one line and exit code 2; a bug becomes one line,
    exit code 1 and a traceback in the error log."""
    try:
        return call()
    except UsageError as exc:
        sys.stderr.write(f"agentcli: error: {exc.message}\n")
        if exc.hint:
            sys.stderr.write(f"  hint: {exc.hint}\n")
        return 2
    except Exception as exc:  # a bug: one line for the user, the traceback in a log file
        from agentcli.ui.errorlog import log_internal_error

        log = log_internal_error(exc)
        where = f" (details in {log})" if log is not None else ""
        sys.stderr.write(f"agentcli: internal error: {type(exc).__name__}: {exc}{where}\n")
        return 1
