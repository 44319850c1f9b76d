"""`@path` in a task attaches that file (the convention of Claude Code, Gemini CLI and Aider).

A mention is `@` at the start of a word followed by a path (`@src/app.py`, or quoted when it has
spaces: `@"docs/my notes.md"`); trailing punctuation of the sentence is not part of it. Each file
is read exactly as the model's own `read_file` would read it, with the same rules: inside the
workspace only, refused where the permission rules would not let `read_file` read it without
asking (a `deny` or `ask` rule, say for `.env`), and text files only. A prompt can come from a
pipe (an issue body, a CI message), so a mention never reaches further than the model itself
could. What cannot be attached is said in a notice and the task runs without it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agentcli.errors import ToolError
from agentcli.permissions import PermissionPolicy
from agentcli.tools.base import ToolContext
from agentcli.tools.read_file import ReadFile, ReadFileInput
from agentcli.vocabulary import Decision

_MENTION = re.compile(r'(?<![\w@])@(?:"([^"\n]+)"|([^\s"\'`@][^\s"\'`]*))')
_TRAILING = ".,;:!?)]}>'\""
MAX_ATTACHMENTS = 20


@dataclass
class Expanded:
    """The task as sent to the model, and what could not be attached (one line each)."""

    text: str
    attached: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)


def mentions(prompt: str) -> list[str]:
    """The paths `prompt` mentions with `@`, in order, each once."""
    found: list[str] = []
    for match in _MENTION.finditer(prompt):
        path = match.group(1) or match.group(2).rstrip(_TRAILING)
        if path and path not in found:
            found.append(path)
    return found


async def expand(prompt: str, ctx: ToolContext, policy: PermissionPolicy) -> Expanded:
    """`prompt` with every file it mentions appended (as `read_file` shows it)."""
    expanded = Expanded(text=prompt)
    files: list[str] = []
    paths = mentions(prompt)
    for path in paths[:MAX_ATTACHMENTS]:
        shown = await _attach(path, ctx, policy, expanded)
        if shown is not None:
            files.append(f'<attached_file path="{path}">\n{shown}\n</attached_file>')
            expanded.attached.append(path)
    if len(paths) > MAX_ATTACHMENTS:
        expanded.notices.append(
            f"only the first {MAX_ATTACHMENTS} @-mentioned files were attached "
            f"({len(paths) - MAX_ATTACHMENTS} more were not)"
        )
    if files:
        expanded.text = "\n\n".join([prompt, *files])
    return expanded


async def _attach(
    path: str, ctx: ToolContext, policy: PermissionPolicy, expanded: Expanded
) -> str | None:
    tool = ReadFile()
    try:
        args = ReadFileInput(path=path)
        tool.validate(args, ctx)
        verdict = policy.decide(tool.risk, tool.permission_target(args, ctx))
        if verdict.decision is not Decision.ALLOW:
            expanded.notices.append(
                f"@{path} not attached: reading it needs permission ({verdict.reason}); "
                "the model can ask to read it"
            )
            return None
        output = await tool.call(args, ctx)
    except ToolError as exc:
        expanded.notices.append(f"@{path} not attached: {exc.message}")
        return None
    return output.text
