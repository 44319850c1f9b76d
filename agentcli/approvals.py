"""Approvals bound to content: which program-starting content of a workspace the user approved.

Trusting a workspace (`agentcli.trust`) says its own config may apply. Some of that config
makes agentcli start programs, unconfined (a `.mcp.json` server, `[mcp_servers]` in its
`.agentcli` files; project hooks later): such content is used only as the user approved it.
Anything that changes it (a `git pull`, a model's write, another program) holds it back until
the user approves it again (`agentcli trust` shows what changed and what it starts).

An approval is keyed by the workspace (its resolved path, as trust is), a `Subject` (what kind
of program-starting content, in which file) and the sha256 of that content in a canonical form
(JSON, keys sorted), so a reformatted file is the same content and a changed command is not.
The approved content is kept with it, to show what changed since.

The store is one JSON file beside the trust store, in the data dir (hidden from every sandboxed
command, and a write there always asks):

    {"version": 1, "workspaces": {"/resolved/ws": {"mcp .mcp.json": {
        "sha256": "…", "approved_at": "<ISO 8601 UTC>", "content": …}}}}

Changes happen under an exclusive lock and replace the file atomically (`agentcli.jsonstore`).
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentcli.errors import ConfigError
from agentcli.jsonstore import read_json, replace_json, store_lock
from agentcli.paths import data_home

STORE_NAME = "approved_programs.json"
STORE_VERSION = 1


@dataclass(frozen=True, slots=True, order=True)
class Subject:
    """What program-starting content, where: `kind` (`mcp`; `hooks`…) of the workspace file
    `file` (relative to the workspace, e.g. `.mcp.json`, `.agentcli/config.toml`)."""

    kind: str
    file: str

    @property
    def key(self) -> str:
        return f"{self.kind} {self.file}"


@dataclass(frozen=True, slots=True)
class Content:
    """The program-starting content of one subject, as found now (JSON-able)."""

    subject: Subject
    data: Any

    @classmethod
    def of(cls, subject: Subject, data: Any) -> Content:
        """`data` as JSON holds it (a TOML date becomes its text): what is hashed is what is
        kept."""
        return cls(subject, json.loads(json.dumps(data, default=str)))

    @property
    def digest(self) -> str:
        return digest_of(self.data)


class Status(enum.StrEnum):
    APPROVED = "approved"
    CHANGED = "changed"
    """Approved once, with other content: this content is not."""
    NEW = "new"
    """Never approved in this workspace."""


@dataclass(frozen=True, slots=True)
class Approval:
    sha256: str
    approved_at: str
    content: Any


def digest_of(data: Any) -> str:
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def store_path() -> Path:
    return data_home() / STORE_NAME


def _workspace_key(workspace: Path) -> str:
    return str(workspace.expanduser().resolve())


def approvals(workspace: Path) -> dict[str, Approval]:
    """Every approval kept for `workspace`, by `Subject.key`."""
    return _read(store_path()).get(_workspace_key(workspace), {})


def status(workspace: Path, content: Content) -> Status:
    found = approvals(workspace).get(content.subject.key)
    if found is None:
        return Status.NEW
    return Status.APPROVED if found.sha256 == content.digest else Status.CHANGED


def approved_content(workspace: Path, subject: Subject) -> Any | None:
    """The content last approved for `subject` (None: never approved)."""
    found = approvals(workspace).get(subject.key)
    return None if found is None else found.content


def approve(workspace: Path, contents: Iterable[Content]) -> None:
    """Approve each of `contents` as it is now (replacing what was approved for its subject)."""
    path = store_path()
    key = _workspace_key(workspace)
    when = datetime.now(UTC).isoformat(timespec="seconds")
    with store_lock(path):
        entries = _read(path)
        mine = dict(entries.get(key, {}))
        for content in contents:
            mine[content.subject.key] = Approval(content.digest, when, content.data)
        entries[key] = mine
        _write(path, entries)


def forget(workspace: Path) -> bool:
    """Drop every approval of `workspace` (when it stops being trusted). False: there was none."""
    path = store_path()
    key = _workspace_key(workspace)
    with store_lock(path):
        entries = _read(path)
        if key not in entries:
            return False
        del entries[key]
        _write(path, entries)
    return True


def _read(path: Path) -> dict[str, dict[str, Approval]]:
    data = read_json(path, what="the approvals store")
    if data is None:
        return {}
    workspaces = data.get("workspaces") if isinstance(data, dict) else None
    if not isinstance(workspaces, dict):
        raise _broken(path, 'no "workspaces" table')
    found: dict[str, dict[str, Approval]] = {}
    for workspace, subjects in workspaces.items():
        if not isinstance(subjects, dict):
            raise _broken(path, f"the entry of {workspace} is not a table")
        kept: dict[str, Approval] = {}
        for key, entry in subjects.items():
            digest = entry.get("sha256") if isinstance(entry, dict) else None
            if not isinstance(digest, str):
                raise _broken(path, f"{workspace}: {key} has no sha256")
            kept[str(key)] = Approval(
                digest, str(entry.get("approved_at", "")), entry.get("content")
            )
        found[str(workspace)] = kept
    return found


def _broken(path: Path, why: str) -> ConfigError:
    return ConfigError(
        f"the approvals store {path} is unreadable: {why}",
        hint="fix or remove it (removing it withdraws every approval: agentcli trust again)",
    )


def _write(path: Path, entries: dict[str, dict[str, Approval]]) -> None:
    data = {
        "version": STORE_VERSION,
        "workspaces": {
            workspace: {
                key: {"sha256": a.sha256, "approved_at": a.approved_at, "content": a.content}
                for key, a in sorted(subjects.items())
            }
            for workspace, subjects in sorted(entries.items())
            if subjects
        },
    }
    replace_json(path, data)
