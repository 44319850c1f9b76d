"""What `agentcli hooks` and the REPL's `/hooks` show: every hook with its event, matcher,
command, where it is configured and whether it runs here; and approving the repository's set."""

from __future__ import annotations

from pathlib import Path

from agentcli.hooks.catalog import Catalog, State, build_catalog
from agentcli.permissions.setup import uses_sandbox
from agentcli.settings import Settings


def workspace_catalog(settings: Settings, workspace: Path) -> Catalog:
    """The hooks a session started now in `workspace` with `settings` would have."""
    problem: str | None = None
    if not uses_sandbox(settings.permission_mode, settings):
        problem = f"{settings.permission_mode.value} mode, or sandbox.enabled = false"
    else:
        from agentcli.sandbox.support import probe_support

        support = probe_support()
        problem = None if support.ok else support.problem
    return build_catalog(settings, workspace, sandbox_problem=problem)


def hook_lines(catalog: Catalog) -> list[str]:
    """One line per hook, then what the repository's set needs (if it has hooks)."""
    if not catalog.entries and not catalog.unreadable:
        return ["no hooks are configured (README: Hooks)"]
    lines = [f"not a hook: {why}" for why in catalog.unreadable]
    for hook, state in catalog.entries:
        sandbox = "sandboxed" if hook.sandboxed else "unconfined"
        lines.append(
            f"{hook.describe()}  {hook.source.value} ({hook.origin}), {sandbox}: {state.value}"
        )
    if catalog.digest is not None:
        lines.append(_repository_line(catalog))
    return lines


def _repository_line(catalog: Catalog) -> str:
    states = {state for hook, state in catalog.entries if hook.from_repository}
    short = (catalog.digest or "")[:16]
    if State.UNTRUSTED in states:
        return (
            f"the repository's hooks (sha256 {short}…) run once you trust this workspace "
            "(`agentcli trust`) and approve them (`agentcli hooks approve`)"
        )
    if State.CHANGED in states:
        return (
            f"the repository's hooks changed since you approved them (now sha256 {short}…): "
            "approve them again with `agentcli hooks approve`"
        )
    if State.UNAPPROVED in states:
        return (
            f"the repository's hooks (sha256 {short}…) are not approved: "
            "`agentcli hooks approve` approves exactly these"
        )
    return f"the repository's hooks (sha256 {short}…) are approved"


def approved_lines(catalog: Catalog) -> list[str]:
    """What was approved, and whether it runs now."""
    repository = catalog.repository()
    if catalog.digest is None or not repository:
        return ["this workspace's repository has no hooks to approve"]
    lines = [f"approved {len(repository)} hook(s) (sha256 {catalog.digest[:16]}…):"]
    lines += [f"  {hook.describe()}  {hook.source.value} ({hook.origin})" for hook in repository]
    if not catalog.trusted:
        lines.append("this workspace is not trusted: they run once you trust it (`agentcli trust`)")
    return lines
