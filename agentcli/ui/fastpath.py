"""Common commands without the command-line framework's start-up cost.

typer 0.29 builds a pydantic `TypeAdapter` for every parameter it parses: importing and building
them costs ~0.3 s, more than `sessions list` or `doctor` spend on their own work (SPEC §10 gives
them 0.4 s in all), and a delay `run` adds before its first request. So `entry.main` first
offers the arguments to this module, which knows the options of `run`, `sessions`, `undo` and
`doctor`. It takes an argument list only when every word is one it knows and every value is
plain; anything else (`--help`, an unknown or misspelt option, a missing value, `--`, `1e3`)
returns None and typer parses it, so every usage message and help text still comes from one
place, the typer app in `cli.py`. `tests/test_cli_fastpath.py` checks that both read each
accepted argument list the same way and that this table names only options the typer app
declares.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentcli.errors import UsageError
from agentcli.ui.safe import visible

_INT = re.compile(r"[0-9]+")
_FLOAT = re.compile(r"[0-9]+(?:\.[0-9]+)?|\.[0-9]+")


def _plain_int(text: str) -> int:
    """Digits only: whatever else click and pydantic might accept (`1_000`, ` 3`), typer reads."""
    if not _INT.fullmatch(text):
        raise ValueError(text)
    return int(text)


def _plain_float(text: str) -> float:
    if not _FLOAT.fullmatch(text):
        raise ValueError(text)
    return float(text)


@dataclass(frozen=True, slots=True)
class FastCommand:
    """One command's arguments, each mapped to the keyword its handler takes: options taking a
    value, flags, required positionals, then optional ones."""

    handler: Callable[..., int]
    options: Mapping[str, str] = field(default_factory=dict)
    flags: Mapping[str, str] = field(default_factory=dict)
    positionals: tuple[str, ...] = ()
    optional_positionals: tuple[str, ...] = ()
    types: Mapping[str, Callable[[str], Any]] = field(default_factory=lambda: {"cwd": Path})
    """Keyword -> conversion (a ValueError leaves the whole argument list to typer)."""
    repeatable: frozenset[str] = frozenset()
    """Keywords given as a list, one item per use of the option."""


def sessions_list(cwd: Path | None = None, all_: bool = False) -> int:
    from agentcli.ui import sessions

    return sessions.sessions_list(cwd, all_)


def sessions_show(session_id: str) -> int:
    from agentcli.ui import sessions

    return sessions.sessions_show(session_id)


def sessions_export(session_id: str) -> int:
    from agentcli.ui import sessions

    return sessions.sessions_export(session_id)


def undo(cwd: Path | None = None, task: str | None = None) -> int:
    from agentcli.ui import sessions

    return sessions.undo_command(cwd, task)


def doctor(cwd: Path | None = None) -> int:
    from agentcli.ui.doctor import doctor_command

    return doctor_command(cwd)


def run(**options: Any) -> int:
    from agentcli.ui.run import RunOptions, run_command

    return run_command(RunOptions(**{"task": None, **options}))


def repl(**settings: Any) -> int:
    from agentcli.ui.repl.main import main as repl_main
    from agentcli.ui.repl.settings import ReplSettings

    return repl_main(ReplSettings(**settings))


_CWD = {"-C": "cwd", "--cwd": "cwd"}
_RULES = {"--allow": "allow", "--deny": "deny", "--accept": "accept"}

_RUN = FastCommand(
    run,
    options={
        **_CWD,
        "-m": "model",
        "--model": "model",
        "--effort": "effort",
        "--permission-mode": "permission_mode",
        "--allow": "allow",
        "--deny": "deny",
        "--max-turns": "max_turns",
        "--max-cost": "max_cost",
        "--max-tokens": "max_tokens",
        "--timeout": "timeout",
        "--accept": "accept",
        "--accept-retries": "accept_retries",
        "--resume": "resume",
        "--output-format": "output_format",
    },
    flags={
        "--continue": "continue_",
        "-q": "quiet",
        "--quiet": "quiet",
        "--trust-project": "trust_project",
    },
    optional_positionals=("task",),
    types={
        "cwd": Path,
        "max_turns": _plain_int,
        "max_tokens": _plain_int,
        "accept_retries": _plain_int,
        "max_cost": _plain_float,
        "timeout": _plain_float,
    },
    repeatable=frozenset({"allow", "deny", "accept"}),
)

COMMANDS: dict[tuple[str, ...], FastCommand] = {
    # Options with no command start the REPL (`agentcli -m MODEL --permission-mode auto`).
    (): FastCommand(
        repl,
        options={
            **_CWD,
            "-m": "model",
            "--model": "model",
            "--effort": "effort",
            "--permission-mode": "permission_mode",
        }
        | _RULES,
        repeatable=frozenset(_RULES.values()),
    ),
    ("run",): _RUN,
    ("sessions", "list"): FastCommand(sessions_list, options=_CWD, flags={"--all": "all_"}),
    ("sessions", "show"): FastCommand(sessions_show, positionals=("session_id",)),
    ("sessions", "export"): FastCommand(sessions_export, positionals=("session_id",)),
    ("undo",): FastCommand(undo, options={**_CWD, "--task": "task"}),
    ("doctor",): FastCommand(doctor, options=_CWD),
}


def parse(args: Sequence[str]) -> tuple[FastCommand, dict[str, Any]] | None:
    """The command and its keyword arguments, or None when typer should parse `args`."""
    # The REPL's options (no command word) only when the arguments start with an option.
    lengths = (2, 1, 0) if args and args[0].startswith("-") else (2, 1)
    for length in lengths:
        command = COMMANDS.get(tuple(args[:length])) if len(args) >= length else None
        if command is not None:
            try:
                kwargs = _parse_rest(command, args[length:])
            except ValueError:
                return None  # a value typer may read differently, or reject with its message
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
                converted = command.types.get(key, str)(value)
                if key in command.repeatable:
                    kwargs.setdefault(key, []).append(converted)
                else:
                    kwargs[key] = converted
            else:
                return None  # --help, --, an unknown option, a combined short option
        else:
            positionals.append(word)
    required, optional = command.positionals, command.optional_positionals
    if not len(required) <= len(positionals) <= len(required) + len(optional):
        return None
    kwargs.update(zip((*required, *optional), positionals, strict=False))
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
    except KeyboardInterrupt:  # Ctrl-C before a command installs its own handlers
        sys.stderr.write("\nagentcli: aborted\n")
        return 130
    except UsageError as exc:
        sys.stderr.write(f"agentcli: error: {visible(exc.message)}\n")
        if exc.hint:
            sys.stderr.write(f"  hint: {visible(exc.hint)}\n")
        return 2
    except Exception as exc:  # a bug: one line for the user, the traceback in a log file
        from agentcli.ui.errorlog import log_internal_error

        log = log_internal_error(exc)
        where = f" (details in {log})" if log is not None else ""
        sys.stderr.write(
            f"agentcli: internal error: {type(exc).__name__}: {visible(str(exc))}{where}\n"
        )
        return 1
