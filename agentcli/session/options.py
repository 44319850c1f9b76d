"""What a front end was asked for, as one typed object: `agentcli run`'s options, the REPL's
options (and what `/model`, `/mode`, `/effort`, `/accept` changed since, for the sessions it
starts later), and the batch runner's per-task options all are a `SessionOptions`.

It turns into what the session core takes: `Settings` (over the environment and the config
files, `resolve`) and a `Budget` (`budget`, checked here so a bad limit is a usage error before
anything starts). Nothing here imports the loop, the tools or a model client, and the config
reader (pydantic) is imported only when settings are resolved: the command line builds these
options for `--help` too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agentcli.errors import UsageError
from agentcli.usage import Budget

if TYPE_CHECKING:
    from agentcli.config import Flag
    from agentcli.settings import Settings

PICK = "\x00pick"
"""The value of a bare `--resume` (the user picks the session). No command-line argument can
contain a NUL byte, so no id the user types is ever taken for it."""

OUTPUT_FORMATS = ("text", "json", "stream-json")


@dataclass(kw_only=True)
class SessionOptions:
    """The options of one invocation. Unset (None, empty) means "not given": the config files
    and the defaults decide."""

    task: str | None = None
    """The task (`run TASK`, `agentcli "TASK"`); None or `-`: read it from stdin."""
    cwd: Path | None = None
    model: str | None = None
    effort: str | None = None
    permission_mode: str | None = None
    allow: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)
    accept: list[str] = field(default_factory=list)
    accept_retries: int | None = None
    max_turns: int | None = None
    max_cost: float | None = None
    max_tokens: int | None = None
    timeout: float | None = None
    resume: str | None = None
    """The recorded session to open on (`--resume ID`; PICK: the user picks one first)."""
    continue_: bool = False
    """`--continue`: the latest session in the workspace."""
    output_format: str = "text"
    quiet: bool = False
    trust_project: bool = False
    """Apply the workspace's in-repo config and `.mcp.json` even if it is not trusted."""
    mcp_config: list[Path] = field(default_factory=list)
    """`--mcp-config FILE`: MCP servers, in `.mcp.json` format."""
    provider: str | None = None
    branch: str | None = None
    """`run --branch NAME`: create NAME from HEAD and switch to it before the task."""
    commit: bool | None = None
    """`run --commit` / `--no-commit`: commit a task that succeeded (None: `[git] commit`)."""

    def flags(self) -> list[Flag]:
        """The settings these options set, as flags over the config files."""
        from agentcli.config import flags_of

        return flags_of(
            model=self.model,
            effort=self.effort,
            permission_mode=self.permission_mode,
            allow=self.allow,
            deny=self.deny,
            accept=self.accept,
            accept_retries=self.accept_retries,
            provider=self.provider,
        )

    def resolve(self, workspace: Path) -> Settings:
        """The settings a session started now in `workspace` gets (UsageError if broken): the
        options over the environment over the config files (the in-repo ones only as far as
        the workspace is trusted, or `--trust-project`)."""
        from agentcli.config import load_settings

        return load_settings(
            workspace, flags=self.flags(), trusted=True if self.trust_project else None
        )

    def budget(self) -> Budget:
        """The limits the options set (the core checks the price `--max-cost` needs)."""
        for name, value in (("--max-turns", self.max_turns), ("--max-tokens", self.max_tokens)):
            if value is not None and value < 1:
                raise UsageError(f"{name} must be at least 1 (got {value})")
        for name, number in (("--max-cost", self.max_cost), ("--timeout", self.timeout)):
            if number is not None and not math.isfinite(number):
                raise UsageError(f"{name} must be a finite number (got {number})")
            if number is not None and number <= 0:
                raise UsageError(f"{name} must be positive (got {number})")
        return Budget(
            max_turns=self.max_turns,
            max_tokens=self.max_tokens,
            max_cost_usd=self.max_cost,
            timeout_s=self.timeout,
        )

    def check_format(self) -> None:
        """UsageError for an output format that is not one."""
        if self.output_format not in OUTPUT_FORMATS:
            raise UsageError(
                f"unknown --output-format {self.output_format!r}",
                hint="one of " + ", ".join(OUTPUT_FORMATS),
            )
