"""Which MCP servers a session gets, and from where.

Sources, merged by name (a later one replaces an earlier server of the same name whole):

1. `[mcp_servers.NAME]` tables of the config files (`Settings.mcp_servers`: the user's file,
   and a workspace's own `.agentcli` files once it is trusted);
2. `.mcp.json` at the workspace root (Claude Code's format: `{"mcpServers": {NAME: {...}}}`),
   only in a trusted workspace or with `--trust-project`: a cloned repository must not start
   programs. Otherwise it is ignored, and `Configured.notice` names the servers it held. In a
   trusted workspace only as the user approved it, by content (`agentcli.approvals`): changed
   since, or never approved, it is held back (`Configured.held`) until `agentcli trust`;
3. each `--mcp-config FILE` (the same format), in the order given: the user's own flag.

A file that is not JSON, has an unknown key or a server without `command`/`url` is a
ConfigError naming the file and the key. `${VAR}` and `${VAR:-default}` in any value are
expanded from the environment when the server starts (`expand`); a variable that is not set
fails that server alone, never the session.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentcli.environment import without_own_credentials
from agentcli.errors import ConfigError, UsageError
from agentcli.mcp_entry import ServerEntry, check_server_name
from agentcli.programs import ProgramContent, mcp_json_content
from agentcli.provenance import HeldContent
from agentcli.safe_read import MAX_CONFIG_BYTES, Inside, Unreadable, read_bytes
from agentcli.settings import Settings

PROJECT_FILE = ".mcp.json"
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(frozen=True, slots=True)
class ConfiguredServer:
    name: str
    entry: ServerEntry
    source: str
    """Where it was configured: a file's path (`--mcp-config FILE` for the flag's)."""


@dataclass(kw_only=True)
class Configured:
    """The servers a session starts, and what an untrusted workspace's `.mcp.json` held."""

    servers: dict[str, ConfiguredServer] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)
    """Servers of the workspace's `.mcp.json`, not started: the workspace is not trusted."""
    ignored_file: Path | None = None
    trusted: bool = False
    """Whether the workspace is trusted: only then do stdio servers start in it (see
    `session.server_directory`)."""
    held: list[HeldContent] = field(default_factory=list)
    """Servers of a trusted workspace's own files (`[mcp_servers]`, `.mcp.json`) that the user
    has not approved as they are now: not started."""

    def notice(self) -> str | None:
        """What to tell the user once about ignored or held servers, or None."""
        ignored = self._ignored_notice()
        said = [*(h.notice() for h in self.held), *([ignored] if ignored else [])]
        return "\n".join(said) or None

    def _ignored_notice(self) -> str | None:
        if self.ignored_file is None:
            return None
        names = ", ".join(self.ignored) if self.ignored else "(none readable)"
        return (
            f"this workspace is not trusted, so agentcli did not start the MCP servers of "
            f"{self.ignored_file}: {names}. They are programs the repository chose; if you "
            "trust it, run `agentcli trust` here, or pass --trust-project (to `agentcli` or "
            "`agentcli run`)."
        )


def configured_servers(
    settings: Settings, workspace: Path, extra_files: Sequence[Path] = ()
) -> Configured:
    """Every server the session should start (see the module docstring)."""
    found = Configured(trusted=settings.provenance.trusted)
    found.held += [h for h in settings.provenance.held if h.kind == "mcp"]
    for name, entry in settings.mcp_servers.items():
        origin = settings.origin(f"mcp_servers.{name}")
        found.servers[name] = ConfiguredServer(name, entry, str(origin) if origin else "config")
    project = workspace / PROJECT_FILE
    if os.path.lexists(project):  # a pipe or a link there is refused, naming it, not passed over
        if settings.provenance.trusted:
            servers, content = project_servers(project, workspace)
            held = None if settings.provenance.vouched else content.held(workspace)
            if held is None:
                found.servers.update(servers)
            else:
                found.held.append(held)
        else:
            found.ignored_file = project
            found.ignored = _names_in(project)
    for path in extra_files:
        found.servers.update(read_servers(path, f"--mcp-config {path}", flag=True))
    return found


def project_servers(
    path: Path, workspace: Path
) -> tuple[dict[str, ConfiguredServer], ProgramContent]:
    """A workspace's `.mcp.json`: its servers, and them as program-starting content (what an
    approval binds to: each server as the file writes it)."""
    servers = read_servers(path, str(path), inside=Inside.of(workspace))
    written = {
        name: server.entry.model_dump(mode="json", exclude_unset=True)
        for name, server in servers.items()
    }
    return servers, mcp_json_content(path, workspace, written)


