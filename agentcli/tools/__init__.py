"""Tools: the API every tool implements (built-in or your own) and the built-in tools.

A tool of your own is a class like the built-ins (see `agentcli.tools.read_file`):

    from pydantic import Field
    from agentcli.tools import Resources, Risk, Tool, ToolContext, ToolInput, ToolOutput

    class TicketInput(ToolInput):
        ticket: str = Field(description="Ticket id, e.g. ABC-123.")

    class LookupTicket(Tool[TicketInput]):
        name = "lookup_ticket"
        description = "Fetch a ticket's title and status from the tracker. Read-only."
        input_model = TicketInput          # the JSON schema the model sees comes from this
        risk = Risk.EXTERNAL

        def resources(self, args: TicketInput, ctx: ToolContext) -> Resources:
            return Resources(reads=frozenset({f"ticket:{args.ticket}"}))

        async def call(self, args: TicketInput, ctx: ToolContext) -> ToolOutput:
            ...
            return ToolOutput(text="ABC-123: Crash on start (open)", source={"ticket": args.ticket})

Raise `agentcli.errors.ToolError(kind, message)` for failures the model should hear about.
Optional hooks: `validate`, `permission_target`, `preview`, `pre_state`, `operation_key`.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentcli.tools.base import (
        EXCLUSIVE,
        CommandSandbox,
        PermissionTarget,
        Resources,
        Risk,
        Tool,
        ToolContext,
        ToolInput,
        ToolOutput,
        file_resource,
        tree_resource,
    )

__all__ = [
    "EXCLUSIVE",
    "CommandSandbox",
    "PermissionTarget",
    "Resources",
    "Risk",
    "Tool",
    "ToolContext",
    "ToolInput",
    "ToolOutput",
    "file_resource",
    "tree_resource",
]


def __getattr__(name: str) -> Any:
    # Lazy: importing a submodule (e.g. tools.output) must not pay for pydantic, which
    # tools.base needs.
    if name in __all__:
        from agentcli.tools import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
