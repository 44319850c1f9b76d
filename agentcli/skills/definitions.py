"""One skill or command, as read from its file: a typed record of what it is called, where it
came from, what it says about itself and what it may be granted.

A skill's name is its directory's; its SKILL.md should follow the agentskills.io spec (`name`
≤ 64 characters of `[a-z0-9-]`, no leading, trailing or doubled hyphen, matching the
directory; `description` ≤ 1,024 characters; `compatibility` ≤ 500). A command's name is its
path under `commands/` without `.md`, folders joined by `:`. What breaks the format is kept in
`problems` (`skills lint` reports them; a session says how many files have some). The body is
read again when the definition is used, so an edit takes effect without a restart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from agentcli.skills.frontmatter import Frontmatter, parse
from agentcli.skills.grants import grants
from agentcli.skills.reading import read_text
from agentcli.skills.sources import Kind, Scope, Source
from agentcli.skills.substitute import MIXED_NOTICE, mixes_zero_and_one

NAME_PART = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
NAME = re.compile(rf"{NAME_PART}(?::{NAME_PART})*")
"""What `/name` may be: words of letters, digits, `_`, `.` and `-`; `:` between namespaces."""
SPEC_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
MAX_LISTED_DESCRIPTION = 1536
"""A listed description (with `when_to_use`) is cut here, as Claude Code cuts it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Definition:
    name: str
    """What follows the `/`: `review`, `git:commit`."""
    kind: Kind
    source: Source
    path: Path
    """The file, as found in its source (a link is not resolved)."""
    front: Frontmatter
    description: str
    grants: tuple[str, ...]
    """The permission rules its `allowed-tools` grant for a task (empty when they may not)."""
    grants_withheld: str | None = None
    """Why its `allowed-tools` grant nothing (a project file in an untrusted workspace)."""
    problems: tuple[str, ...] = ()

    @property
    def directory(self) -> Path:
        """A skill's directory (its scripts/, references/, assets/), a command's folder."""
        return self.path.parent

    @property
    def user_invocable(self) -> bool:
        return self.front.user_invocable

    @property
    def model_invocable(self) -> bool:
        """Offered to the model (listed, and its `skill` tool): skills and commands unless
        `disable-model-invocation`; never a Codex prompt (Codex offers them to the user
        only)."""
        return self.kind is not Kind.PROMPT and not self.front.disable_model_invocation

    @property
    def listed_description(self) -> str:
        text = self.description
        if self.front.when_to_use:
            text = f"{text} {self.front.when_to_use}"
        if len(text) > MAX_LISTED_DESCRIPTION:
            text = text[: MAX_LISTED_DESCRIPTION - 1] + "…"
        return text


def load(path: Path, name: str, source: Source, roots: list[str], *, trusted: bool) -> Definition:
    """The definition in `path` (Unreadable, BrokenFrontmatter: it is skipped). `trusted`:
    the workspace is trusted, so a project file's `allowed-tools` may grant rules."""
    front, body = parse(read_text(path, roots))
    problems = list(front.problems)
    rules, rule_problems = grants(front.allowed_tools)
    problems.extend(rule_problems)
    withheld = None
    if rules and source.scope is Scope.PROJECT and not trusted:
        withheld = (
            "the workspace is not trusted, so a file of the repository grants no permissions "
            "(`agentcli trust` lets it)"
        )
        rules = ()
    if source.kind is Kind.SKILL:
        problems.extend(skill_problems(front, path.parent.name))
    if mixes_zero_and_one(body):
        problems.append(MIXED_NOTICE)
    return Definition(
        name=name,
        kind=source.kind,
        source=source,
        path=path,
        front=front,
        description=describe(front, body),
        grants=rules,
        grants_withheld=withheld,
        problems=tuple(problems),
    )


def describe(front: Frontmatter, body: str) -> str:
    """The frontmatter's description, else the body's first line that has words."""
    if front.description and front.description.strip():
        return " ".join(front.description.split())
    for line in body.splitlines():
        words = line.strip().lstrip("#").strip()
        if words:
            return words[:MAX_DESCRIPTION]
    return ""


def skill_problems(front: Frontmatter, directory: str) -> list[str]:
    """Where a SKILL.md breaks the agentskills.io spec."""
    if not front.present:
        return ["a SKILL.md needs frontmatter with `name` and `description`"]
    found: list[str] = []
    name = front.name
    if name is None:
        found.append("`name` is missing")
    else:
        if len(name) > MAX_NAME:
            found.append(f"`name` is over {MAX_NAME} characters ({len(name)})")
        if not SPEC_NAME.fullmatch(name):
            found.append(
                f"`name: {name}` is not lowercase letters, digits and single hyphens "
                "(no hyphen first or last)"
            )
        if name != directory:
            found.append(f"`name: {name}` does not match its directory {directory!r}")
    description = front.description
    if description is None or not description.strip():
        found.append("`description` is missing")
    elif len(description) > MAX_DESCRIPTION:
        found.append(f"`description` is over {MAX_DESCRIPTION} characters ({len(description)})")
    compatibility = front.compatibility
    if compatibility is not None and not 1 <= len(compatibility) <= MAX_COMPATIBILITY:
        found.append(f"`compatibility` is not 1 to {MAX_COMPATIBILITY} characters")
    return found
