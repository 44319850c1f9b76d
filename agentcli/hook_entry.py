"""One hook's configuration, in Claude Code's shape (event → matcher groups → handlers), as TOML:

    [[hooks.PreToolUse]]
    matcher = "shell|write_file"
    hooks = [{ type = "command", command = "scripts/policy.sh", timeout = 30 }]

The events agentcli fires, the model of a matcher group and of a handler, and which workspace
files a hook's command names (the scripts a hook runs: their content is part of what a user
approves, and the model may not change them without asking).

A leaf: pydantic only, so `agentcli.settings` (the config), `agentcli.permissions` (which
files to protect) and `agentcli.hooks` (running them) all read it without importing each other.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "Notification",
    "Stop",
    "PreCompact",
    "SessionEnd",
)
"""The events agentcli fires, by Claude Code's names."""

DEFAULT_TIMEOUT_S = 60.0
PROJECT_DIR_VARIABLES = ("AGENTCLI_PROJECT_DIR", "CLAUDE_PROJECT_DIR")
"""What a hook's environment names the workspace by (Claude Code's name too)."""

_STRICT = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)
SIMPLE_MATCHER = re.compile(r"^[A-Za-z0-9_\- ,|]*$")
"""A matcher made only of these is a list of exact names (separated by `|` or `,`); anything
else is a regular expression, searched for anywhere in the name (Claude Code's rule)."""


class Handler(BaseModel):
    """One hook: a command agentcli runs with the event's JSON on its stdin."""

    model_config = _STRICT

    type: Literal["command"]
    """`command`: a shell command line, run with `bash -c` in the workspace."""
    command: Annotated[str, Field(min_length=1)]
    """What to run; `$AGENTCLI_PROJECT_DIR` (or `$CLAUDE_PROJECT_DIR`) is the workspace."""
    timeout: Annotated[float | None, Field(gt=0, allow_inf_nan=False)] = None
    """Seconds before it is stopped with its whole process group (default 60)."""
    sandbox: bool | None = None
    """A hook from your own config runs as your program, unconfined, unless `true` puts it in
    the OS sandbox (workspace-write profile). A repository's hooks always run sandboxed; they
    cannot set `false`."""

    @property
    def timeout_s(self) -> float:
        return self.timeout if self.timeout is not None else DEFAULT_TIMEOUT_S


class MatcherGroup(BaseModel):
    """`[[hooks.EVENT]]`: the hooks that run when the matcher matches."""

    model_config = _STRICT

    matcher: str = ""
    """Tool names (`shell|write_file`, Claude Code's `Bash|Write` too) or a regular expression;
    `""` or `"*"` matches everything. SessionStart matches its source, Notification its type,
    PreCompact its trigger, SessionEnd its reason; the other events ignore it."""
    hooks: Annotated[list[Handler], Field(min_length=1)]
    """The handlers to run (in parallel)."""

    @field_validator("matcher")
    @classmethod
    def _compiles(cls, matcher: str) -> str:
        if matcher != "*" and not SIMPLE_MATCHER.match(matcher):
            try:
                re.compile(matcher)
            except re.error as exc:
                raise ValueError(f"matcher {matcher!r} is not a regular expression: {exc}") from exc
        return matcher


def named_files(command: str, workspace: Path) -> list[Path]:
    """The files inside `workspace` that `command` names as words (`scripts/check.sh`,
    `python3 $AGENTCLI_PROJECT_DIR/hooks/fmt.py`), resolved: the scripts a hook runs. A
    command that is not shell words names none."""
    text = command
    for name in PROJECT_DIR_VARIABLES:
        text = text.replace("${" + name + "}", str(workspace)).replace("$" + name, str(workspace))
    try:
        words = shlex.split(text)
    except ValueError:
        return []
    root = workspace.resolve()
    found: list[Path] = []
    for word in words:
        if not word or word.startswith("-"):
            continue
        path = Path(word).expanduser()
        path = path if path.is_absolute() else workspace / path
        try:
            resolved = path.resolve()
        except (OSError, RuntimeError):
            continue
        if resolved.is_relative_to(root) and resolved.is_file() and resolved not in found:
            found.append(resolved)
    return found
