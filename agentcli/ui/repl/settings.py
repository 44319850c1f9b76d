"""What the REPL was started with (options before any command, `-C`, `/model`, `/mode`,
`/effort`, and the session to open on: `--resume [ID]`, `--continue`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agentcli.config import Flag, flags_of, load_settings
from agentcli.settings import Settings


@dataclass(kw_only=True)
class ReplSettings:
    """What the REPL was started with; `/model`, `/mode` and `/effort` change it for later
    sessions."""

    cwd: Path | None = None
    model: str | None = None
    effort: str | None = None
    permission_mode: str | None = None
    allow: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)
    accept: list[str] = field(default_factory=list)
    mcp_config: list[Path] = field(default_factory=list)
    """`--mcp-config FILE`: MCP servers, in `.mcp.json` format."""
    resume: str | None = None
    """The recorded session the REPL opens on (`--resume ID`; `resume_arg.PICK`: the user picks
    one first). Only the first session: `/clear` starts a new one."""
    continue_: bool = False
    """`--continue`: open on the latest session in the workspace (also the first session only)."""
    provider: str | None = None
    trust_project: bool = False
    """`--trust-project`: this workspace's config files and `.mcp.json` apply in this REPL."""

    def flags(self) -> list[Flag]:
        return flags_of(
            model=self.model,
            effort=self.effort,
            permission_mode=self.permission_mode,
            allow=self.allow,
            deny=self.deny,
            accept=self.accept,
            provider=self.provider,
        )

    def resolve(self, workspace: Path) -> Settings:
        """The settings a session started now in `workspace` gets (UsageError if broken)."""
        return load_settings(
            workspace, flags=self.flags(), trusted=True if self.trust_project else None
        )
