"""The Tool API: what every tool (built-in or user-written) declares and implements.

A tool is a class with a name, a description (prompt text: review it as such), a pydantic input
model (`extra="forbid"`; the JSON schema the model sees is derived from it), a risk class, the
resources it touches (for scheduling parallel calls), and an async `call`. Optional hooks:
`validate` (tool-specific checks before permission), `permission_target` (what permission rules
match against), `preview` (what the permission prompt shows), `pre_state` (what the journal
records before a side effect), `operation_key` (idempotency for external side effects).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from agentcli.call_records import PreState
from agentcli.confinement import CommandSandbox, Confinement
from agentcli.errors import ToolError, ToolErrorKind
from agentcli.model import ToolSpec
from agentcli.pydantic_plugins import skip_plugin_discovery
from agentcli.tools.output import DEFAULT_OUTPUT_CAP
from agentcli.vocabulary import PermissionTarget, Risk

if TYPE_CHECKING:
    from agentcli.permissions import PermissionPolicy
    from agentcli.task_scope import TaskScope

__all__ = ["CommandSandbox", "PermissionTarget", "Risk"]  # re-exported: part of the tool API

skip_plugin_discovery()  # before any tool's input model builds its validator


class ToolInput(BaseModel):
    """Base of every tool input model: unknown fields are rejected."""

    # Its validator is built when a call is first validated: the model API is sent the schema
    # kept by `agentcli.tools.input_schema` (after the first run of this code).
    model_config = ConfigDict(extra="forbid", defer_build=True)


InputT = TypeVar("InputT", bound=ToolInput)


@dataclass(frozen=True, slots=True)
class Resources:
    """What a call reads and writes, for deciding which calls may run at the same time.

    Resource names are strings. `file:/abs/path` names one file and `tree:/abs/dir` everything
    under a directory (`tree:/` is everything), so a grep over `src/` waits for an earlier edit
    of `src/a.py`. Any other name (a tool's own, e.g. `db:users`) only matches itself.
    `exclusive` calls run alone.
    """

    reads: frozenset[str] = frozenset()
    writes: frozenset[str] = frozenset()
    exclusive: bool = False

    def conflicts_with(self, other: Resources) -> bool:
        if self.exclusive or other.exclusive:
            return True
        return _any_overlap(self.writes, other.reads | other.writes) or _any_overlap(
            other.writes, self.reads | self.writes
        )


def file_resource(path: Path) -> str:
    """The resource name of one file (use the resolved real path)."""
    return f"file:{path}"


def tree_resource(path: Path) -> str:
    """The resource name of everything under a directory (use the resolved real path)."""
    return f"tree:{path}"


def _any_overlap(left: frozenset[str], right: frozenset[str]) -> bool:
    return any(_overlaps(a, b) for a in left for b in right)


def _overlaps(a: str, b: str) -> bool:
    if a == b:
        return True
    kind_a, _, path_a = a.partition(":")
    kind_b, _, path_b = b.partition(":")
    if {kind_a, kind_b} - {"file", "tree"}:
        return False
    return (kind_a == "tree" and _is_under(path_b, path_a)) or (
        kind_b == "tree" and _is_under(path_a, path_b)
    )


def _is_under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


EXCLUSIVE = Resources(exclusive=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolOutput:
    """A successful call's result. `source` says where the data came from."""

    text: str
    source: dict[str, Any] = field(default_factory=dict)
    is_error: bool = False
    """The call ran as asked but its result reports a failure the model must notice (e.g. a
    command that exited non-zero). The call still counts as executed."""


@dataclass(kw_only=True)
class ToolContext:
    """Per-session state the tools share."""

    workspace: Path
    data_dir: Path
    """Where spill files of long outputs go (inside the session's data directory)."""
    extra_dirs: tuple[Path, ...] = ()
    read_roots: tuple[Path, ...] = ()
    """Directories `read_file` may also read, never write (the skills' own directories)."""
    read_hashes: dict[Path, str] = field(default_factory=dict)
    """Content hash of each file as this session last read or wrote it (stale-read guard)."""
    sandbox: CommandSandbox | None = None
    """When set, shell commands run through it."""
    confinement: Confinement | None = None
    """How this call's command runs, as its permission decision said (the runtime sets it on
    the call's own copy of the context); None when the policy does not confine commands."""
    output_cap: int = DEFAULT_OUTPUT_CAP
    """Maximum characters of one tool result; longer output is cut and spilled to a file."""
    policy: PermissionPolicy | None = None
    """The session's permission policy (the ToolRuntime sets it): the search tools ask it which
    files to leave out of their results (`read(...)` deny and ask rules)."""
    call_id: str = ""
    """The call this context was made for (the runtime sets it on the call's own copy)."""
    task: TaskScope | None = None
    """The task the call runs in (the runtime sets it): what a tool acting on the task's behalf,
    the `agent` tool, needs of it. None outside a task."""


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The pydantic schema without what only costs tokens: titles, and `anyOf [X, null]` with a
    null default for optional fields (they are simply not required)."""
    schema = {k: v for k, v in schema.items() if k != "title"}
    for key in ("properties", "$defs"):
        if key in schema:
            schema[key] = {name: _compact_field(sub) for name, sub in schema[key].items()}
    return schema


def _compact_field(field_schema: dict[str, Any]) -> dict[str, Any]:
    out = compact_schema(field_schema)
    options = out.get("anyOf")
    if isinstance(options, list) and out.get("default", ...) is None:
        rest = [o for o in options if o != {"type": "null"}]
        if len(rest) == 1 and len(options) == 2:
            del out["anyOf"], out["default"]
            out = {**rest[0], **out}
    return out


class Tool(ABC, Generic[InputT]):
    """Base class of every tool."""

    name: ClassVar[str]
    description: ClassVar[str]
    input_model: ClassVar[type[ToolInput]]
    risk: ClassVar[Risk]

    def spec(self) -> ToolSpec:
        from agentcli.tools.input_schema import input_schema

        schema = compact_schema(input_schema(self.input_model))
        return ToolSpec(name=self.name, description=self.description, input_schema=schema)

    def validate(self, args: InputT, ctx: ToolContext) -> None:
        """Tool-specific checks after schema validation. Raise ToolError to refuse."""

    def precheck(self, args: InputT, ctx: ToolContext) -> None:
        """Checks of the workspace as it is now that would refuse the call when it runs (a
        file this session has not read, an edit that does not apply), made when the policy
        would ask someone, before they are asked: nobody approves a call that cannot run.
        Skipped when an earlier call of the same response touches what this one does (it
        runs first and may change the answer); the call checks again when it runs. Raise
        ToolError to refuse."""

    def permission_target(self, args: InputT, ctx: ToolContext) -> PermissionTarget:
        return PermissionTarget(rule_class=self.name, subject="*", summary=self.name)

    def resources(self, args: InputT, ctx: ToolContext) -> Resources:
        """Default: read-only tools share everything; anything else runs alone."""
        return Resources() if self.risk is Risk.READ else EXCLUSIVE

    def preview(self, args: InputT, ctx: ToolContext) -> str:
        """What will happen, shown when the user is asked for permission (a diff, a command
        and its directory). Empty when the permission summary says it all."""
        return ""

    def pre_state(self, args: InputT, ctx: ToolContext) -> PreState | None:
        """What the journal records before the call runs (write-ahead): for a file write, its
        path and content hashes before and after (`FileWrite`), so crash recovery can tell
        whether the write happened. None for calls with nothing to reconcile."""
        return None

    def operation_key(self, args: InputT) -> str | None:
        """A business idempotency key for calls with external side effects, or None."""
        return None

    async def reconcile(self, args: InputT, ctx: ToolContext) -> ToolOutput | None:
        """For an operation whose earlier attempt has an unknown outcome (interrupted): find
        out, without repeating it, whether it took effect. Return its result if it did, None if
        it did not; raise ToolError when it cannot tell (the default)."""
        raise ToolError(ToolErrorKind.OUTCOME_UNKNOWN, f"{self.name} has no way to check")

    @abstractmethod
    async def call(self, args: InputT, ctx: ToolContext) -> ToolOutput:
        """Do the work. Raise ToolError for failures the model should hear about."""
