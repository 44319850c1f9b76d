"""`agentcli trust [PATH] [--list | --revoke]`: the trust store (`agentcli.trust`) from the
command line, saying which of the workspace's own settings start to apply and what its files
start (MCP servers, with their commands; checks), and approving that content as it is now
(`agentcli.approvals`): what changed since the last approval is marked."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from agentcli import approvals
from agentcli.config import describe_ignored, load_settings, read_level
from agentcli.errors import UsageError
from agentcli.mcp.config import PROJECT_FILE, project_servers
from agentcli.paths import project_config_paths
from agentcli.programs import ProgramContent, program_settings, relative_name
from agentcli.trust import set_trusted, trusted_workspaces, workspace_key
from agentcli.ui.term.safe import visible


def trust_command(path: Path | None, *, list_: bool = False, revoke: bool = False) -> int:
    """`agentcli trust [PATH] [--list | --revoke]`: PATH defaults to the current directory."""

    def out(text: str) -> None:
        sys.stdout.write(visible(text))

    if list_:
        if path is not None or revoke:
            raise UsageError("--list takes no path and no --revoke")
        entries = trusted_workspaces()
        for key, when in sorted(entries.items()):
            missing = "" if Path(key).is_dir() else "  (no longer exists)"
            out(f"{key}  trusted {when}{missing}\n")
        if not entries:
            out("no trusted workspaces\n")
        return 0
    target = (path or Path.cwd()).expanduser()
    if revoke:
        changed = set_trusted(target, False)
        approvals.forget(target)
        out(f"{'no longer trusted' if changed else 'was not trusted'}: {workspace_key(target)}\n")
        return 0
    if not target.is_dir():
        raise UsageError(f"{target} is not a directory")
    workspace = target.resolve()
    # Read before anything is recorded: a broken file is refused with nothing trusted.
    now_applying = describe_ignored(load_settings(workspace, trusted=False))
    found = program_contents(workspace)
    changed = set_trusted(workspace, True)
    out(f"{'trusted' if changed else 'already trusted'}: {workspace_key(workspace)}\n")
    if now_applying and changed:
        out(f"its own config now applies:\n{now_applying}\n")
    if found:
        out("what its own files start (approved as they are now; a change is held back until ")
        out("you run agentcli trust again):\n")
        for content in found:
            out("".join(f"{line}\n" for line in describe(content, workspace)))
    approvals.approve(workspace, [c.content for c in found if c.needs_approval])
    return 0


def program_contents(workspace: Path) -> list[ProgramContent]:
    """Everything the workspace's own files make agentcli start, file by file."""
    found: list[ProgramContent] = []
    for config in project_config_paths(workspace):
        if config.is_file():
            found += program_settings(read_level(config), config, workspace)
    mcp = workspace / PROJECT_FILE
    if mcp.is_file():
        found.append(project_servers(mcp, workspace)[1])
    return found


def describe(content: ProgramContent, workspace: Path) -> list[str]:
    """`FILE: what, how they run`, then one line per program, marked against the content
    approved before (`+` new, `~` changed, `-` gone)."""
    subject = content.content.subject
    before = approvals.approved_content(workspace, subject) if content.needs_approval else None
    state = "" if not content.needs_approval else _state(workspace, content)
    name = relative_name(content.path, workspace)
    lines = [f"  {name}: {content.what}, run {content.runs}{state}"]
    now, then = _programs(content.content.data), _programs(before)
    for name, target in now.items():
        mark = " " if before is None or then.get(name) == target else ("~" if name in then else "+")
        was = f"  (was: {then[name]})" if mark == "~" else ""
        lines.append(f"   {mark} {name}: {target}{was}")
    lines += [
        f"   - {name}: {target}  (no longer there)"
        for name, target in then.items()
        if name not in now
    ]
    return lines


def _state(workspace: Path, content: ProgramContent) -> str:
    status = approvals.status(workspace, content.content)
    if status is approvals.Status.CHANGED:
        return " (changed since you approved it)"
    if status is approvals.Status.NEW:
        return " (new to you)"
    return ""


def _programs(data: Any) -> dict[str, str]:
    """Name → what it runs, for the content of each kind (servers; check commands)."""
    if not isinstance(data, dict):
        return {}
    found: dict[str, str] = {}
    for key, value in data.items():
        if isinstance(value, dict):  # `mcpServers` / `mcp_servers`: servers by name
            for name, entry in value.items():
                found[str(name)] = _target(entry)
        elif isinstance(value, list):  # `acceptance.commands`
            for index, command in enumerate(value, 1):
                found[f"{key} {index}"] = str(command)
    return found


def _target(entry: Any) -> str:
    if not isinstance(entry, dict):
        return str(entry)
    if entry.get("url"):
        return f"{entry.get('type') or 'http'} {entry['url']}"
    words = [str(entry.get("command", "")), *(str(a) for a in entry.get("args", []) or [])]
    env = entry.get("env") or {}
    shown = " ".join(words)
    return shown + (f"  (env: {', '.join(sorted(env))})" if env else "")
