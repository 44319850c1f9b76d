"""Which workspaces the user trusts with their in-repo config (the command is
`agentcli.ui.trust_command`).

A cloned repository can ship `.agentcli/config.toml` and `.agentcli/config.local.toml`. Until
the user trusts the workspace, `agentcli.config` drops whatever in them would let something run
without asking (allow rules, a looser mode, sandbox openings, acceptance commands).

The store is one small JSON file in the data dir, outside every repository:
`{"version": 1, "workspaces": {"/resolved/path": {"trusted_at": "<ISO 8601 UTC>"}}}`. Start-up
reads it once; changes happen under an exclusive lock and replace the file atomically, so
concurrent `agentcli trust` calls lose no entry and a reader never sees half a file.

Trust is keyed by the workspace's resolved path (symlinks followed), exactly: not by its git
root and not inherited by subdirectories, because the files it vouches for are that directory's
own `.agentcli/` files, and trusting `~` must not trust every clone beneath it.

"Always" answers given in a workspace that is not trusted are saved outside it, in
`user_rules_path(workspace)`, which is read as the user's own config: the answer keeps working
for the user who gave it, and trusting a workspace is never a side effect of answering a prompt
(that would also switch on whatever its in-repo files allow).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentcli.errors import ConfigError
from agentcli.paths import data_home
from agentcli.private import private_dir

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
    with _locked(path):
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
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except NotADirectoryError as exc:
        raise ConfigError(
            f"the data directory {path.parent} cannot be used: it is not a directory",
            hint="AGENTCLI_HOME (or the user data directory) must be a writable directory",
        ) from exc
    except (OSError, ValueError) as exc:
        raise _broken(path, str(exc)) from exc
    workspaces = data.get("workspaces") if isinstance(data, dict) else None
    if not isinstance(workspaces, dict):
        raise _broken(path, 'no "workspaces" table')
    return {
        str(key): str(entry.get("trusted_at", "")) if isinstance(entry, dict) else ""
        for key, entry in workspaces.items()
    }


def _broken(path: Path, why: str) -> ConfigError:
    return ConfigError(
        f"the trust store {path} is unreadable: {why}",
        hint="fix or remove it (removing it untrusts every workspace)",
    )


def _write(path: Path, entries: dict[str, str]) -> None:
    data = {
        "version": STORE_VERSION,
        "workspaces": {key: {"trusted_at": when} for key, when in sorted(entries.items())},
    }
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{STORE_NAME}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        Path(temp).replace(path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Writers serialize on a lock file beside the store (the store itself gets replaced)."""
    private_dir(path.parent)
    fd = os.open(path.with_name(f"{path.name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
