"""Where skills and custom commands come from, in one precedence table (high → low):

| rank | where | what |
|---|---|---|
| 1 | `.agentcli/skills/<name>/SKILL.md` | project skills (agentcli's own) |
| 2 | `.agentcli/commands/**/*.md` | project commands |
| 3 | `.agents/skills/<name>/SKILL.md` | project skills (the agentskills.io location) |
| 4 | `.claude/skills/<name>/SKILL.md` | project skills (Claude Code) |
| 5 | `.claude/commands/**/*.md` | project commands (Claude Code) |
| 6 | `~/.config/agentcli/skills/<name>/SKILL.md` | your skills (agentcli's config directory) |
| 7 | `~/.config/agentcli/commands/**/*.md` | your commands |
| 8 | `~/.agents/skills/<name>/SKILL.md` | your skills (agentskills.io) |
| 9 | `~/.claude/skills/<name>/SKILL.md` | your skills (Claude Code; `$CLAUDE_CONFIG_DIR`) |
| 10 | `~/.claude/commands/**/*.md` | your commands (Claude Code) |
| 11 | `~/.codex/prompts/*.md` | your Codex prompts (`$CODEX_HOME`) |

The project rows are looked for in the workspace and then in each directory above it up to the
repository's root (the nearer directory first, row by row), as AGENTS.md files are. A name
defined twice is the higher row's; within a level a skill comes before a command, so a skill
and a command of the same name give the skill. A subfolder of `commands/` names a namespace:
`commands/git/commit.md` is `/git:commit`.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from pathlib import Path

from agentcli.instructions import find_git_root
from agentcli.paths import user_config_path


class Kind(enum.StrEnum):
    SKILL = "skill"
    """A directory with a SKILL.md (agentskills.io); its name is the directory's."""
    COMMAND = "command"
    """A Markdown file under a `commands/` directory (Claude Code's format)."""
    PROMPT = "prompt"
    """A Markdown file in Codex's prompts directory (user-invoked only, as in Codex)."""


class Scope(enum.StrEnum):
    PROJECT = "project"
    USER = "user"


@dataclass(frozen=True, slots=True)
class Source:
    """One place definitions are read from."""

    directory: Path
    kind: Kind
    scope: Scope
    rank: int
    """Its row in the precedence table (1 is the highest)."""


_PROJECT_ROWS: tuple[tuple[str, Kind], ...] = (
    (".agentcli/skills", Kind.SKILL),
    (".agentcli/commands", Kind.COMMAND),
    (".agents/skills", Kind.SKILL),
    (".claude/skills", Kind.SKILL),
    (".claude/commands", Kind.COMMAND),
)


def claude_home() -> Path:
    """Claude Code's user directory: `$CLAUDE_CONFIG_DIR`, else `~/.claude`."""
    override = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(override).expanduser() if override else Path.home() / ".claude"


def codex_home() -> Path:
    """Codex's user directory: `$CODEX_HOME`, else `~/.codex`."""
    override = os.environ.get("CODEX_HOME")
    return Path(override).expanduser() if override else Path.home() / ".codex"


def agents_home() -> Path:
    """The agentskills.io user directory, `~/.agents`."""
    return Path.home() / ".agents"


def agentcli_config_dir() -> Path:
    return user_config_path().parent


def project_dirs(workspace: Path) -> list[Path]:
    """The workspace, then each directory above it up to the repository root."""
    root = find_git_root(workspace)
    if root is None or root not in (workspace, *workspace.parents):
        return [workspace]
    chain = [workspace, *workspace.parents]
    return chain[: chain.index(root) + 1]


def sources(workspace: Path) -> list[Source]:
    """Every place to read, highest precedence first."""
    found: list[Source] = []
    for rank, (relative, kind) in enumerate(_PROJECT_ROWS, start=1):
        for directory in project_dirs(workspace):
            found.append(Source(directory / relative, kind, Scope.PROJECT, rank))
    config, agents, claude = agentcli_config_dir(), agents_home(), claude_home()
    user_rows = (
        (config / "skills", Kind.SKILL),
        (config / "commands", Kind.COMMAND),
        (agents / "skills", Kind.SKILL),
        (claude / "skills", Kind.SKILL),
        (claude / "commands", Kind.COMMAND),
        (codex_home() / "prompts", Kind.PROMPT),
    )
    first = len(_PROJECT_ROWS) + 1
    for rank, (directory, kind) in enumerate(user_rows, start=first):
        found.append(Source(directory, kind, Scope.USER, rank))
    return found


def allowed_roots(workspace: Path) -> list[Path]:
    """Where a definition file (or what a link in those places points to) may be read: the
    project's directories and the user's config directories."""
    project = project_dirs(workspace)[-1]
    return [project, agentcli_config_dir(), agents_home(), claude_home(), codex_home()]


def shown_path(path: Path, workspace: Path) -> str:
    """`path` as the user reads it: relative to the workspace, `~/…` under the home
    directory, else absolute."""
    if path.is_relative_to(workspace):
        return str(path.relative_to(workspace))
    home = Path.home()
    if path.is_relative_to(home):
        return "~/" + str(path.relative_to(home))
    return str(path)
