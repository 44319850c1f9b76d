"""Which set of a repository's hooks the user approved, per workspace: the approval is bound to
the content (a sha256 of the hook definitions and of the scripts they name), so a set that
changed since is not approved any more.

A small interface (`approved`, `approved_digest`, `approve`) over one private JSON file in the
data dir, outside every repository (`$AGENTCLI_HOME/hook_approvals.json`, 0600):
`{"version": 1, "workspaces": {"/resolved/path": {"sha256": "...", "approved_at": "..."}}}`.
Changes happen under an exclusive lock and replace the file atomically. Keyed as the trust
store keys workspaces (`agentcli.trust.workspace_key`): by resolved path, exactly.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentcli.errors import ConfigError
from agentcli.paths import data_home
from agentcli.private import open_private, private_dir
from agentcli.trust import workspace_key

STORE_NAME = "hook_approvals.json"
STORE_VERSION = 1


def store_path() -> Path:
    return data_home() / STORE_NAME


def approved_digest(workspace: Path) -> str | None:
    """The digest of the hook set last approved in `workspace` (None: never)."""
    entry = _read(store_path()).get(workspace_key(workspace))
    return entry.get("sha256") if isinstance(entry, dict) else None


def approved(workspace: Path, digest: str) -> bool:
    """Did the user approve exactly this set of hooks in `workspace`?"""
    return approved_digest(workspace) == digest


def approve(workspace: Path, digest: str) -> None:
    """Approve the set of hooks whose digest is `digest` in `workspace` (it replaces the set
    approved before)."""
    path = store_path()
    with _locked(path):
        entries = _read(path)
        entries[workspace_key(workspace)] = {
            "sha256": digest,
            "approved_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        _write(path, entries)


def _read(path: Path) -> dict[str, Any]:
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"the hook approvals {path} are unreadable: {exc}",
            hint="fix or remove the file (removing it withdraws every approval)",
        ) from exc
    workspaces = data.get("workspaces") if isinstance(data, dict) else None
    if not isinstance(workspaces, dict):
        raise ConfigError(
            f'the hook approvals {path} are unreadable: no "workspaces" table',
            hint="fix or remove the file (removing it withdraws every approval)",
        )
    return workspaces


def _write(path: Path, entries: dict[str, Any]) -> None:
    data = {"version": STORE_VERSION, "workspaces": dict(sorted(entries.items()))}
    temp = path.with_name(f".{STORE_NAME}.{os.getpid()}.tmp")
    try:
        with open_private(temp) as handle:
            handle.write((json.dumps(data, indent=2) + "\n").encode())
            handle.flush()
            os.fsync(handle.fileno())
        temp.replace(path)
    except BaseException:
        temp.unlink(missing_ok=True)
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
