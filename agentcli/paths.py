"""Where agentcli keeps things: its data dir (journal, trust store, spill files, private git
dirs), the user's config file, and a workspace's own config files. A leaf module: the config,
the trust store and everything else that needs a path import it, not each other."""

from __future__ import annotations

import os
from pathlib import Path

from agentcli.errors import UsageError


def data_home() -> Path:
    """The data directory: `$AGENTCLI_HOME`, else the platform's user data dir."""
    override = os.environ.get("AGENTCLI_HOME")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("agentcli", appauthor=False))


def user_config_path() -> Path:
    override = os.environ.get("AGENTCLI_CONFIG_DIR")
    if override:
        return Path(override).expanduser() / "config.toml"
    from platformdirs import user_config_dir

    return Path(user_config_dir("agentcli", appauthor=False)) / "config.toml"


def project_config_paths(workspace: Path) -> tuple[Path, Path]:
    return workspace / ".agentcli" / "config.toml", workspace / ".agentcli" / "config.local.toml"


def resolve_workspace(cwd: Path | None) -> Path:
    """The workspace `-C/--cwd` names (default: the current directory), resolved; a usage error
    when it is not a directory, so no command reports on, or records against, a typo."""
    workspace = (cwd or Path.cwd()).expanduser()
    if not workspace.is_dir():
        raise UsageError(f"--cwd {workspace} is not a directory")
    return workspace.resolve()
