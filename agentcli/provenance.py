"""Where resolved settings came from (`agentcli.config`): each value's origin, the files read,
what an untrusted workspace's files could not set, and the program-starting content of a
trusted one that waits for the user's approval. A leaf: standard library only."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a value came from: a config file, a flag or an environment variable."""

    name: str
    """The file's path, the flag (`--model`) or the variable (`AGENTCLI_MODEL`)."""
    path: Path | None = None
    """The config file, when it came from one."""

    def __str__(self) -> str:
        return self.name


@dataclass(kw_only=True)
class Provenance:
    """What the settings were resolved from (for messages, `doctor` and the trust notice)."""

    sources: list[Path] = field(default_factory=list)
    """The config files read, lowest precedence first."""
    origins: dict[str, Origin] = field(default_factory=dict)
    """Dotted key → where its value came from (keys left at their default are absent)."""
    contributions: dict[str, list[tuple[Origin, list[Any]]]] = field(default_factory=dict)
    """For accumulating keys: what each level added, lowest precedence first."""
    trusted: bool = True
    """The workspace's in-repo files were taken whole (the user trusts the workspace)."""
    ignored: dict[Path, list[str]] = field(default_factory=dict)
    """Per in-repo file of an untrusted workspace, the settings dropped, as `key = value`."""
    withheld: dict[Path, dict[str, Any]] = field(default_factory=dict)
    """The same settings as written (dotted key → value, unchecked): to name what did not
    apply (e.g. the hooks an untrusted repository holds)."""
    vouched: bool = False
    """The user vouched for the in-repo files as they are, for this run (`--trust-project`):
    what they start needs no approval by content."""
    held: list[HeldContent] = field(default_factory=list)
    """Program-starting content of a trusted workspace's files that the user has not approved
    as it is now: left out of these settings (`agentcli.approvals`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HeldContent:
    """Program-starting content of a workspace file, left out until the user approves it."""

    kind: str
    """What it starts (`mcp`): the approval's kind; the part of agentcli that starts such
    programs tells the user it did not."""
    path: Path
    """The file it is in."""
    keys: tuple[str, ...]
    """The settings it set (`mcp_servers`), or `mcpServers` for a `.mcp.json`."""
    names: tuple[str, ...]
    """What it would start, by name (the servers)."""
    changed: bool
    """True: approved once with other content; False: never approved here."""
    what: str
    """What they are (`MCP servers`)."""

    def notice(self) -> str:
        why = (
            "it changed since you approved it"
            if self.changed
            else "you have not approved it (agentcli approves what a workspace starts by its "
            "content, apart from trusting the workspace)"
        )
        names = ", ".join(self.names) or "(none)"
        return (
            f"agentcli did not start the {self.what} of {self.path} ({names}): {why}. Run "
            "`agentcli trust` here to see what they run and approve them."
        )
