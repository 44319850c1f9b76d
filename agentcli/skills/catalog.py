"""Finding every skill and command (`sources` says where, and which wins), once per session.

Each definition found is listed with its state: active, or hidden by the file of the same name
that comes first in the precedence table. A file that cannot be used (not a regular file, a
link leading outside the workspace and the config directories, over 256 KB, not UTF-8, broken
frontmatter, a name that cannot follow a `/`) is skipped with a notice naming it: nothing here
ever stops a session from starting.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from agentcli.skills.definitions import NAME, Definition, load
from agentcli.skills.frontmatter import BrokenFrontmatter
from agentcli.skills.reading import Unreadable, real_roots
from agentcli.skills.sources import Kind, Source, allowed_roots, shown_path, sources
from agentcli.skills.substitute import MIXED_NOTICE

SKILL_FILE = "SKILL.md"
MAX_FILES_PER_SOURCE = 1000
MAX_DEPTH = 8
"""How deep `commands/` folders are read (namespaces nest; a link loop must end)."""
PROMPTS_NAMESPACE = "prompts:"
"""Codex invokes its prompts as `/prompts:NAME` too."""


@dataclass(frozen=True, slots=True)
class Listed:
    """A definition and whether it is the one its name runs."""

    definition: Definition
    hidden_by: Path | None = None
    """The file of the same name that wins (None: this one is active)."""

    @property
    def active(self) -> bool:
        return self.hidden_by is None


@dataclass(frozen=True, slots=True)
class Skipped:
    path: Path
    reason: str


@dataclass(frozen=True, slots=True)
class Catalog:
    """What a session found."""

    workspace: Path
    listed: tuple[Listed, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    truncated: tuple[Path, ...] = field(default=())
    """Sources with more files than are read."""

    @classmethod
    def empty(cls, workspace: Path) -> Catalog:
        return cls(workspace)

    def active(self) -> list[Definition]:
        return [entry.definition for entry in self.listed if entry.active]

    def find(self, name: str) -> Definition | None:
        """The active definition `/name` runs (a Codex prompt also as `/prompts:NAME`)."""
        for definition in self.active():
            if definition.name == name:
                return definition
        if name.startswith(PROMPTS_NAMESPACE):
            found = self.find(name.removeprefix(PROMPTS_NAMESPACE))
            if found is not None and found.kind is Kind.PROMPT:
                return found
        return None

    def user_commands(self) -> list[Definition]:
        """What `/name` may run, by name."""
        return sorted(
            (d for d in self.active() if d.user_invocable), key=lambda definition: definition.name
        )

    def model_skills(self) -> list[Definition]:
        """What the model is offered, in precedence order."""
        return [d for d in self.active() if d.model_invocable]

    def shown(self, path: Path) -> str:
        return shown_path(path, self.workspace)

    def notices(self) -> list[str]:
        """What the user hears once when the session starts."""
        said = [f"skipped {self.shown(s.path)}: {s.reason}" for s in self.skipped]
        said += [
            f"read only the first {MAX_FILES_PER_SOURCE} files of {self.shown(path)}"
            for path in self.truncated
        ]
        definitions = [entry.definition for entry in self.listed]
        said += [
            f"/{d.name} ({self.shown(d.path)}) {MIXED_NOTICE}"
            for d in definitions
            if MIXED_NOTICE in d.problems
        ]
        ignored = Counter(key for d in definitions for key in (*d.front.unknown, *d.front.unused))
        if ignored:
            keys = ", ".join(
                f"{key} ({count} file{'' if count == 1 else 's'})" for key, count in ignored.items()
            )
            said.append(f"frontmatter keys agentcli does not use were ignored: {keys}")
        withheld = [d for d in definitions if d.grants_withheld]
        if withheld:
            names = ", ".join(f"/{d.name}" for d in withheld[:5])
            more = f" and {len(withheld) - 5} more" if len(withheld) > 5 else ""
            said.append(
                f"the allowed-tools of {names}{more} grant nothing: this workspace is not "
                "trusted (`agentcli trust` lets its files grant permissions)"
            )
        broken = [d for d in definitions if d.problems]
        if broken:
            files = "file does" if len(broken) == 1 else "files do"
            said.append(
                f"{len(broken)} skill or command {files} not follow the format: "
                "`agentcli skills lint` names the problems"
            )
        return said


def discover(workspace: Path, *, trusted: bool) -> Catalog:
    """Every skill and command for a session in `workspace` (`trusted`: the workspace's own
    files may grant permissions through `allowed-tools`)."""
    roots = real_roots(allowed_roots(workspace))
    winners: dict[str, Definition] = {}
    listed: list[Listed] = []
    skipped: list[Skipped] = []
    truncated: list[Path] = []
    for path, name, source in definition_files(workspace, skipped, truncated):
        try:
            definition = load(path, name, source, roots, trusted=trusted)
        except (Unreadable, BrokenFrontmatter) as exc:
            skipped.append(Skipped(path, exc.reason))
            continue
        winner = winners.setdefault(name, definition)
        listed.append(Listed(definition, None if winner is definition else winner.path))
    return Catalog(workspace, tuple(listed), tuple(skipped), tuple(truncated))


def definition_files(
    workspace: Path, skipped: list[Skipped], truncated: list[Path] | None = None
) -> Iterator[tuple[Path, str, Source]]:
    """Every definition file of every source, highest precedence first, with the name it
    defines (a file whose name cannot follow a `/` is added to `skipped` instead)."""
    for source in sources(workspace):
        for count, (path, name) in enumerate(_files(source, skipped)):
            if count >= MAX_FILES_PER_SOURCE:
                if truncated is not None:
                    truncated.append(source.directory)
                break
            yield path, name, source


def _files(source: Source, skipped: list[Skipped]) -> Iterator[tuple[Path, str]]:
    """The definition files of one source, with the names they define, in a stable order."""
    if not source.directory.is_dir():
        return
    if source.kind is Kind.SKILL:
        for entry in _entries(source.directory):
            if entry.is_dir() and (Path(entry.path) / SKILL_FILE).exists():
                yield from _named(Path(entry.path) / SKILL_FILE, entry.name, skipped)
    elif source.kind is Kind.PROMPT:
        for entry in _entries(source.directory):
            if entry.name.endswith(".md") and not entry.is_dir():
                yield from _named(Path(entry.path), entry.name[:-3], skipped)
    else:
        yield from _commands(source.directory, (), skipped, set())


def _commands(
    directory: Path, namespace: tuple[str, ...], skipped: list[Skipped], seen: set[str]
) -> Iterator[tuple[Path, str]]:
    real = os.path.realpath(directory)
    if real in seen or len(namespace) > MAX_DEPTH:
        return  # a link loop, or nested deeper than any namespace is
    seen.add(real)
    for entry in _entries(directory):
        if entry.is_dir():
            yield from _commands(Path(entry.path), (*namespace, entry.name), skipped, seen)
        elif entry.name.endswith(".md"):
            name = ":".join((*namespace, entry.name[:-3]))
            yield from _named(Path(entry.path), name, skipped)


def _named(path: Path, name: str, skipped: list[Skipped]) -> Iterator[tuple[Path, str]]:
    if NAME.fullmatch(name):
        yield path, name
    else:
        skipped.append(
            Skipped(path, f"/{name} is not a command name (letters, digits, `_`, `.`, `-`)")
        )


def _entries(directory: Path) -> list[os.DirEntry[str]]:
    """The directory's entries by name, without hidden ones (an unreadable one: none)."""
    try:
        with os.scandir(directory) as found:
            return sorted((e for e in found if not e.name.startswith(".")), key=lambda e: e.name)
    except OSError:
        return []
