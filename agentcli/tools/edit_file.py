"""`edit_file`: replace an exact piece of text in a file the session has read.

The edit is computed once, right before it runs (so a second edit of the same file in one
response applies to the result of the first), handed to the journal as `pre_state`, and written
atomically; the file's encoding and line endings are kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

from agentcli.errors import ToolError, ToolErrorKind
from agentcli.tools.base import ToolContext, ToolOutput
from agentcli.tools.edit_match import Edit, apply_edit, small_diff
from agentcli.tools.file_write import FileWriteInput, FileWriteTool, write_target
from agentcli.tools.paths import confinement_roots, display_path
from agentcli.tools.textfile import (
    WritePlan,
    check_fresh,
    commit,
    decode,
    looks_binary,
    read_nofollow,
)


class EditFileInput(FileWriteInput):
    old_string: str = Field(
        description="The exact text to replace, as it appears in the file (without read_file's "
        "line-number prefixes), including enough surrounding lines to match exactly once."
    )
    new_string: str = Field(description="The text to put in its place.")
    replace_all: bool = Field(
        default=False, description="Replace every occurrence instead of exactly one."
    )


@dataclass(slots=True)
class EditPlan(WritePlan):
    edit: Edit


class EditFile(FileWriteTool[EditFileInput, EditPlan]):
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

    def verb(self, path: Path) -> str:
        return "edit"

    def validate(self, args: EditFileInput, ctx: ToolContext) -> None:
        super().validate(args, ctx)
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

    def preview(self, args: EditFileInput, ctx: ToolContext) -> str:
        try:
            plan = self.plan(args, ctx, check=False)
        except ToolError as exc:
            return f"(the edit does not apply to the current file: {exc.message})"
        assert plan.before is not None
        return small_diff(
            decode(plan.before).text, decode(plan.after).text, plan.shown, max_lines=None
        )

    async def call(self, args: EditFileInput, ctx: ToolContext) -> ToolOutput:
        plan = self.planned(args, ctx)
        edit = plan.edit
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

    def plan(self, args: EditFileInput, ctx: ToolContext, *, check: bool) -> EditPlan:
        path = write_target(args.path, ctx)
        shown = display_path(path, ctx.workspace)
        before = read_nofollow(path, confinement_roots(ctx.workspace, ctx.extra_dirs))
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
        return EditPlan(path=path, shown=shown, before=before, after=after, edit=edit)
