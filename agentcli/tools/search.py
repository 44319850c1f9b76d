"""What `glob` and `grep` share: the search root (workspace-confined), the resources and the
permission target that follow from it, the files the policy withholds from the results
(`agentcli.permissions.screen`), and the choice between ripgrep and the Python fallback."""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path
from typing import TypeVar

from agentcli.permissions.screen import SearchScreen
from agentcli.tools.base import (
    PermissionTarget,
    Resources,
    Risk,
    Tool,
    ToolContext,
    ToolInput,
    tree_resource,
)
from agentcli.tools.paths import display_path, resolve_confined
from agentcli.tools.ripgrep import find_rg


class SearchInput(ToolInput):
    """The fields every search tool has (each tool redeclares them with its own description)."""

    pattern: str
    path: str | None = None


SearchInputT = TypeVar("SearchInputT", bound=SearchInput)


def search_root(raw: str | None, ctx: ToolContext) -> Path:
    return resolve_confined(raw or ".", ctx.workspace, ctx.extra_dirs)


def search_screen(root: Path, ctx: ToolContext) -> SearchScreen:
    """The files the session's policy withholds from a search under `root`."""
    if ctx.policy is None:
        return SearchScreen()
    return ctx.policy.search_screen(display_path(root, ctx.workspace))


def names_hidden(*parts: str | None) -> bool:
    """Whether a pattern or path explicitly names a hidden file or directory."""
    return any(
        segment.startswith(".") and segment not in (".", "..")
        for part in parts
        if part
        for segment in part.replace("\\", "/").split("/")
    )


class SearchTool(Tool[SearchInputT]):
    """A read-only tool over the tree under `path`; `rg()` is the ripgrep binary or None."""

    risk = Risk.READ

    def __init__(self, *, rg_binary: str | None = None, use_rg: bool = True) -> None:
        self._rg_binary = rg_binary
        self._use_rg = use_rg

    def rg(self, ctx: ToolContext) -> str | None:
        """The ripgrep binary to run (unconfined): never one in the workspace or the other
        directories the session may write."""
        if not self._use_rg:
            return None
        return self._rg_binary or find_rg((ctx.workspace, *ctx.extra_dirs))

    @abstractmethod
    def summary(self, args: SearchInputT, shown_root: str) -> str:
        """The permission prompt's one-line summary of the search."""

    def permission_target(self, args: SearchInputT, ctx: ToolContext) -> PermissionTarget:
        rel = display_path(search_root(args.path, ctx), ctx.workspace)
        return PermissionTarget(rule_class="read", subject=rel, summary=self.summary(args, rel))

    def resources(self, args: SearchInputT, ctx: ToolContext) -> Resources:
        return Resources(reads=frozenset({tree_resource(search_root(args.path, ctx))}))
