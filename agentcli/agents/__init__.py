"""Subagents: the `agent` tool hands a self-contained job to a child query loop with its own
context, and gets one answer back.

- `definitions`: what a subagent type is (Claude Code's `.claude/agents/*.md` format) and the
  built-in `general` and `explore`;
- `discovery`: where definitions come from (`.agentcli/agents/`, `.claude/agents/`, the user's
  own), read once through `agentcli.safe_read`;
- `boundaries`: what a subagent may do, at most what its parent may (tools, permissions,
  questions);
- `runner`: one child task, to its end, within its limits; `report`: what it hands back;
- `tool`: the `agent` tool itself (concurrency, depth, cancellation);
- `listing`: what `/agents` shows.

The session core builds the tool (`agentcli.session.build`) and binds it to the conversation;
the core never imports this package.
"""

from agentcli.agents.discovery import AgentCatalog, discover
from agentcli.agents.tool import AgentTool, agent_tool_of

__all__ = ["AgentCatalog", "AgentTool", "agent_tool_of", "discover"]
