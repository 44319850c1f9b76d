"""The `skill` tool: the model loads a skill it was told of in the system prompt.

It returns the skill's instructions (its arguments in place) wrapped with the skill's directory
and the files beside its SKILL.md, which the model reads with `read_file` when the instructions
call for them (a user skill's directory is readable for that). The skill's `allowed-tools` are
granted for the rest of the task, as for `/name`. Its shell lines are not run here: they are
left for the model to run with the shell tool, where the permission policy decides them like
any other command.
"""

from __future__ import annotations

from pydantic import Field

from agentcli.errors import ToolError, ToolErrorKind
from agentcli.permissions.rules import RuleKind
from agentcli.skills.catalog import Catalog
from agentcli.skills.expand import Invocation, expanded_pieces, for_the_model, wrapped
from agentcli.skills.grants import TURN_SOURCE
from agentcli.tools.base import PermissionTarget, Risk, Tool, ToolContext, ToolInput, ToolOutput

NAME = "skill"


class SkillInput(ToolInput):
    name: str = Field(min_length=1, description="The skill's name, as listed.")
    arguments: str | None = Field(
        default=None, description="What the skill works on, as a user would type after /name."
    )


class SkillTool(Tool[SkillInput]):
    name = NAME
    description = (
        "Load a skill listed in the system prompt: returns its instructions (follow them for "
        "the rest of the task) and the directory of its files, which you read with read_file "
        "when the instructions call for them. Use it before starting a task its description "
        "fits. Commands the instructions show are for you to run with the shell tool."
    )
    input_model = SkillInput
    risk = Risk.READ

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def permission_target(self, args: SkillInput, ctx: ToolContext) -> PermissionTarget:
        return PermissionTarget(
            rule_class=NAME, subject=args.name, summary=f"load skill {args.name}"
        )

    async def call(self, args: SkillInput, ctx: ToolContext) -> ToolOutput:
        definition = self.catalog.find(args.name.removeprefix("/"))
        if definition is None or not definition.model_invocable:
            offered = ", ".join(d.name for d in self.catalog.model_skills()) or "none"
            raise ToolError(
                ToolErrorKind.NOT_FOUND, f"there is no skill {args.name!r}; skills: {offered}"
            )
        invoked = Invocation(definition, args.arguments or "")
        try:
            pieces = expanded_pieces(invoked, ctx.workspace)
        except Exception as exc:  # the file went away or broke since the session started
            raise ToolError(ToolErrorKind.NOT_FOUND, str(exc)) from exc
        if ctx.policy is not None:
            for rule in definition.grants:
                ctx.policy.add_rule(RuleKind.ALLOW, rule, TURN_SOURCE)
        granted = ""
        if definition.grants and ctx.policy is not None:
            rules = ", ".join(definition.grants)
            granted = f"\n\n(Allowed without asking for the rest of this task: {rules})"
        text = wrapped(definition, for_the_model(pieces), loaded=True) + granted
        return ToolOutput(
            text=text, source={"skill": definition.name, "path": str(definition.path)}
        )
