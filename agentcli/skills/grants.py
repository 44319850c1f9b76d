"""`allowed-tools` as agentcli permission rules, granted for one task.

Claude Code writes `Bash(git add:*)` (a command prefix), the agentskills spec `Bash(git:*)
Read`; agentcli's rules are `shell(git add *)`, `read`. Each entry becomes the allow rule that
means the same; its grant lasts for the task the command or skill starts (the session drops
rules of `TURN_SOURCE` when the task ends) and never reaches past a deny or ask rule, the
commands that always ask, or the sandbox: an allow rule decides only whether to ask.
"""

from __future__ import annotations

import re

from agentcli.errors import UsageError
from agentcli.permissions.rules import parse_rule

TURN_SOURCE = "allowed-tools, this task"
"""The source of the rules a command or skill grants: what `/permissions` shows, and what the
session drops when the task ends."""

_READERS = frozenset({"grep", "glob", "ls", "notebookread"})
"""Claude Code's read-only tools: agentcli's `read` class covers what they do."""
_WRITERS = frozenset({"multiedit", "notebookedit"})
_PREFIX = re.compile(r"^(?P<tool>[A-Za-z_][\w.-]*)\((?P<pattern>.*):\*\)$", re.DOTALL)


def rule_text(entry: str) -> str:
    """The agentcli rule an `allowed-tools` entry means (not yet checked)."""
    entry = entry.strip()
    prefix = _PREFIX.match(entry)
    if prefix is not None:  # `Bash(git add:*)`: the command and anything after it
        entry = f"{prefix.group('tool')}({prefix.group('pattern').rstrip()} *)"
    name, paren, rest = entry.partition("(")
    lower = name.lower()
    if lower in _READERS:
        return f"read({rest}" if paren and rest.rstrip(")").strip() not in ("", "*") else "read"
    if lower in _WRITERS:
        return f"write({rest}" if paren else "write"
    return entry


def grants(entries: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The rules `entries` grant, and one problem per entry that is no rule (left out)."""
    rules: list[str] = []
    problems: list[str] = []
    for entry in entries:
        text = rule_text(entry)
        try:
            parse_rule(text, "allowed-tools")
        except UsageError as exc:
            problems.append(
                f"`allowed-tools` entry {entry!r} is not a rule agentcli knows: "
                f"{exc.hint or exc.message}"
            )
            continue
        if text not in rules:
            rules.append(text)
    return tuple(rules), tuple(problems)
