"""Where subagent definitions come from, and which one a name means.

Highest first: the workspace's `.agentcli/agents/*.md`, its `.claude/agents/*.md` (read as
Claude Code writes them), the user's `agents/*.md` next to agentcli's `config.toml`, the user's
`~/.claude/agents/*.md`, then the built-in `general` and `explore`. A name defined at several
levels is the highest level's. Each file is read once, when the session starts, through
`agentcli.safe_read`: a regular file of at most 1 MiB; a workspace's file must lie, links
resolved, inside the workspace (a repository's definition can only narrow what its subagent may
do, so it needs no trust, as `AGENTS.md` needs none). A file that cannot be read or is no
definition is left out with a notice naming it and why.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentcli.agents.definitions import (
    ALIASES,
    BUILT_IN,
    AgentDefinition,
    DefinitionError,
    parse_definition,
)
from agentcli.paths import user_config_path
from agentcli.safe_read import MAX_CONFIG_BYTES, Inside, Unreadable, read_bytes

MAX_FILES = 200
"""Definition files read from one directory (the rest are named in one notice)."""


@dataclass(frozen=True, slots=True)
class Source:
    """A directory of definitions."""

    directory: Path
    inside: Inside | None
    """Where its files must lie (None: the user's own files, links anywhere they put them)."""
    shown: str
    """How the user is told about it (`.claude/agents`, `~/.claude/agents`)."""


def sources(workspace: Path, home: Path | None = None) -> list[Source]:
    """The directories definitions are read from, highest precedence first."""
    home = home or Path.home()
    inside = Inside.of(workspace)
    user_dir = user_config_path().parent / "agents"
    return [
        Source(workspace / ".agentcli" / "agents", inside, ".agentcli/agents"),
        Source(workspace / ".claude" / "agents", inside, ".claude/agents"),
        Source(user_dir, None, str(user_dir)),
        Source(home / ".claude" / "agents", None, "~/.claude/agents"),
    ]


@dataclass(frozen=True, slots=True)
class AgentCatalog:
    """The subagent types of a session, and what was left out when they were read."""

    definitions: tuple[AgentDefinition, ...] = BUILT_IN
    notices: tuple[str, ...] = ()
    _by_name: dict[str, AgentDefinition] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        self._by_name.update({d.name: d for d in self.definitions})

    def get(self, name: str) -> AgentDefinition | None:
        """The definition `name` means (any case; Claude Code's `general-purpose` too)."""
        key = name.strip().lower()
        return self._by_name.get(ALIASES.get(key, key))

    @property
    def names(self) -> list[str]:
        return [d.name for d in self.definitions]


def discover(workspace: Path, home: Path | None = None) -> AgentCatalog:
    """Every definition the session can use (see the module docstring)."""
    found: dict[str, AgentDefinition] = {}
    notices: list[str] = []
    for source in sources(workspace, home):
        for definition in _read_dir(source, notices):
            if definition.name in found:
                notices.append(
                    f"agent {definition.name} from {definition.source} is not used: "
                    f"{found[definition.name].source} defines it too"
                )
                continue
            found[definition.name] = definition
            notices.extend(
                f"agent {definition.name} ({definition.source}): {note}"
                for note in definition.notes
            )
    for builtin in BUILT_IN:
        found.setdefault(builtin.name, builtin)
    ordered = sorted(found.values(), key=lambda d: (d.source != "built-in", d.name))
    return AgentCatalog(definitions=tuple(ordered), notices=tuple(notices))


def _read_dir(source: Source, notices: list[str]) -> Iterable[AgentDefinition]:
    if not source.directory.is_dir():
        return []
    try:
        names = sorted(p.name for p in source.directory.iterdir() if p.name.endswith(".md"))
    except OSError as exc:
        notices.append(f"agent definitions in {source.shown} not read: {exc.strerror or exc}")
        return []
    if len(names) > MAX_FILES:
        notices.append(
            f"{source.shown}: only the first {MAX_FILES} of {len(names)} definitions are read"
        )
    return [d for d in (_read_one(source, n, notices) for n in names[:MAX_FILES]) if d]


def _read_one(source: Source, name: str, notices: list[str]) -> AgentDefinition | None:
    path = source.directory / name
    shown = f"{source.shown}/{name}"
    try:
        data = read_bytes(path, inside=source.inside, limit=MAX_CONFIG_BYTES)
    except IsADirectoryError:
        return None
    except Unreadable as exc:
        notices.append(f"agent definition {shown} skipped: {exc.why}")
        return None
    except OSError as exc:
        notices.append(f"agent definition {shown} skipped: {exc.strerror or exc}")
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        notices.append(f"agent definition {shown} skipped: it is not UTF-8 text")
        return None
    try:
        return parse_definition(text, shown)
    except DefinitionError as exc:
        notices.append(f"agent definition {shown} skipped: {exc}")
        return None


def described(definitions: Sequence[AgentDefinition]) -> str:
    """The types as the model reads them in the `agent` tool's description."""
    return "\n".join(f"- {d.name}: {d.description}" for d in definitions)
