"""The system prompt: tool semantics and task policy, plus the instruction files: the user's own
`AGENTS.md` (next to their config.toml), then from the repository root down to the workspace
each directory's `AGENTS.md`, or its `CLAUDE.md` where it has no AGENTS.md.

Kept lean on purpose (it is billed on every turn, though cached): control flow lives in code,
so the prompt only says how to work and what the tools mean.
"""

from __future__ import annotations

import datetime
import platform
from pathlib import Path

from agentcli.fsnames import for_model
from agentcli.paths import user_config_path
from agentcli.truncation import keep_ends

AGENTS_FILE = "AGENTS.md"
FALLBACK_FILE = "CLAUDE.md"
"""Read in a directory that has no AGENTS.md (the convention of repositories set up for Claude
Code)."""
MAX_INSTRUCTION_CHARS = 32_000

BASE_PROMPT = """\
You are agentcli, a coding agent working in the user's repository through tools.

How to work:
- Understand before changing: find the relevant code with grep/glob and read it with read_file.
- Make the smallest change that solves the task. Read a file before you edit or overwrite it.
- Verify your work by running the project's tests or the command that shows the problem.
- If a tool call fails, read the error and change your approach; do not repeat a failing call.
- If permission for a call is denied, do not retry it; continue without it or explain what you
  need from the user.
- When you are done, reply without tool calls: say briefly what you changed and what you
  verified. Say plainly what you could not do or did not verify. Never claim a check passed
  unless you ran it and saw it pass.

agentcli runs the task's acceptance checks itself after you finish; if one fails you will be
shown the evidence and asked to continue. Your own statement that the work is done is not
evidence."""


def find_git_root(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


def instruction_files(workspace: Path) -> list[Path]:
    """The instruction files given to the model, most general first: the user's AGENTS.md, then
    one per directory from the repository root (or the workspace) down to the workspace."""
    root = find_git_root(workspace) or workspace
    chain = [workspace, *workspace.parents]
    directories = list(reversed(chain[: chain.index(root) + 1])) if root in chain else [workspace]
    found = [user_config_path().parent / AGENTS_FILE]
    for directory in directories:
        agents = directory / AGENTS_FILE
        found.append(agents if agents.is_file() else directory / FALLBACK_FILE)
    return [path for path in found if path.is_file()]


def project_instructions(workspace: Path, files: list[Path] | None = None) -> str:
    """The instruction files' text (`files`, default: `instruction_files`), capped in size."""
    parts: list[str] = []
    used = 0
    for path in instruction_files(workspace) if files is None else files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue  # unreadable (or gone since): the task runs without it
        room = MAX_INSTRUCTION_CHARS - used
        if room <= 0:
            break
        kept = keep_ends(text, room)
        if kept is not None:
            text = f"{kept.head}\n[{path} truncated at {MAX_INSTRUCTION_CHARS} characters]"
        parts.append(f'<instructions source="{path}">\n{text}\n</instructions>')
        used += len(text)
    return "\n\n".join(parts)


def system_prompt(
    workspace: Path, *, today: datetime.date | None = None, files: list[Path] | None = None
) -> str:
    today = today or datetime.date.today()
    environment = (
        f"Environment: workspace {workspace}; {platform.system()} {platform.release()}; "
        f"date {today.isoformat()}; git repository: "
        f"{'yes' if find_git_root(workspace) else 'no'}."
    )
    sections = [BASE_PROMPT, environment]
    extra = project_instructions(workspace, files)
    if extra:
        sections.append("Instructions (from AGENTS.md / CLAUDE.md files):\n\n" + extra)
    # The workspace path and the instruction files' paths may hold bytes that are not UTF-8.
    return for_model("\n\n".join(sections))
