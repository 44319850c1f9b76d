"""What `/agents` shows: each subagent type (where it is defined, its tools, model and mode),
what was left out when the definitions were read, and the subagents running now."""

from __future__ import annotations

from agentcli.agents.definitions import AgentDefinition
from agentcli.agents.tool import AgentTool


def definition_line(definition: AgentDefinition) -> str:
    tools = "all tools" if definition.tools is None else ", ".join(definition.tools) or "no tools"
    if definition.disallowed:
        tools += f" except {', '.join(definition.disallowed)}"
    facts = [tools, f"model {definition.model or 'inherit'}"]
    if definition.mode is not None:
        facts.append(f"mode {definition.mode.value} (if narrower)")
    if definition.never_asks:
        facts.append("never asks")
    if definition.max_turns is not None:
        facts.append(f"max {definition.max_turns} turns")
    return f"{definition.name} ({definition.source}): {' · '.join(facts)}"


def agent_lines(tool: AgentTool | None) -> list[str]:
    """`/agents`, one line each."""
    if tool is None:
        return ["no subagents in this session ([agents] max_depth = 0)"]
    limits = tool.limits
    lines = [
        f"limits: {limits.max_concurrent} at a time · depth {limits.max_depth} · "
        f"{limits.max_turns} turns · {limits.max_wall_s:g}s"
        + ("" if limits.max_cost_usd is None else f" · ${limits.max_cost_usd:g}")
        + " each"
    ]
    lines += [definition_line(d) for d in tool.catalog.definitions]
    lines += [f"note: {notice}" for notice in tool.catalog.notices]
    running = tool.lines()
    lines += [f"running: {line}" for line in running] or ["running: none"]
    return lines