def read_servers(
    path: Path, source: str, *, flag: bool = False, inside: Inside | None = None
) -> dict[str, ConfiguredServer]:
    """The servers of one `.mcp.json`-format file. A file named on the command line that is not
    there is a usage error; anything wrong inside a file is a ConfigError naming it. It is read
    as config is (`agentcli.safe_read`): a regular file, bounded, inside `inside` if given."""
    try:
        text = read_bytes(path, inside=inside, limit=MAX_CONFIG_BYTES).decode("utf-8")
    except Unreadable as exc:
        raise ConfigError(f"MCP config {path} is not read: {exc.why}", hint="fix the file") from exc
    except FileNotFoundError as exc:
        if flag:
            raise UsageError(f"--mcp-config {path}: no such file") from exc
        raise ConfigError(f"cannot read {path}: no such file") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read MCP config {path}: {exc}", hint="fix the file") from exc
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"MCP config {path} is not valid JSON: {exc.msg} (line {exc.lineno}, column "
            f"{exc.colno})",
            hint='write {"mcpServers": {"NAME": {"command": "...", "args": [...]}}}',
        ) from exc
    servers = _servers_table(data, path)
    found: dict[str, ConfiguredServer] = {}
    for name, raw in servers.items():
        problem = check_server_name(name)
        if problem:
            raise ConfigError(f"{path}: `mcpServers.{name}`: {problem}")
        try:
            entry = ServerEntry.model_validate(raw)
        except ValidationError as exc:
            raise ConfigError(
                f"{path}: " + "; ".join(_problem(name, error) for error in exc.errors()),
                hint="fix that server's entry (README: MCP servers)",
            ) from exc
        found[name] = ConfiguredServer(name, entry, source)
    return found


def _servers_table(data: Any, path: Path) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the file must hold a JSON object with `mcpServers`")
    unknown = sorted(set(data) - {"mcpServers"})
    if unknown:
        raise ConfigError(
            f"{path}: unknown key `{unknown[0]}`", hint="the file holds only `mcpServers`"
        )
    servers = data.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConfigError(f"{path}: `mcpServers` must be an object of servers by name")
    return servers


def _problem(name: str, error: Mapping[str, Any]) -> str:
    where = ".".join(str(part) for part in ("mcpServers", name, *error["loc"]))
    if error["type"] == "extra_forbidden":
        return f"unknown key `{where}`"
    if error["type"] == "missing":
        return f"`{where}` is missing"
    message = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "model_type":
        message = "must be an object"
    return f"`{where}`: {message}"


def _names_in(path: Path) -> list[str]:
    """The server names of a file agentcli will not use (for the notice): never an error."""
    try:
        inside = Inside.of(path.parent)
        data = json.loads(read_bytes(path, inside=inside, limit=MAX_CONFIG_BYTES))
    except (OSError, ValueError):
        return []
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    return sorted(str(name) for name in servers) if isinstance(servers, dict) else []


class MissingVariable(Exception):
    """A `${VAR}` in a server's configuration names a variable that is not set."""

    def __init__(self, variable: str) -> None:
        super().__init__(
            f"the environment variable {variable} is not set (used as ${{{variable}}})"
        )
        self.variable = variable


def expand(entry: ServerEntry, environ: Mapping[str, str] | None = None) -> ServerEntry:
    """`entry` with `${VAR}` and `${VAR:-default}` replaced in every string value. agentcli's
    own credentials are not there to expand: a server never gets them, not even by asking for
    `${ANTHROPIC_API_KEY}` in its environment, headers or URL."""
    env = without_own_credentials(os.environ if environ is None else environ)

    def one(value: str) -> str:
        def substitute(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in env and (env[name] or default is None):
                return env[name]
            if default is not None:
                return default
            raise MissingVariable(name)

        return _VARIABLE.sub(substitute, value)

    return entry.model_copy(
        update={
            "command": one(entry.command) if entry.command is not None else None,
            "args": [one(arg) for arg in entry.args],
            "env": {key: one(value) for key, value in entry.env.items()},
            "url": one(entry.url) if entry.url is not None else None,
            "headers": {key: one(value) for key, value in entry.headers.items()},
        }
    )
