"""Which hooks an event's subject matches: Claude Code's matcher rule, on agentcli's names.

A matcher of `""` or `"*"` matches everything. One made only of letters, digits, `_`, `-`,
spaces, `,` and `|` is a list of exact names (`shell|write_file`, `Bash, Edit`); anything else is
a regular expression searched for anywhere in the name (`Edit.*`, `mcp__memory__.*`). A tool is
matched by its agentcli name and by the name Claude Code gives the same tool, so matchers written
for Claude Code (`Bash`, `Write|Edit`, `Task|Agent` for the subagent tool) work unchanged.
"""

from __future__ import annotations

import functools
import re

from agentcli.hook_entry import SIMPLE_MATCHER

CLAUDE_CODE_NAMES = {
    "shell": "Bash",
    "read_file": "Read",
    "write_file": "Write",
    "edit_file": "Edit",
    "glob": "Glob",
    "grep": "Grep",
}
"""agentcli's tool → Claude Code's name for it (MCP tools are `mcp__SERVER__TOOL` in both)."""


OLD_NAMES = {"agent": ("Agent", "Task")}
"""Tools Claude Code has called by more than one name (its subagent tool was `Task`)."""


def subject_names(subject: str) -> tuple[str, ...]:
    """The names `subject` (a tool's name, a source, a trigger) is matched by."""
    if subject in OLD_NAMES:
        return (subject, *OLD_NAMES[subject])
    alias = CLAUDE_CODE_NAMES.get(subject)
    return (subject, alias) if alias else (subject,)


def matches(matcher: str, subject: str) -> bool:
    """Does `matcher` match `subject` (see the module docstring)?"""
    if matcher in ("", "*"):
        return True
    names = subject_names(subject)
    if SIMPLE_MATCHER.match(matcher):
        wanted = {part.strip() for part in re.split(r"[|,]", matcher) if part.strip()}
        return any(name in wanted for name in names)
    pattern = _compiled(matcher)
    return pattern is not None and any(pattern.search(name) for name in names)


@functools.lru_cache(maxsize=256)
def _compiled(matcher: str) -> re.Pattern[str] | None:
    try:
        return re.compile(matcher)
    except re.error:  # checked when the config was read; a bad one matches nothing
        return None
