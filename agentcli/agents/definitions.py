"""What a subagent is: its definition (Claude Code's `.claude/agents/*.md` format), parsed from
a Markdown file with YAML frontmatter, and the two built in.

Frontmatter, as Claude Code writes it: `name` (`[a-z0-9-]`), `description` (both required),
`tools` / `disallowedTools` (a comma-separated string or a list of tool names: agentcli's, Claude
Code's `Read`, `Bash`, … or MCP tools `mcp__SERVER__TOOL`, `mcp__SERVER__*`, `mcp__SERVER`),
`model` (an alias, an id or `inherit`), `permissionMode`, `maxTurns`; the body is the system
prompt. A file is read as it is: what agentcli does not do (`hooks`, `mcpServers`, `skills`,
a tool restricted by arguments such as `Bash(git *)`, a tool it does not have) is left out and
named in the definition's notes, never widened into something else. A definition can only
narrow what the delegating task may do (`agentcli.agents.boundaries`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agentcli.vocabulary import PermissionMode

NAME = re.compile(r"[a-z0-9][a-z0-9-]*")
MAX_DESCRIPTION = 1024

CLAUDE_CODE_TOOLS = {
    "bash": "shell",
    "read": "read_file",
    "write": "write_file",
    "edit": "edit_file",
    "multiedit": "edit_file",
    "glob": "glob",
    "grep": "grep",
    "agent": "agent",
    "task": "agent",
}
"""Claude Code's tool names (any case) → agentcli's; agentcli's own names stand for themselves."""

MODES = {
    "default": PermissionMode.DEFAULT,
    "read-only": PermissionMode.READ_ONLY,
    "plan": PermissionMode.READ_ONLY,
    "accept-edits": PermissionMode.ACCEPT_EDITS,
    "acceptedits": PermissionMode.ACCEPT_EDITS,
    "auto": PermissionMode.AUTO,
    "yolo": PermissionMode.YOLO,
    "bypasspermissions": PermissionMode.YOLO,
}
"""`permissionMode` values, agentcli's and Claude Code's (any case). `dontAsk` is apart: the
subagent's questions are denied without asking anyone."""
DONT_ASK = "dontask"

