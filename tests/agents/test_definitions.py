"""Subagent definitions: Claude Code's `.claude/agents/*.md` read as they are, agentcli's own,
the user's, the built-in ones; what cannot be used is left out and named, never widened; a file
that is no regular file of the workspace is never read; the tool's description lists the
types."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentcli.agents.definitions import DefinitionError, parse_definition
from agentcli.agents.discovery import discover
from agentcli.agents.listing import agent_lines
from agentcli.agents.tool import AgentTool
from agentcli.paths import user_config_path
from agentcli.settings import AgentsSection
from agentcli.testing import ScriptedModel
from agentcli.vocabulary import PermissionMode

SNAPSHOT = Path(__file__).parent / "agent_tool.json"

CLAUDE_CODE = """\
---
name: code-reviewer
description: Expert code review specialist. Use proactively after writing code.
tools: Read, Grep, Glob, Bash, WebFetch, Bash(git diff:*)
model: sonnet
permissionMode: plan
maxTurns: 12
color: blue
hooks:
  PreToolUse: []
mcpServers: [github]
---
You are a senior code reviewer.
Review the diff and report findings by severity.
"""


def test_a_claude_code_definition_is_read_as_it_is() -> None:
    found = parse_definition(CLAUDE_CODE, ".claude/agents/code-reviewer.md")
    assert found.name == "code-reviewer"
    assert found.tools == ("read_file", "grep", "glob", "shell")
    assert (found.model, found.mode, found.max_turns) == ("sonnet", PermissionMode.READ_ONLY, 12)
    assert found.prompt.startswith("You are a senior code reviewer.")
    assert found.notes == (
        "`tools`: WebFetch left out (agentcli has no such tool)",
        "`tools`: Bash(git diff:*) left out (a tool restricted by its arguments)",
        "`hooks` left out: not supported",
        "`mcpServers` left out: not supported",
    )


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("no frontmatter", "does not start with `---`"),
        ("---\nname: x\n", "no closing `---`"),
        ("---\nname: [x\n---\nbody", "not YAML"),
        ("---\n- a\n---\nbody", "not a mapping"),
        ("---\nname: Bad Name\ndescription: d\n---\nbody", "`name` must be lowercase"),
        ("---\nname: ok\n---\nbody", "no `description`"),
        ("---\nname: ok\ndescription: d\n---\n\n", "no system prompt"),
    ],
)
def test_what_is_no_definition_says_why(text: str, why: str) -> None:
    with pytest.raises(DefinitionError, match=why.replace("(", r"\(").replace("`", "`")):
        parse_definition(text, "x.md")


def test_fields_that_cannot_be_used_are_left_out_never_widened() -> None:
    found = parse_definition(
        "---\nname: odd\ndescription: d\ntools: 42\npermissionMode: sideways\nmaxTurns: 0\n"
        "model: inherit\n---\nbody\n",
        "odd.md",
    )
    assert found.tools == ()  # an allow-list that cannot be read allows nothing
    assert found.mode is None and found.max_turns is None and found.model is None
    assert len(found.notes) == 3


def put(directory: Path, name: str, description: str, body: str = "Do it.") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.md"
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}\n")
    return path


def test_where_definitions_come_from_and_which_wins(workspace: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    put(workspace / ".agentcli" / "agents", "shared", "from .agentcli")
    put(workspace / ".claude" / "agents", "shared", "from .claude")
    put(workspace / ".claude" / "agents", "cc-only", "from .claude")
    put(user_config_path().parent / "agents", "mine", "from my config dir")
    put(home / ".claude" / "agents", "mine", "from my ~/.claude")
    put(home / ".claude" / "agents", "explore", "my own explorer")
    catalog = discover(workspace, home)
    by_name = {d.name: d for d in catalog.definitions}
    assert by_name["shared"].description == "from .agentcli"
    assert by_name["cc-only"].source == ".claude/agents/cc-only.md"
    assert by_name["mine"].description == "from my config dir"
    assert by_name["explore"].description == "my own explorer"  # a user may redefine one
    assert by_name["general"].source == "built-in"
    assert catalog.get("General-Purpose") is by_name["general"]
    assert catalog.get("EXPLORE") is by_name["explore"]
    assert sum("is not used" in notice for notice in catalog.notices) == 2


def test_a_file_that_is_no_regular_file_of_the_workspace_is_never_read(
    workspace: Path, tmp_path: Path
) -> None:
    agents = workspace / ".agentcli" / "agents"
    agents.mkdir(parents=True)
    outside = put(tmp_path / "elsewhere", "leak", "outside")
    (agents / "leak.md").symlink_to(outside)
    os.mkfifo(agents / "pipe.md")  # opening it to read would block for ever
    (agents / "env.md").symlink_to("/proc/self/environ")
    (agents / "big.md").write_text("---\nname: big\ndescription: d\n---\n" + "x" * 2_000_000)
    (agents / "bytes.md").write_bytes(b"---\nname: b\ndescription: \xff\n---\nbody\n")
    put(agents, "fine", "a good one")
    catalog = discover(workspace, tmp_path / "nohome")
    assert catalog.names == ["explore", "general", "fine"]
    said = "\n".join(catalog.notices)
    for name in ("leak.md", "pipe.md", "env.md", "big.md", "bytes.md"):
        assert f".agentcli/agents/{name} skipped" in said


def tool(catalog_dir: Path | None = None, **limits: object) -> AgentTool:
    catalog = (
        discover(catalog_dir, catalog_dir / "nohome")
        if catalog_dir
        else discover(Path("/nonexistent-ws"), Path("/nonexistent-home"))
    )
    return AgentTool(
        catalog=catalog,
        limits=AgentsSection(**limits),  # type: ignore[arg-type]
        models=lambda name: ScriptedModel([], model=name),
        system=lambda role: role,
    )


def test_the_tool_description_lists_the_types(workspace: Path) -> None:
    put(workspace / ".agentcli" / "agents", "reviewer", "Reviews a diff for bugs.")
    spec = tool(workspace, max_concurrent=3).spec()
    assert "- reviewer: Reviews a diff for bugs." in spec.description
    assert "- explore: Fast read-only explorer" in spec.description
    assert "up to 3" in spec.description


def test_the_tool_spec_matches_its_snapshot() -> None:
    """Prompt text: a change here must be deliberate (`AGENTCLI_UPDATE_SNAPSHOTS=1`)."""
    actual = json.dumps(tool().spec().to_wire(), indent=2, sort_keys=True) + "\n"
    if os.environ.get("AGENTCLI_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(actual)
    assert actual == SNAPSHOT.read_text()
    schema = tool().spec().input_schema
    assert schema["additionalProperties"] is False and schema["required"] == [
        "description",
        "prompt",
    ]


def test_agents_lists_types_limits_and_what_was_left_out(workspace: Path) -> None:
    (workspace / ".claude" / "agents").mkdir(parents=True)
    (workspace / ".claude" / "agents" / "code-reviewer.md").write_text(CLAUDE_CODE)
    lines = agent_lines(tool(workspace))
    assert lines[0] == "limits: 4 at a time · depth 1 · 30 turns · 600s each"
    assert "explore (built-in): read_file, glob, grep, shell · model inherit · mode read-only" in (
        "\n".join(lines)
    )
    assert (
        "code-reviewer (.claude/agents/code-reviewer.md): read_file, grep, glob, shell · "
        "model sonnet · mode read-only (if narrower) · max 12 turns"
    ) in lines
    assert any(line.startswith("note: agent code-reviewer") for line in lines)
    assert lines[-1] == "running: none"
