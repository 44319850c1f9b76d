"""A definition file's optional YAML frontmatter, read into one typed record.

The frontmatter is the block between a first line `---` and the next `---` line, parsed with
PyYAML's safe loader (imported only when a file has one). Keys are matched with `_` and `-`
alike (`argument_hint` is Codex's spelling). Known keys:

- the agentskills.io spec: `name`, `description`, `license`, `compatibility`, `metadata`,
  `allowed-tools`;
- the command format (Claude Code's): `argument-hint`, `model`, `effort`,
  `disable-model-invocation`, `user-invocable`, `when_to_use`;
- Claude Code's keys agentcli does not use (`context`, `agent`, `hooks`, `paths`, …): ignored.

Anything else is unknown: ignored, with a notice (files come from other tools). A value of the
wrong type is ignored and named in `problems` (what `skills lint` reports). Claude Code reads
`argument-hint: [pr-number] [priority]`, which is not YAML; a block that fails to parse is
read again with each value that is not YAML on its own quoted, and says so in `problems`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentcli.model_spec import Effort

SPEC_KEYS = frozenset(
    {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}
)
FORMAT_KEYS = frozenset(
    {
        "argument-hint",
        "model",
        "effort",
        "disable-model-invocation",
        "user-invocable",
        "when-to-use",
    }
)
UNUSED_KEYS = frozenset(
    {
        "arguments",
        "disallowed-tools",
        "context",
        "agent",
        "background",
        "hooks",
        "paths",
        "shell",
    }
)
"""Claude Code's keys that agentcli reads past (a notice names them: they change what the
file does there)."""

_OPENING = re.compile(r"\A---[ \t]*\r?\n")
_CLOSING = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.MULTILINE)
_TOP_LEVEL = re.compile(r"^([A-Za-z_][\w-]*):[ \t]+(\S.*?)[ \t]*$")


class BrokenFrontmatter(Exception):
    """The frontmatter cannot be read at all; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True, kw_only=True)
class Frontmatter:
    present: bool = False
    """The file has a frontmatter block."""
    name: str | None = None
    description: str | None = None
    when_to_use: str | None = None
    argument_hint: str | None = None
    allowed_tools: tuple[str, ...] = ()
    """The entries as written (`Bash(git add:*)`, `Read`): `grants` turns them into rules."""
    model: str | None = None
    effort: Effort | None = None
    disable_model_invocation: bool = False
    user_invocable: bool = True
    license: str | None = None
    compatibility: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    keys: tuple[str, ...] = ()
    """Every key as written, in order."""
    unknown: tuple[str, ...] = ()
    unused: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()


def split(text: str) -> tuple[str | None, str]:
    """The frontmatter block's text (None: the file has none) and the body after it."""
    opening = _OPENING.match(text)
    if opening is None:
        return None, text
    closing = _CLOSING.search(text, opening.end())
    if closing is None:
        raise BrokenFrontmatter("its frontmatter (from the first line `---`) is never closed")
    body = text[closing.end() :]
    return text[opening.end() : closing.start()], body.removeprefix("\r").removeprefix("\n")


def parse(text: str) -> tuple[Frontmatter, str]:
    """The file's frontmatter and body (BrokenFrontmatter when it cannot be read)."""
    block, body = split(text)
    if block is None:
        return Frontmatter(), body
    data, problems = _load(block)
    return _typed(data, problems), body


def _load(block: str) -> tuple[dict[str, Any], list[str]]:
    import yaml

    problems: list[str] = []
    try:
        loaded = yaml.safe_load(block)
    except yaml.YAMLError as exc:
        repaired = _quoted_plain_values(block)
        try:
            loaded = yaml.safe_load(repaired) if repaired != block else None
        except yaml.YAMLError:
            loaded = None
        if loaded is None or repaired == block:
            raise BrokenFrontmatter(f"its frontmatter is not YAML ({_first_line(exc)})") from exc
        problems.append(
            f"the frontmatter is not YAML ({_first_line(exc)}); read with its plain values "
            "quoted (quote them in the file: other tools refuse it)"
        )
    if loaded is None:
        return {}, problems
    if not isinstance(loaded, dict):
        raise BrokenFrontmatter("its frontmatter is not a mapping of keys to values")
    return {str(key): value for key, value in loaded.items()}, problems


