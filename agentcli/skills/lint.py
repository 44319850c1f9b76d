"""`agentcli skills lint [PATH]`: every problem of skill and command files, one line each.

Without PATH it checks every file a session in the workspace would read (`sources`), hidden
ones too; with PATH, that file, that skill directory, or every SKILL.md and command file under
that directory (a skill's own references are not commands). A SKILL.md is held to the
agentskills.io spec (`name`, `description`, `compatibility` limits, `metadata` of strings, the
name matching its directory) and to the command format (the types of `argument-hint`,
`model`, `effort`, `disable-model-invocation`, `user-invocable`, `allowed-tools` entries that
are rules); every file to readability (a regular UTF-8 file of at most 256 KB, not linking
outside), YAML frontmatter, keys no tool defines, and `$0` used with `$1`. `strict` also
refuses a SKILL.md key outside the spec (what claude.ai's upload and skills-ref refuse).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from agentcli.skills.catalog import SKILL_FILE, Skipped, definition_files
from agentcli.skills.definitions import load
from agentcli.skills.frontmatter import SPEC_KEYS, BrokenFrontmatter, normalized
from agentcli.skills.reading import Unreadable, real_roots
from agentcli.skills.sources import Kind, Scope, Source, allowed_roots, shown_path


@dataclass(frozen=True, slots=True)
class Report:
    checked: int
    problems: tuple[str, ...]
    """`PATH: problem`, one per line of output."""


def lint(workspace: Path, path: Path | None = None, *, strict: bool = False) -> Report:
    roots = allowed_roots(workspace)
    if path is None:
        skipped: list[Skipped] = []
        files = [(file, source) for file, _name, source in definition_files(workspace, skipped)]
        problems = [f"{shown_path(s.path, workspace)}: {s.reason}" for s in skipped]
    else:
        path = path.expanduser().absolute()
        if not path.exists():
            return Report(0, (f"{path}: no such file or directory",))
        roots = [*roots, path if path.is_dir() else path.parent]
        files = list(_given(path))
        problems = []
    real = real_roots(roots)
    for file, source in files:
        shown = shown_path(file, workspace)
        problems.extend(f"{shown}: {problem}" for problem in _problems(file, source, real, strict))
    return Report(len(files), tuple(problems))


def _problems(file: Path, source: Source, roots: list[str], strict: bool) -> list[str]:
    try:
        definition = load(file, file.stem, source, roots, trusted=True)
    except (Unreadable, BrokenFrontmatter) as exc:
        return [exc.reason]
    front = definition.front
    found = list(definition.problems)
    found += [f"unknown frontmatter key `{key}`" for key in front.unknown]
    if strict and source.kind is Kind.SKILL:
        found += [
            f"`{key}` is not in the agentskills.io spec (claude.ai and skills-ref refuse it)"
            for key in front.keys
            if normalized(key) not in SPEC_KEYS
        ]
    return found


def _given(path: Path) -> Iterator[tuple[Path, Source]]:
    """The files under a PATH given on the command line, each with the kind it is read as."""
    if path.is_file():
        yield path, _source_of(path)
        return
    if (path / SKILL_FILE).is_file():
        yield path / SKILL_FILE, _source_of(path / SKILL_FILE)
        return
    skills = {p.parent for p in path.rglob(SKILL_FILE) if p.is_file()}
    for file in sorted(path.rglob("*.md")):
        hidden = any(part.startswith(".") for part in file.relative_to(path).parts)
        if hidden or not file.is_file():
            continue
        if file.name == SKILL_FILE and file.parent in skills:
            yield file, _source_of(file)
        elif not any(file.is_relative_to(skill) for skill in skills):
            yield file, _source_of(file)


def _source_of(file: Path) -> Source:
    if file.name == SKILL_FILE:
        kind = Kind.SKILL
    elif file.parent.name == "prompts":
        kind = Kind.PROMPT
    else:
        kind = Kind.COMMAND
    return Source(file.parent, kind, Scope.USER, 0)
