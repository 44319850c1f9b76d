"""What a workspace's own files make agentcli start, and whether the user approved it.

Two places in a workspace name programs agentcli starts: its `.mcp.json` (MCP servers) and the
settings of its `.agentcli` config files marked `StartsPrograms` (`[mcp_servers]`; the
`[acceptance] commands`, which run in the sandbox, are listed but need no approval). In a
trusted workspace, those that run unconfined are used only as the user approved them, by content
(`agentcli.approvals`): `hold_unapproved` (for the config files, from `agentcli.config`) and
`agentcli.mcp.config` (for `.mcp.json`) leave out content approved otherwise or never, and
`agentcli trust` (`agentcli.ui.trust_command`) shows all of it and approves it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentcli import approvals
from agentcli.provenance import HeldContent
from agentcli.setting_marks import mark_of
from agentcli.settings import StartsPrograms


@dataclass(frozen=True, slots=True)
class ProgramContent:
    """One file's program-starting content of one kind."""

    path: Path
    content: approvals.Content
    what: str
    """What the programs are (`MCP servers`)."""
    runs: str
    """How they run (`unconfined`, `in the sandbox`)."""
    needs_approval: bool
    names: tuple[str, ...]
    """The programs by name (server names), or the commands themselves."""

    def held(self, workspace: Path) -> HeldContent | None:
        """What is held back of it now (None: approved, or needing no approval)."""
        if not self.needs_approval:
            return None
        state = approvals.status(workspace, self.content)
        if state is approvals.Status.APPROVED:
            return None
        return HeldContent(
            kind=self.content.subject.kind,
            path=self.path,
            keys=tuple(self.content.data) if isinstance(self.content.data, dict) else (),
            names=self.names,
            changed=state is approvals.Status.CHANGED,
            what=self.what,
        )


def relative_name(path: Path, workspace: Path) -> str:
    return str(path.relative_to(workspace)) if path.is_relative_to(workspace) else str(path)


def program_settings(level: Mapping[str, Any], path: Path, workspace: Path) -> list[ProgramContent]:
    """The settings of one config file (dotted keys, as `config.read_level` gives them) that
    start programs, one entry per kind."""
    found: dict[str, tuple[StartsPrograms, dict[str, Any]]] = {}
    for key, value in level.items():
        mark: StartsPrograms | None = mark_of(key, StartsPrograms)
        if mark is not None:
            found.setdefault(mark.kind, (mark, {}))[1][key] = value
    result = []
    for kind, (mark, data) in sorted(found.items()):
        subject = approvals.Subject(kind, relative_name(path, workspace))
        names = tuple(str(name) for value in data.values() for name in (value or ()))
        result.append(
            ProgramContent(
                path=path,
                content=approvals.Content.of(subject, data),
                what=mark.what,
                runs=mark.runs,
                needs_approval=mark.needs_approval,
                names=names,
            )
        )
    return result


def hold_unapproved(level: dict[str, Any], path: Path, workspace: Path) -> list[HeldContent]:
    """Take out of `level` (one trusted config file's settings) the program-starting settings
    that need the user's approval and lack it for their content now; return what was held."""
    held = []
    for found in program_settings(level, path, workspace):
        holding = found.held(workspace)
        if holding is None:
            continue
        for key in holding.keys:
            level.pop(key, None)
        held.append(holding)
    return held


def mcp_json_content(path: Path, workspace: Path, servers: Mapping[str, Any]) -> ProgramContent:
    """A `.mcp.json`'s servers (`{name: entry as written}`) as program-starting content."""
    subject = approvals.Subject("mcp", relative_name(path, workspace))
    return ProgramContent(
        path=path,
        content=approvals.Content.of(subject, {"mcpServers": dict(servers)}),
        what="MCP servers",
        runs="unconfined",
        needs_approval=True,
        names=tuple(servers),
    )