def _quoted_plain_values(block: str) -> str:
    """`block` with each top-level `key: value` quoted whose value is not one YAML value on
    its own (`[a] [b]`, or `Fix: it`, which reads as a mapping)."""
    import yaml

    lines = []
    for line in block.splitlines():
        match = _TOP_LEVEL.match(line)
        if match is not None:
            value = match.group(2)
            try:
                plain = not isinstance(yaml.safe_load(value), dict) or value.startswith("{")
            except yaml.YAMLError:
                plain = False
            if not plain:
                escaped = value.replace("'", "''")
                line = f"{match.group(1)}: '{escaped}'"
        lines.append(line)
    return "\n".join(lines)


def _first_line(exc: Exception) -> str:
    """Where (the file's line: the frontmatter starts on line 2) and what YAML found wrong,
    in a line: `line 2, column 16: expected <block end>, but found '['`."""
    import yaml

    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"line {mark.line + 2}, column {mark.column + 1}: {exc.problem}"
    return " ".join(str(exc).split())[:160]


def normalized(key: str) -> str:
    return key.strip().lower().replace("_", "-")


def _typed(data: dict[str, Any], problems: list[str]) -> Frontmatter:
    by_key = {normalized(key): value for key, value in data.items()}
    known = SPEC_KEYS | FORMAT_KEYS
    reader = _Reader(by_key, problems)
    return Frontmatter(
        present=True,
        name=reader.text("name"),
        description=reader.text("description"),
        when_to_use=reader.text("when-to-use"),
        argument_hint=reader.hint(),
        allowed_tools=reader.tools(),
        model=reader.text("model"),
        effort=reader.effort(),
        disable_model_invocation=reader.flag("disable-model-invocation", default=False),
        user_invocable=reader.flag("user-invocable", default=True),
        license=reader.text("license"),
        compatibility=reader.text("compatibility"),
        metadata=reader.metadata(),
        keys=tuple(data),
        unknown=tuple(k for k in data if normalized(k) not in known | UNUSED_KEYS),
        unused=tuple(k for k in data if normalized(k) in UNUSED_KEYS),
        problems=tuple(problems),
    )


class _Reader:
    """Reads each known key's value, noting a value of the wrong type as a problem."""

    def __init__(self, values: dict[str, Any], problems: list[str]) -> None:
        self.values = values
        self.problems = problems

    def text(self, key: str) -> str | None:
        value = self.values.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            self.problems.append(f"`{key}` is not a string (ignored)")
            return None
        return str(value)

    def hint(self) -> str | None:
        value = self.values.get("argument-hint")
        if isinstance(value, list) and all(isinstance(v, str | int) for v in value):
            # `argument-hint: [message]` is a YAML list: shown as it was written.
            return " ".join(f"[{item}]" for item in value)
        return self.text("argument-hint")

    def flag(self, key: str, *, default: bool) -> bool:
        value = self.values.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.problems.append(f"`{key}` is not true or false (ignored)")
            return default
        return value

    def effort(self) -> Effort | None:
        value = self.text("effort")
        if value is None:
            return None
        try:
            return Effort(value)
        except ValueError:
            levels = ", ".join(level.value for level in Effort)
            self.problems.append(f"`effort: {value}` is not one of {levels} (ignored)")
            return None

    def tools(self) -> tuple[str, ...]:
        value = self.values.get("allowed-tools")
        if value is None:
            return ()
        if isinstance(value, str):
            return tuple(split_tools(value))
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return tuple(entry for item in value for entry in split_tools(item))
        self.problems.append("`allowed-tools` is not a string or a list of strings (ignored)")
        return ()

    def metadata(self) -> dict[str, str]:
        value = self.values.get("metadata")
        if value is None:
            return {}
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            self.problems.append("`metadata` is not a mapping of strings to strings")
            if isinstance(value, dict):
                return {str(k): str(v) for k, v in value.items()}
            return {}
        return dict(value)


def split_tools(text: str) -> list[str]:
    """`Bash(git add:*), Bash(git status:*) Read` → its entries: split at commas and
    whitespace outside parentheses (Claude Code writes commas, the agentskills spec spaces)."""
    entries: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(depth - 1, 0)
        if depth == 0 and (char == "," or char.isspace()):
            if current:
                entries.append("".join(current))
                current = []
            continue
        current.append(char)
    if current:
        entries.append("".join(current))
    return entries
