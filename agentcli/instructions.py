"""The system prompt: tool semantics and task policy, plus the project's AGENTS.md files.

Kept lean on purpose (it is billed on every turn, though cached): control flow lives in code,
so the prompt only says how to work and what the tools mean.
"""

from __future__ import annotations

import datetime
import platform
from pathlib import Path

from agentcli.fsnames import for_model
from agentcli.truncation import keep_ends

AGENTS_FILE = "AGENTS.md"
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


def project_instructions(workspace: Path) -> str:
    """AGENTS.md files from the repository root down to the workspace, capped in size."""
    root = find_git_root(workspace) or workspace
    chain = [workspace, *workspace.parents]
    directories = list(reversed(chain[: chain.index(root) + 1])) if root in chain else [workspace]
    parts: list[str] = []
    used = 0
    for directory in directories:
        path = directory / AGENTS_FILE
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        room = MAX_INSTRUCTION_CHARS - used
        if room <= 0:
            break
        kept = keep_ends(text, room)
        if kept is not None:
            text = f"{kept.head}\n[{path} truncated at {MAX_INSTRUCTION_CHARS} characters]"
        parts.append(f'<instructions source="{path}">\n{text}\n</instructions>')
        used += len(text)
    return "\n\n".join(parts)


def system_prompt(workspace: Path, *, today: datetime.date | None = None) -> str:
    today = today or datetime.date.today()
    environment = (
        f"Environment: workspace {workspace}; {platform.system()} {platform.release()}; "
        f"date {today.isoformat()}; git repository: "
        f"{'yes' if find_git_root(workspace) else 'no'}."
    )
    sections = [BASE_PROMPT, environment]
    extra = project_instructions(workspace)
    if extra:
        sections.append("Project instructions (from AGENTS.md files):\n\n" + extra)
    # The workspace path and the instruction files' paths may hold bytes that are not UTF-8.
    return for_model("\n\n".join(sections))
