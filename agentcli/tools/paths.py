"""Workspace confinement for file tools: every path is checked on its resolved real path."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from agentcli.errors import ToolError, ToolErrorKind


def confinement_roots(workspace: Path, extra_roots: Iterable[Path] = ()) -> list[Path]:
    """The real paths file tools may touch: the workspace first, then the added directories."""
    return [Path(os.path.realpath(workspace)), *(Path(os.path.realpath(r)) for r in extra_roots)]


def resolve_confined(raw: str, workspace: Path, extra_roots: Iterable[Path] = ()) -> Path:
    """Resolve `raw` (relative to the workspace, or absolute) and refuse anything that lands
    outside the workspace and the extra roots: `..`, absolute paths elsewhere, and symlinks
    whose target is outside all count."""
    if not raw or "\x00" in raw:
        raise ToolError(ToolErrorKind.INVALID_ARGUMENTS, f"invalid path {raw!r}")
    candidate = Path(raw).expanduser() if raw.startswith("~") else Path(raw)
    if not candidate.is_absolute():
        candidate = workspace / candidate
    real = Path(os.path.realpath(candidate))
    roots = confinement_roots(workspace, extra_roots)
    if not any(real == root or root in real.parents for root in roots):
        raise ToolError(
            ToolErrorKind.PERMISSION_DENIED,
            f"{raw} resolves to {real}, which is outside the workspace {roots[0]}; "
            "file tools only work inside the workspace",
        )
    return real


def display_path(path: Path, workspace: Path) -> str:
    """A path as the user and model should see it: workspace-relative when inside."""
    try:
        return str(path.relative_to(Path(os.path.realpath(workspace))))
    except ValueError:
        return str(path)
