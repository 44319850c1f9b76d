"""`write_file`: create a file (and its parent directories) or overwrite one the session has read.

The write is planned in full before it runs (`pre_state` gives the journal the file's hash before
and after), refused if the file changed since it was read, and done atomically through
`textfile.commit`.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from agentcli.tools.base import ToolContext, ToolOutput
from agentcli.tools.edit_match import small_diff
from agentcli.tools.file_write import FileWriteInput, FileWriteTool, write_target
from agentcli.tools.output import count_lines
from agentcli.tools.paths import confinement_roots, display_path
from agentcli.tools.textfile import (
    TextContent,
    WritePlan,
    check_fresh,
    commit,
    decode,
    looks_binary,
    read_nofollow,
    with_newline,
)


class WriteFileInput(FileWriteInput):
    content: str = Field(description="The complete new content of the file.")


class WriteFile(FileWriteTool[WriteFileInput, WritePlan]):
    name = "write_file"
    description = (
        "Create a file with the given content, or overwrite an existing one. Parent "
        "directories are created as needed. Overwriting requires that you read the file with "
        "read_file in this session and that it has not changed since; otherwise the call fails "
        "with a conflict. An overwritten file keeps its encoding and line-ending style (CRLF "
        "stays CRLF); new files are UTF-8. Prefer edit_file for changing part of a file. "
        "Writes to the workspace only."
    )
    input_model = WriteFileInput

    def verb(self, path: Path) -> str:
        return "overwrite" if path.exists() else "create"

    def preview(self, args: WriteFileInput, ctx: ToolContext) -> str:
        plan = self.plan(args, ctx, check=False)
        before = None if plan.before is None else decode(plan.before).text
        return small_diff(before, decode(plan.after).text, plan.shown, max_lines=None)

    async def call(self, args: WriteFileInput, ctx: ToolContext) -> ToolOutput:
        plan = self.planned(args, ctx)
        commit(plan, ctx, confinement_roots(ctx.workspace, ctx.extra_dirs))
        lines = count_lines(args.content)
        if plan.before is None:
            text = f"created {plan.shown} ({lines} lines, {len(plan.after)} bytes)"
        else:
            diff = small_diff(decode(plan.before).text, decode(plan.after).text, plan.shown)
            text = f"overwrote {plan.shown} ({lines} lines, {len(plan.after)} bytes)\n{diff}"
        return ToolOutput(
            text=text.rstrip("\n"),
            source={"path": plan.shown, "bytes": len(plan.after), "created": plan.before is None},
        )

    def plan(self, args: WriteFileInput, ctx: ToolContext, *, check: bool) -> WritePlan:
        path = write_target(args.path, ctx)
        shown = display_path(path, ctx.workspace)
        before = read_nofollow(path, confinement_roots(ctx.workspace, ctx.extra_dirs))
        if check:
            check_fresh(path, before, ctx, shown)
        if before is None or looks_binary(before):
            after = args.content.encode("utf-8")
        else:
            existing: TextContent = decode(before)
            content = args.content
            if existing.newline == "\r\n" and "\r\n" not in content:
                content = with_newline(content, "\r\n")
            after = existing.encode(content, shown)
        return WritePlan(path=path, shown=shown, before=before, after=after)
