"""Permission rules: `read(GLOB)`, `write(GLOB)`, `shell(PATTERN)` and tool names.

Path globs match workspace-relative paths: `*` and `?` stay within one path segment, `**`
crosses segments (`src/**` is everything under `src`, `**/*.py` every Python file); `src/**`
also matches the directory `src` itself, so a rule on everything in a directory covers
searching or listing it too. A relative glob never matches an absolute path. Shell patterns
match a simple command's words joined by single spaces; `*` matches anything, and a trailing
` *` also matches the bare command (`shell(pytest *)` matches `pytest`). A bare tool name
(`mytool`, `mytool(*)`) matches every call of that tool; the built-in file tools' names stand
for their class (`write_file`, `edit_file`: `write`; `read_file`: `read`), and `grep`/`glob`
are refused as rules (searches are governed by `read` rules); `mcp__SERVER__*` (or `mcp__SERVER`, as
Claude Code writes it) matches every tool of an MCP server; `agent` (also `Agent`, `Task`)
is the subagent tool, and `agent(explore)` one type of subagent.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from agentcli.errors import UsageError
from agentcli.globs import glob_to_regex
from agentcli.vocabulary import Decision

_RULE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.:-]*(?:__\*)?)\s*(?:\((.*)\))?\s*$", re.DOTALL)
MCP_PREFIX = "mcp__"
_SERVER = re.compile(r"(?:(?!__)[A-Za-z0-9_-])+")  # an MCP server's name (agentcli.mcp_entry)
_ALIASES = {
    "bash": "shell",
    "edit": "write",
    # The built-in tools' own names, as users guess them: a rule on a tool's class covers the
    # tool (as Claude Code's `Edit`/`Read` rules cover all its file tools).
    "write_file": "write",
    "edit_file": "write",
    "read_file": "read",
    # The subagent tool, by the names Claude Code gave it (`Agent`, formerly `Task`):
    # `agent(explore)` / `Task(Explore)` name one type of subagent.
    "agent": "agent",
    "task": "agent",
}
_SEARCH_TOOLS = frozenset({"grep", "glob"})
"""Searches are reads: governed by `read(...)` rules, never by a rule of their own."""
PATH_CLASSES = frozenset({"read", "write"})
BUILTIN_CLASSES = frozenset({"read", "write", "shell"})


# A rule's kind is the decision it makes: one enum, not two with the same three values.
RuleKind = Decision


@dataclass(frozen=True, slots=True)
class Rule:
    text: str
    """The rule as written, e.g. `shell(pytest *)`."""
    rule_class: str
    pattern: str
    source: str
    """Where it came from: `--allow`, a config file path, or `session`."""
    granted: bool = False
    """Added while the session runs (an "always" answer, `/permissions allow`), not read from
    the flags or config the session started with: a switch of mode carries it over."""

    @property
    def matches_everything(self) -> bool:
        return self.pattern in ("*", "**")

    def matches(self, rule_class: str, subject: str) -> bool:
        if not class_matches(self.rule_class, rule_class):
            return False
        if self.matches_everything:
            return True
        if rule_class in PATH_CLASSES:
            return path_glob_matches(self.pattern, subject)
        if rule_class == "shell":
            return command_pattern_matches(self.pattern, subject)
        return fnmatch.fnmatchcase(subject, self.pattern)


def class_matches(rule_class: str, tool_class: str) -> bool:
    """Does a rule's class cover a call's: the same, or an MCP server's wildcard covering one
    of its tools (`mcp__github__*` and `mcp__github` cover `mcp__github__create_issue`)."""
    if rule_class == tool_class:
        return True
    if not rule_class.startswith(MCP_PREFIX):
        return False
    server = rule_class.removesuffix("*").removesuffix("__")
    if "__" in server.removeprefix(MCP_PREFIX):
        return False  # names one tool, and it is not this one
    return tool_class.startswith(f"{server}__")


def parse_rule(text: str, source: str) -> Rule:
    """Parse one rule; a malformed rule is a UsageError naming where it came from."""
    match = _RULE.match(text)
    if not match or (match.group(2) is not None and not match.group(2).strip()):
        raise UsageError(
            f"invalid permission rule {text!r} (from {source})",
            hint="write CLASS(PATTERN) such as 'shell(pytest *)', 'write(src/**)', "
            "'read(docs/*.md)', or a bare tool name",
        )
    name = match.group(1)
    server = name.removeprefix(MCP_PREFIX).removesuffix("__*")
    whole_server = name.startswith(MCP_PREFIX) and name.endswith("__*")
    if name.endswith("*") and not (whole_server and _SERVER.fullmatch(server)):
        raise UsageError(
            f"invalid permission rule {text!r} (from {source})",
            hint="a `*` in a tool name is only for every tool of one MCP server: mcp__NAME__*",
        )
    lower = name.lower()
    if lower in _SEARCH_TOOLS:
        raise UsageError(
            f"invalid permission rule {text!r} (from {source}): {lower} is governed by read rules",
            hint="grep and glob search what read(GLOB) rules allow, e.g. 'read(src/**)'",
        )
    rule_class = lower if lower in BUILTIN_CLASSES else _ALIASES.get(lower, name)
    pattern = " ".join(match.group(2).split()) if match.group(2) is not None else "*"
    if rule_class == "agent":
        pattern = pattern.lower()  # subagent types are lowercase (`Task(Explore)`: explore)
    if rule_class in PATH_CLASSES:
        pattern = pattern.removeprefix("./")
        if pattern.endswith("/"):
            pattern += "**"
    return Rule(text=text.strip(), rule_class=rule_class, pattern=pattern, source=source)


@functools.lru_cache(maxsize=256)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    return re.compile(glob_to_regex(pattern), re.DOTALL)


def path_glob_matches(pattern: str, subject: str) -> bool:
    subject = subject.removeprefix("./")
    if subject.startswith("/") != pattern.startswith("/"):
        return False
    if _glob_regex(pattern).fullmatch(subject) is not None:
        return True
    # `dir/**` is everything in `dir`: grep or glob over `dir` itself reads all of it.
    return pattern.endswith("/**") and _glob_regex(pattern[:-3]).fullmatch(subject) is not None


def command_pattern_matches(pattern: str, command_text: str) -> bool:
    if pattern.endswith(" *"):
        head = re.escape(pattern[:-2]).replace(r"\*", ".*")
        regex = f"{head}(?: .*)?"
    else:
        regex = re.escape(pattern).replace(r"\*", ".*")
    return re.fullmatch(regex, command_text, re.DOTALL) is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class RulesView:
    """The rules in force, read-only (what `/permissions` shows, what `/mode` carries over)."""

    allow: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()

    def of(self, kind: RuleKind) -> tuple[Rule, ...]:
        return {RuleKind.ALLOW: self.allow, RuleKind.ASK: self.ask, RuleKind.DENY: self.deny}[kind]


@dataclass(kw_only=True)
class RuleSet:
    """Rules by kind. Deny beats ask beats allow, whatever level each came from."""

    allow: list[Rule] = field(default_factory=list)
    ask: list[Rule] = field(default_factory=list)
    deny: list[Rule] = field(default_factory=list)

    def of(self, kind: RuleKind) -> list[Rule]:
        return {RuleKind.ALLOW: self.allow, RuleKind.ASK: self.ask, RuleKind.DENY: self.deny}[kind]

    def add(
        self, kind: RuleKind, texts: Iterable[str], source: str, *, granted: bool = False
    ) -> None:
        self.of(kind).extend(replace(parse_rule(text, source), granted=granted) for text in texts)

    def first(self, kind: RuleKind, rule_class: str, subject: str) -> Rule | None:
        return next((r for r in self.of(kind) if r.matches(rule_class, subject)), None)

    def view(self) -> RulesView:
        return RulesView(allow=tuple(self.allow), ask=tuple(self.ask), deny=tuple(self.deny))

    def allows_everything(self, rule_class: str) -> Rule | None:
        return next(
            (r for r in self.allow if r.rule_class == rule_class and r.matches_everything), None
        )
