"""The system prompt: tool semantics and task policy, plus the instruction files: the user's own
`AGENTS.md` (next to their config.toml), then from the repository root down to the workspace
each directory's `AGENTS.md`, or its `CLAUDE.md` where it has no AGENTS.md agentcli will read.

The files come with the repository (or a model in auto mode wrote them), so each is read once,
through `agentcli.safe_read`: a regular file of at most `MAX_INSTRUCTION_BYTES`, that lies, links
resolved, inside the workspace (a file above the workspace: inside the repository). A link to
`/proc/self/environ`, `~/.ssh/id_rsa` or `../other/secret`, a named pipe or a device is skipped,
and the notice that says so names it and why; the user's own file may be a link anywhere.

Kept lean on purpose (it is billed on every turn, though cached): control flow lives in code,
so the prompt only says how to work and what the tools mean.
"""

from __future__ import annotations

import datetime
import os
import platform
from dataclasses import dataclass
from pathlib import Path

from agentcli.fsnames import for_model
from agentcli.paths import user_config_path
from agentcli.safe_read import MAX_INSTRUCTION_BYTES, Inside, Unreadable, read_bytes
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


@dataclass(frozen=True, slots=True)
class InstructionFile:
    path: Path
    text: str


@dataclass(frozen=True, slots=True)
class Instructions:
    """The instruction files read for a workspace, and the ones skipped (one notice each)."""

    files: tuple[InstructionFile, ...] = ()
    skipped: tuple[str, ...] = ()
    """`AGENTS.md skipped: a link to /proc/self/environ, outside the workspace`."""

    @property
    def paths(self) -> list[Path]:
        return [f.path for f in self.files]


def load_instructions(workspace: Path) -> Instructions:
    """The instruction files given to the model, most general first: the user's AGENTS.md, then
    one per directory from the repository root (or the workspace) down to the workspace; each
    read now, once (blocking: small files, never a pipe)."""
    root = find_git_root(workspace) or workspace
    chain = [workspace, *workspace.parents]
    directories = list(reversed(chain[: chain.index(root) + 1])) if root in chain else [workspace]
    files: list[InstructionFile] = []
    skipped: list[str] = []
    mine = _read_one(user_config_path().parent / AGENTS_FILE, None, workspace, skipped)
    files.extend([mine] if mine else [])
    for directory in directories:
        inside = (
            Inside.of(workspace)
            if directory == workspace
            else Inside.of(root, name="the repository")
        )
        for name in (AGENTS_FILE, FALLBACK_FILE):
            found = _read_one(directory / name, inside, workspace, skipped)
            if found is not None:
                files.append(found)
                break
    return Instructions(files=tuple(files), skipped=tuple(skipped))


def _read_one(
    path: Path, inside: Inside | None, workspace: Path, skipped: list[str]
) -> InstructionFile | None:
    if not os.path.lexists(path):
        return None
    try:
        data = read_bytes(path, inside=inside, limit=MAX_INSTRUCTION_BYTES)
    except IsADirectoryError:
        return None  # a directory of that name is no instruction file, as none is there
    except Unreadable as exc:
        skipped.append(f"{shown_path(path, workspace)} skipped: {exc.why}")
        return None
    except OSError as exc:  # unreadable (or gone since): the task runs without it
        skipped.append(f"{shown_path(path, workspace)} skipped: {exc.strerror or exc}")
        return None
    return InstructionFile(path, data.decode("utf-8", errors="replace"))


def shown_path(path: Path, workspace: Path) -> str:
    """An instruction file as the user is told about it: relative to the workspace if in it."""
    return str(path.relative_to(workspace)) if path.is_relative_to(workspace) else str(path)


def instruction_files(workspace: Path) -> list[Path]:
    """The instruction files `load_instructions` would give the model, in order."""
    return load_instructions(workspace).paths


def project_instructions(workspace: Path, instructions: Instructions | None = None) -> str:
    """The instruction files' text (`instructions`, default: read now), capped in size."""
    parts: list[str] = []
    used = 0
    loaded = load_instructions(workspace) if instructions is None else instructions
    for found in loaded.files:
        path, text = found.path, found.text
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
    workspace: Path,
    *,
    today: datetime.date | None = None,
    instructions: Instructions | None = None,
    role: str = BASE_PROMPT,
) -> str:
    """The system prompt: `role` (what the model is and how it works: agentcli's own, or a
    subagent's), the environment, and the instruction files."""
    today = today or datetime.date.today()
    environment = (
        f"Environment: workspace {workspace}; {platform.system()} {platform.release()}; "
        f"date {today.isoformat()}; git repository: "
        f"{'yes' if find_git_root(workspace) else 'no'}."
    )
    sections = [role, environment]
    extra = project_instructions(workspace, instructions)
    if extra:
        sections.append("Instructions (from AGENTS.md / CLAUDE.md files):\n\n" + extra)
    # The workspace path and the instruction files' paths may hold bytes that are not UTF-8.
    return for_model("\n\n".join(sections))