IGNORED_QUIETLY = frozenset({"color", "effort", "memory", "initialPrompt"})
"""Claude Code fields that change nothing agentcli enforces: left out without a note."""
NOT_SUPPORTED = frozenset({"hooks", "mcpServers", "skills", "isolation", "background"})
"""Claude Code fields agentcli does not do (a subagent gets its parent's MCP servers and hooks,
filtered by `tools`): left out, with a note."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentDefinition:
    """One type of subagent."""

    name: str
    description: str
    prompt: str
    """Its system prompt (before the environment and the instruction files)."""
    source: str
    """`built-in`, or the file it was read from."""
    tools: tuple[str, ...] | None = None
    """The tools it may have (agentcli's names); None: all of its parent's."""
    disallowed: tuple[str, ...] = ()
    model: str | None = None
    """An alias or id; None (`inherit`): its parent's model."""
    mode: PermissionMode | None = None
    """The permission mode it asks for (only a narrower one than its parent's applies)."""
    never_asks: bool = False
    """`permissionMode: dontAsk`: what would ask is denied."""
    max_turns: int | None = None
    notes: tuple[str, ...] = ()
    """What of the file was left out, and why."""


class DefinitionError(ValueError):
    """A file that is no usable definition (the message says why)."""


def parse_definition(text: str, source: str) -> AgentDefinition:
    """The definition in `text` (a Markdown file with YAML frontmatter) from `source`."""
    fields, body = _split(text)
    notes: list[str] = []
    name = fields.get("name")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise DefinitionError(f"`name` must be lowercase letters, digits and `-` (got {name!r})")
    description = fields.get("description")
    if not isinstance(description, str) or not description.strip():
        raise DefinitionError("it has no `description` (the model needs one to choose it)")
    if not body.strip():
        raise DefinitionError("it has no system prompt (the body after the frontmatter)")
    tools = _tool_list(fields.get("tools"), "tools", notes)
    disallowed = _tool_list(fields.get("disallowedTools"), "disallowedTools", notes)
    mode, never_asks = _mode(fields.get("permissionMode"), notes)
    for key in sorted(set(fields) - KNOWN_FIELDS - IGNORED_QUIETLY):
        why = "not supported" if key in NOT_SUPPORTED else "not a field agentcli knows"
        notes.append(f"`{key}` left out: {why}")
    return AgentDefinition(
        name=name,
        description=" ".join(description.split())[:MAX_DESCRIPTION],
        prompt=body.strip(),
        source=source,
        tools=tools,
        disallowed=disallowed or (),
        model=_model(fields.get("model"), notes),
        mode=mode,
        never_asks=never_asks,
        max_turns=_max_turns(fields.get("maxTurns"), notes),
        notes=tuple(notes),
    )


KNOWN_FIELDS = frozenset(
    {"name", "description", "tools", "disallowedTools", "model", "permissionMode", "maxTurns"}
)


def _split(text: str) -> tuple[dict[str, Any], str]:
    lines = text.lstrip("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise DefinitionError("it does not start with `---` frontmatter")
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise DefinitionError("its frontmatter has no closing `---`")
    import yaml  # only where a definition is read: ~20 ms at start-up otherwise

    try:
        fields = yaml.safe_load("".join(lines[1:end]))
    except yaml.YAMLError as exc:
        raise DefinitionError(f"its frontmatter is not YAML: {_first_line(exc)}") from exc
    if not isinstance(fields, dict):
        raise DefinitionError("its frontmatter is not a mapping of fields")
    return {str(key): value for key, value in fields.items()}, "".join(lines[end + 1 :])


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def tool_name(given: str) -> str | None:
    """agentcli's name of a tool named `given` in a definition; None when it is no tool agentcli
    has a name for (MCP tools are taken as written: the session decides if it has them)."""
    if given.startswith("mcp__"):
        return given
    lower = given.lower()
    if lower in CLAUDE_CODE_TOOLS:
        return CLAUDE_CODE_TOOLS[lower]
    if lower in ("read_file", "write_file", "edit_file", "shell"):
        return lower
    return None


def _tool_list(value: object, key: str, notes: list[str]) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        items = [part.strip() for part in value.split(",")]
    elif isinstance(value, list) and all(isinstance(item, str) for item in value):
        items = [item.strip() for item in value]
    else:
        notes.append(f"`{key}` left out: not a list of tool names")
        # An allow-list that cannot be read allows nothing; a deny-list, everything it may.
        return () if key == "tools" else None
    names: list[str] = []
    for item in filter(None, items):
        if "(" in item:
            notes.append(f"`{key}`: {item} left out (a tool restricted by its arguments)")
            continue
        name = tool_name(item)
        if name is None:
            notes.append(f"`{key}`: {item} left out (agentcli has no such tool)")
        elif name not in names:
            names.append(name)
    return tuple(names)


def _mode(value: object, notes: list[str]) -> tuple[PermissionMode | None, bool]:
    if value is None:
        return None, False
    key = str(value).strip().lower()
    if key == DONT_ASK:
        return None, True
    if key in MODES:
        return MODES[key], False
    notes.append(f"`permissionMode: {value}` left out: not a permission mode")
    return None, False


def _model(value: object, notes: list[str]) -> str | None:
    if value is None or (isinstance(value, str) and value.strip().lower() == "inherit"):
        return None
    if isinstance(value, str) and value.strip():
        return value.strip()
    notes.append(f"`model: {value!r}` left out: not a model name")
    return None


def _max_turns(value: object, notes: list[str]) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    notes.append(f"`maxTurns: {value!r}` left out: not a positive whole number")
    return None


SUBAGENT_NOTE = (
    "You are running as the `{name}` subagent: another agent delegated one self-contained job "
    "to you, and only your final reply reaches it (it sees none of your tool calls or their "
    "output). Make that reply complete: what you found or did, with file paths and line "
    "numbers, what you verified, and what you could not do."
)

GENERAL = AgentDefinition(
    name="general",
    description=(
        "General-purpose agent for a self-contained, multi-step job: research a question "
        "across the codebase, or make and verify a change in one area. It has all of your "
        "tools and permissions."
    ),
    prompt=(
        "You are a subagent of agentcli, a coding agent working in the user's repository "
        "through tools.\n\n"
        "How to work:\n"
        "- Understand before changing: find the relevant code with grep/glob and read it.\n"
        "- Make the smallest change that does the job; read a file before you edit it.\n"
        "- Verify what you changed with the command that shows it works.\n"
        "- If a call fails or is denied, change your approach; do not repeat it.\n"
        "- When you are done, reply without tool calls."
    ),
    source="built-in",
)

EXPLORE = AgentDefinition(
    name="explore",
    description=(
        "Fast read-only explorer: finds files, code and facts in the codebase and reports "
        "them with paths and line numbers. It cannot change anything. Say how thorough to be."
    ),
    prompt=(
        "You are a read-only explorer, a subagent of agentcli: find what you were asked for "
        "in the user's repository and report it. You cannot change files.\n\n"
        "Search with grep and glob, read with read_file (only the parts you need), and run "
        "only read-only commands. Start broad, then narrow down; stop as soon as you can "
        "answer. Report what you found (file paths with line numbers, the relevant code or "
        "facts) and say plainly what you could not find."
    ),
    source="built-in",
    tools=("read_file", "glob", "grep", "shell"),
    mode=PermissionMode.READ_ONLY,
)

BUILT_IN = (GENERAL, EXPLORE)
ALIASES = {"general-purpose": "general"}
"""Claude Code's names of the built-in types."""
