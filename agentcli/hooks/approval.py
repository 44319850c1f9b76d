"""Which set of a repository's hooks the user approved, per workspace: the approval is bound to
the content (a sha256 of the hook definitions and of the scripts they name, `Catalog.digest`),
so a set that changed since is not approved any more.

Kept in the one store of content-bound approvals (`agentcli.approvals`, beside the trust
store), as the subject `hooks .agentcli`: what `agentcli trust --revoke` withdraws with the rest
of the workspace's approvals, and what nothing but a person's `agentcli hooks approve` (or
`/hooks approve`) writes.
"""

from __future__ import annotations

from pathlib import Path

from agentcli import approvals

SUBJECT = approvals.Subject(kind="hooks", file=".agentcli")
"""The hooks of a workspace's own config files (`.agentcli/config.toml`, `config.local.toml`)."""


def store_path() -> Path:
    return approvals.store_path()


def approved_digest(workspace: Path) -> str | None:
    """The digest of the hook set last approved in `workspace` (None: never)."""
    content = approvals.approved_content(workspace, SUBJECT)
    digest = content.get("digest") if isinstance(content, dict) else None
    return digest if isinstance(digest, str) else None


def approved(workspace: Path, digest: str) -> bool:
    """Did the user approve exactly this set of hooks in `workspace`?"""
    return approved_digest(workspace) == digest


def approve(workspace: Path, digest: str) -> None:
    """Approve the set of hooks whose digest is `digest` in `workspace` (it replaces the set
    approved before)."""
    approvals.approve(workspace, [approvals.Content.of(SUBJECT, {"digest": digest})])
