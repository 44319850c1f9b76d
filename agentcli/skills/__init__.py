"""Skills and custom slash commands, in the formats people already have: Claude Code's
`.claude/commands/**/*.md` and `.claude/skills/*/SKILL.md`, the agentskills.io `SKILL.md`
under `.agents/skills/`, Codex's `~/.codex/prompts/*.md`, and agentcli's own `.agentcli/`.

- `sources`: where they come from, one precedence table; `catalog`: finding them (`discover`);
- `reading`: the one way their files are read; `frontmatter`, `definitions`: a file as a record;
- `substitute`: arguments and placeholders, and the shell lines cut out; `expand`: `/name
  args` to the text sent; `inject`: running shell lines through the session's ToolRuntime;
- `grants`: `allowed-tools` as permission rules for one task; `tool`: the model's `skill` tool;
  `listing`: the system prompt's list; `pinned`: what a compaction re-sends; `lint`.

The session core (`agentcli.session`) enters here; nothing here imports the session or the UI.
"""

from __future__ import annotations

from agentcli.skills.catalog import Catalog, Listed, discover
from agentcli.skills.expand import Invocation, command_name, invocation, task_invocation
from agentcli.skills.pinned import PinnedSkill, resend_after_compaction

__all__ = [
    "Catalog",
    "Invocation",
    "Listed",
    "PinnedSkill",
    "command_name",
    "discover",
    "invocation",
    "resend_after_compaction",
    "task_invocation",
]
