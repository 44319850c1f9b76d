"""Workspace confinement for file tools: every path is checked on its resolved real path."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from pathlib import Path

from agentcli.errors import ToolError, ToolErrorKind
from agentcli.fsnames import from_model
from agentcli.safe_read import Inside, Reason, Unreadable


def confinement_roots(workspace: Path, extra_roots: Iterable[Path] = ()) -> list[Path]:
    """The real paths file tools may touch: the workspace first, then the added directories."""
    return [Path(os.path.realpath(workspace)), *(Path(os.path.realpath(r)) for r in extra_roots)]


@functools.lru_cache(maxsize=64)
def inside_of(roots: tuple[Path, ...]) -> Inside:
    """The roots a file tool may open files under, resolved once: this runs for every read,
    and the directories of a session do not move while it runs (were one replaced, its paths
    would resolve elsewhere and be refused, never let through)."""
    return Inside.of(*roots)


def resolve_confined(raw: str, workspace: Path, extra_roots: Iterable[Path] = ()) -> Path:
    """Resolve `raw` (relative to the workspace, or absolute) and refuse anything that lands
    outside the workspace and the extra roots: `..`, absolute paths elsewhere, and symlinks
    whose target is outside all count."""
    if not raw or "\x00" in raw:
        raise ToolError(ToolErrorKind.INVALID_ARGUMENTS, f"invalid path {raw!r}")
    # Strings, not pathlib: this runs for every file tool call (twice for a read), and building
    # Path objects (and walking `.parents`) cost as much as the system calls themselves.
    candidate = str(Path(raw).expanduser()) if raw.startswith("~") else raw
    # An absolute candidate replaces the workspace, as with Path's `/`.
    real = os.path.realpath(os.path.join(workspace, _named(candidate, workspace)))  # noqa: PTH118
    roots = [os.path.realpath(workspace), *(os.path.realpath(r) for r in extra_roots)]
    if not any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in roots):
        raise ToolError(
            ToolErrorKind.PERMISSION_DENIED,
            f"{raw} resolves to {real}, which is outside the workspace {roots[0]}; "
            "file tools only work inside the workspace",
        )
    return Path(real)


def _named(candidate: str, workspace: Path) -> str:
    """The name `candidate` means. The model sees a name that is not UTF-8 with its bytes
    written `\\xff` (`fsnames.for_model`) and gives it back so; that form is read as the bytes
    when no file has the literal name and the decoded one exists (or, for a new file, when
    only the decoded one's directory does)."""
    decoded = from_model(candidate)
    if decoded is None:
        return candidate
    literal = os.path.join(workspace, candidate)  # noqa: PTH118 - see resolve_confined
    named = os.path.join(workspace, decoded)  # noqa: PTH118
    if os.path.lexists(literal):
        return candidate
    if os.path.lexists(named) or (_parent_is_dir(named) and not _parent_is_dir(literal)):
        return decoded
    return candidate


def _parent_is_dir(path: str) -> bool:
    return os.path.isdir(os.path.dirname(path))  # noqa: PTH112, PTH120


def display_path(path: Path, workspace: Path) -> str:
    """A path as the user and model should see it: workspace-relative when inside."""
    try:
        return str(path.relative_to(Path(os.path.realpath(workspace))))
    except ValueError:
        return str(path)


def refusal(exc: Unreadable, shown: str, what: str) -> ToolError:
    """The typed tool error for a file `agentcli.safe_read` would not open: one that is no
    regular file (a named pipe, a device) is the wrong argument, one that leads outside the
    workspace is not permitted. `what`: what the tool does with regular files
    (`read_file reads`)."""
    if exc.reason in (Reason.OUTSIDE, Reason.LINK):
        return ToolError(
            ToolErrorKind.PERMISSION_DENIED,
            f"{shown} is {exc.why}; file tools only work inside the workspace",
        )
    return ToolError(
        ToolErrorKind.INVALID_ARGUMENTS, f"{shown} is {exc.why}; {what} regular files only"
    )
