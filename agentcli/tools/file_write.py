"""What `write_file` and `edit_file` share: the confined target path, its permission target and
resources, and the write planned in full once, right before the call runs.

`pre_state` makes the plan (refusing a stale or unread file) and hands its before/after hashes
to the journal; `call` then carries out that same plan, so what the journal recorded is what
gets written.
"""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path
from typing import Any, Generic, TypeVar, cast

from pydantic import Field, PrivateAttr

from agentcli.call_records import PreState
from agentcli.errors import ToolError, ToolErrorKind
from agentcli.tools.base import (
    PermissionTarget,
    Resources,
    Risk,
    Tool,
    ToolContext,
    ToolInput,
    file_resource,
)
from agentcli.tools.paths import display_path, resolve_confined
from agentcli.tools.textfile import WritePlan


class FileWriteInput(ToolInput):
    path: str = Field(
        description="File path, relative to the workspace root (or absolute inside it)."
    )
    _plan: Any = PrivateAttr(default=None)


InputT = TypeVar("InputT", bound=FileWriteInput)
PlanT = TypeVar("PlanT", bound=WritePlan)


def write_target(raw: str, ctx: ToolContext) -> Path:
    """The resolved path a write tool may write (workspace and added directories only)."""
    path = resolve_confined(raw, ctx.workspace, ctx.extra_dirs)
    if path.is_dir():
        raise ToolError(ToolErrorKind.INVALID_ARGUMENTS, f"{raw} is a directory, not a file")
    return path


class FileWriteTool(Tool[InputT], Generic[InputT, PlanT]):
    """A tool that writes one file of the workspace through a `WritePlan`."""

    risk = Risk.WRITE

    @abstractmethod
    def plan(self, args: InputT, ctx: ToolContext, *, check: bool) -> PlanT:
        """The whole write; with `check`, refuse a file this session has not read or that
        changed since (the stale-read guard)."""

    def verb(self, path: Path) -> str:
        """What the permission prompt says the call does to `path`."""
        return "write"

    def validate(self, args: InputT, ctx: ToolContext) -> None:
        write_target(args.path, ctx)

    def precheck(self, args: InputT, ctx: ToolContext) -> None:
        # The whole write, planned as it will be (stale-read guard included) and dropped:
        # `pre_state` plans it again once allowed, as the file may change while someone decides.
        self.plan(args, ctx, check=True)

    def permission_target(self, args: InputT, ctx: ToolContext) -> PermissionTarget:
        path = write_target(args.path, ctx)
        rel = display_path(path, ctx.workspace)
        return PermissionTarget(rule_class="write", subject=rel, summary=f"{self.verb(path)} {rel}")

    def resources(self, args: InputT, ctx: ToolContext) -> Resources:
        return Resources(writes=frozenset({file_resource(write_target(args.path, ctx))}))

    def pre_state(self, args: InputT, ctx: ToolContext) -> PreState:
        plan = args._plan = self.plan(args, ctx, check=True)
        return plan.pre_state()

    def planned(self, args: InputT, ctx: ToolContext) -> PlanT:
        """The plan `pre_state` made (made now if it was not), used once."""
        plan, args._plan = args._plan or self.plan(args, ctx, check=True), None
        return cast(PlanT, plan)
