"""Which workspaces the user trusts with their in-repo config (the command is
`agentcli.ui.trust_command`).

A cloned repository can ship `.agentcli/config.toml` and `.agentcli/config.local.toml`. Until
the user trusts the workspace, `agentcli.config` drops whatever in them would let something run
without asking (allow rules, a looser mode, sandbox openings, acceptance commands).

The store is one small JSON file in the data dir, outside every repository:
`{"version": 1, "workspaces": {"/resolved/path": {"trusted_at": "<ISO 8601 UTC>"}}}`. Start-up
reads it once; changes happen under an exclusive lock and replace the file atomically
(`agentcli.jsonstore`), so concurrent `agentcli trust` calls lose no entry and a reader never
sees half a file.

Trusting a workspace does not approve the programs its files start: those are approved by
content (`agentcli.approvals`).

Trust is keyed by the workspace's resolved path (symlinks followed), exactly: not by its git
root and not inherited by subdirectories, because the files it vouches for are that directory's
own `.agentcli/` files, and trusting `~` must not trust every clone beneath it.

"Always" answers given in a workspace that is not trusted are saved outside it, in
`user_rules_path(workspace)`, which is read as the user's own config: the answer keeps working
for the user who gave it, and trusting a workspace is never a side effect of answering a prompt
(that would also switch on whatever its in-repo files allow).
"""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime
from pathlib import Path

from agentcli.errors import ConfigError
from agentcli.jsonstore import read_json, replace_json, store_lock
from agentcli.paths import data_home

STORE_NAME = "trusted_workspaces.json"
STORE_VERSION = 1


def store_path() -> Path:
    return data_home() / STORE_NAME


def workspace_key(workspace: Path) -> str:
    return str(workspace.expanduser().resolve())


def user_rules_path(workspace: Path) -> Path:
    """Where "always" answers go while `workspace` is not trusted (one file per workspace)."""
    digest = hashlib.sha256(os.fsencode(workspace_key(workspace))).hexdigest()[:32]
    return data_home() / "workspace-rules" / f"{digest}.toml"


def trusted_workspaces() -> dict[str, str]:
    """Every trusted workspace: resolved path → when it was trusted."""
    return _read(store_path())


def is_trusted(workspace: Path) -> bool:
    return workspace_key(workspace) in trusted_workspaces()


def set_trusted(workspace: Path, trusted: bool) -> bool:
    """Trust `workspace`, or stop trusting it. False when it already was that way."""
    path = store_path()
    key = workspace_key(workspace)
    with store_lock(path):
        entries = _read(path)
        if (key in entries) == trusted:
            return False
        if trusted:
            entries[key] = datetime.now(UTC).isoformat(timespec="seconds")
        else:
            del entries[key]
        _write(path, entries)
    return True


def _read(path: Path) -> dict[str, str]:
    data = read_json(
        path, what="the trust store", hint="fix or remove it (removing it untrusts every workspace)"
    )
    if data is None:
        return {}
    workspaces = data.get("workspaces") if isinstance(data, dict) else None
    if not isinstance(workspaces, dict):
        raise ConfigError(
            f'the trust store {path} is unreadable: no "workspaces" table',
            hint="fix or remove it (removing it untrusts every workspace)",
        )
    return {
        str(key): str(entry.get("trusted_at", "")) if isinstance(entry, dict) else ""
        for key, entry in workspaces.items()
    }


def _write(path: Path, entries: dict[str, str]) -> None:
    data = {
        "version": STORE_VERSION,
        "workspaces": {key: {"trusted_at": when} for key, when in sorted(entries.items())},
    }
    replace_json(path, data)
