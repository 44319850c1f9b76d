"""`edit_file`: replace an exact piece of text in a file the session has read.

The edit is computed once, right before it runs (so a second edit of the same file in one
response applies to the result of the first), handed to the journal as `pre_state`, and written
atomically; the file's encoding and line endings are kept.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, PrivateAttr

from agentcli.errors import ToolError, ToolErrorKind
from agentcli.tools.base import (
    PermissionTarget,
    Resources,
    Risk,
    Tool,
    ToolContext,
    ToolInput,
    ToolOutput,
    file_resource,
)
from agentcli.tools.edit_match import Edit, apply_edit, small_diff
from agentcli.tools.paths import confinement_roots, display_path
from agentcli.tools.textfile import (
    WritePlan,
    check_fresh,
    commit,
    decode,
    looks_binary,
    read_nofollow,
)
from agentcli.tools.write_file import write_permission, write_target


class EditFileInput(ToolInput):
    path: str = Field(
        description="File path, relative to the workspace root (or absolute inside it)."
    )
    old_string: str = Field(
        description="The exact text to replace, as it appears in the file (without read_file's "
        "line-number prefixes), including enough surrounding lines to match exactly once."
    )
    new_string: str = Field(description="The text to put in its place.")
    replace_all: bool = Field(
        default=False, description="Replace every occurrence instead of exactly one."
    )
    _planned: tuple[WritePlan, Edit] | None = PrivateAttr(default=None)


class EditFile(Tool[EditFileInput]):
    name = "edit_file"
    description = (
        "Replace exact text in a file: `old_string` must occur exactly once (or set "
        "`replace_all` to replace every occurrence). Matching is exact, whitespace included; "
        "when nothing matches, the error shows the closest lines of the file, and when several "
        "places match it says how many and where. Read the file with read_file in this session "
        "first; the call fails with a conflict if the file changed since. The file keeps its "
        "encoding and line endings. Returns a small diff of the change. Writes to the "
        "workspace only."
    )
    input_model = EditFileInput
    risk = Risk.WRITE

    def validate(self, args: EditFileInput, ctx: ToolContext) -> None:
        write_target(args.path, ctx)
        if not args.old_string:
            raise ToolError(
                ToolErrorKind.INVALID_ARGUMENTS,
                "field 'old_string' is empty; give the exact text to replace (use write_file "
                "to create or fully rewrite a file)",
            )
        if args.old_string == args.new_string:
            raise ToolError(
                ToolErrorKind.INVALID_ARGUMENTS,
                "old_string and new_string are identical; there is nothing to change",
            )

    def permission_target(self, args: EditFileInput, ctx: ToolContext) -> PermissionTarget:
        return write_permission(write_target(args.path, ctx), ctx, "edit")

    def resources(self, args: EditFileInput, ctx: ToolContext) -> Resources:
        return Resources(writes=frozenset({file_resource(write_target(args.path, ctx))}))

    def preview(self, args: EditFileInput, ctx: ToolContext) -> str:
        try:
            plan, _ = self._plan(args, ctx, check=False)
        except ToolError as exc:
            return f"(the edit does not apply to the current file: {exc.message})"
        assert plan.before is not None
        return small_diff(decode(plan.before).text, decode(plan.after).text, plan.shown)

    def pre_state(self, args: EditFileInput, ctx: ToolContext) -> dict[str, Any]:
        args._planned = self._plan(args, ctx, check=True)
        return args._planned[0].pre_state()

    async def call(self, args: EditFileInput, ctx: ToolContext) -> ToolOutput:
        planned, args._planned = args._planned or self._plan(args, ctx, check=True), None
        plan, edit = planned
        commit(plan, ctx, confinement_roots(ctx.workspace, ctx.extra_dirs))
        assert plan.before is not None
        diff = small_diff(decode(plan.before).text, edit.text, plan.shown)
        where = "occurrence" if edit.replacements == 1 else "occurrences"
        return ToolOutput(
            text=f"edited {plan.shown}: replaced {edit.replacements} {where} "
            f"(first at line {edit.first_line})\n{diff}",
            source={
                "path": plan.shown,
                "first_line": edit.first_line,
                "replacements": edit.replacements,
            },
        )

    def _plan(
        self, args: EditFileInput, ctx: ToolContext, *, check: bool
    ) -> tuple[WritePlan, Edit]:
        path = write_target(args.path, ctx)
        shown = display_path(path, ctx.workspace)
        before = read_nofollow(path)
        if before is None:
            raise ToolError(
                ToolErrorKind.NOT_FOUND,
                f"{shown} does not exist; use write_file to create a new file",
            )
        if looks_binary(before):
            raise ToolError(
                ToolErrorKind.INVALID_ARGUMENTS, f"{shown} is a binary file; it cannot be edited"
            )
        if check:
            check_fresh(path, before, ctx, shown)
        content = decode(before)
        edit = apply_edit(
            content.text,
            args.old_string,
            args.new_string,
            replace_all=args.replace_all,
            newline=content.newline,
            shown=shown,
        )
        after = content.encode(edit.text, shown)
        return WritePlan(path=path, shown=shown, before=before, after=after), edit
