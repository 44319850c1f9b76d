"""From `/name args` to what is sent: the definition's body read again, its arguments and
placeholders in place, wrapped for the model.

A skill's text is wrapped in `<skill name="…" directory="…">` with the files beside its
SKILL.md named (the model reads its references and scripts on demand), so the model knows where
they are and a compaction can find and re-send it (`pinned`); a command's text is sent as it is,
as its author wrote it to be read.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path

from agentcli.errors import UsageError
from agentcli.skills.catalog import Catalog
from agentcli.skills.definitions import NAME_PART, Definition
from agentcli.skills.frontmatter import BrokenFrontmatter, parse
from agentcli.skills.reading import Unreadable, read_text, real_roots
from agentcli.skills.sources import Kind, allowed_roots
from agentcli.skills.substitute import Arguments, Piece, ShellLine, Text, substituted

LINE = re.compile(rf"^/({NAME_PART}(?::{NAME_PART})*)(?:\s+(.*))?$", re.DOTALL)
MAX_LISTED_FILES = 50
SKILL_OPEN = re.compile(r'^<skill name="([^"]+)"', re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Invocation:
    """A definition asked for, with its arguments as typed."""

    definition: Definition
    arguments: str = ""

    @property
    def line(self) -> str:
        return f"/{self.definition.name} {self.arguments}".rstrip()


def command_name(line: str) -> tuple[str, str] | None:
    """`("git:commit", "fix the typo")` for `/git:commit fix the typo`; None when the line
    does not start with a command name (`/etc/hosts is wrong`, ` /review` do not)."""
    match = LINE.match(line.rstrip())
    if match is None:
        return None
    return match.group(1), (match.group(2) or "").strip()


def invocation(catalog: Catalog, line: str) -> Invocation | None:
    """What `line` runs, or None when it names no active, user-invocable definition."""
    parsed = command_name(line)
    if parsed is None:
        return None
    definition = catalog.find(parsed[0])
    if definition is None or not definition.user_invocable:
        return None
    return Invocation(definition, parsed[1])


def task_invocation(catalog: Catalog, line: str) -> Invocation | None:
    """What a task given on the command line runs: its command, or None (the text goes to the
    model as it is). A name close to a command's is a UsageError (most likely a typo, and a
    task sent by mistake costs a model call)."""
    found = invocation(catalog, line)
    parsed = command_name(line)
    if found is not None or parsed is None:
        return found
    names = [definition.name for definition in catalog.user_commands()]
    close = difflib.get_close_matches(parsed[0], names, n=1, cutoff=0.75)
    if not close:
        return None
    raise UsageError(
        f"no command /{parsed[0]}; did you mean /{close[0]}?",
        hint="to send the text to the model as it is, start it with a space",
    )


def body_of(definition: Definition, workspace: Path) -> str:
    """The definition's body as the file says now (UsageError when it cannot be read)."""
    try:
        _front, body = parse(read_text(definition.path, real_roots(allowed_roots(workspace))))
    except (Unreadable, BrokenFrontmatter) as exc:
        raise UsageError(
            f"/{definition.name}: cannot read {definition.path}: {exc.reason}"
        ) from exc
    return body


def expanded_pieces(invocation: Invocation, workspace: Path) -> list[Piece]:
    definition = invocation.definition
    return substituted(
        body_of(definition, workspace),
        Arguments.parse(invocation.arguments),
        definition.directory,
        dollars=definition.kind is Kind.PROMPT,
    )


def wrapped(definition: Definition, text: str, *, loaded: bool = False) -> str:
    """The text the model gets for `definition`: a skill wrapped with where its files are; a
    command as it is, unless the model `loaded` it with the `skill` tool (then wrapped, without
    a directory: its folder holds other commands, not files of its own)."""
    if definition.kind is not Kind.SKILL:
        if not loaded:
            return text
        return f'<skill name="{definition.name}">\n{text.strip()}\n</skill>'
    files = supporting_files(definition.directory)
    listed = ""
    if files:
        listed = (
            "\n\nFiles of this skill, relative to its directory (read them with read_file "
            "when the instructions call for them): " + ", ".join(files)
        )
    return (
        f'<skill name="{definition.name}" directory="{definition.directory}">\n'
        f"{text.strip()}{listed}\n</skill>"
    )


def supporting_files(directory: Path) -> list[str]:
    """The files beside a SKILL.md (scripts/, references/, assets/, …), by relative path."""
    found: list[str] = []
    try:
        walk = sorted(directory.rglob("*"))
    except OSError:
        return found
    for path in walk:
        relative = path.relative_to(directory)
        if relative.name == "SKILL.md" and len(relative.parts) == 1:
            continue
        if any(part.startswith(".") for part in relative.parts) or not path.is_file():
            continue
        found.append(str(relative))
        if len(found) >= MAX_LISTED_FILES:
            found.append("…")
            break
    return found


def joined(pieces: list[Piece], outputs: dict[int, str]) -> str:
    """The pieces as one text, each shell line replaced by `outputs[index]`."""
    parts: list[str] = []
    for index, piece in enumerate(pieces):
        if isinstance(piece, Text):
            parts.append(piece.text)
        else:
            parts.append(outputs.get(index, ""))
    return "".join(parts)


def for_the_model(pieces: list[Piece]) -> str:
    """The pieces with each shell line left for the model to run (the `skill` tool runs
    nothing itself: the model's own shell calls go through the permission policy)."""
    outputs = {
        index: f"(the output of `{piece.command}`: run it with the shell tool)"
        for index, piece in enumerate(pieces)
        if isinstance(piece, ShellLine)
    }
    return joined(pieces, outputs)
