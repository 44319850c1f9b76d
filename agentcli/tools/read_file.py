"""`read_file`: numbered lines of a text file, a window at a time."""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import Field

from agentcli.errors import ToolError, ToolErrorKind
from agentcli.tools.base import (
    PermissionTarget,
    Resources,
    Risk,
    Tool,
    ToolContext,
    ToolInput,
    ToolOutput,
)
from agentcli.tools.paths import display_path, resolve_confined

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
MAX_FILE_BYTES = 50 * 1024 * 1024


class ReadFileInput(ToolInput):
    path: str = Field(
        description="File path, relative to the workspace root (or absolute inside it)."
    )
    offset: int | None = Field(
        default=None, ge=1, description="1-based line number to start at (default 1)."
    )
    limit: int | None = Field(
        default=None,
        ge=1,
        le=10_000,
        description=f"Maximum number of lines to return (default {DEFAULT_LIMIT}).",
    )


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class ReadFile(Tool[ReadFileInput]):
    name = "read_file"
    description = (
        "Read a text file from the workspace. Returns numbered lines as `N<TAB>line`, "
        f"at most {DEFAULT_LIMIT} lines from `offset` (1-based); lines longer than "
        f"{MAX_LINE_CHARS} characters are cut with a marker. The footer gives the total line "
        "count and the offset to continue from when the file has more. Binary files and "
        "directories are refused. Read-only. Read a file before you edit or overwrite it."
    )
    input_model = ReadFileInput
    risk = Risk.READ

    def _path(self, args: ReadFileInput, ctx: ToolContext) -> Path:
        return resolve_confined(args.path, ctx.workspace, (*ctx.extra_dirs, ctx.data_dir))

    def permission_target(self, args: ReadFileInput, ctx: ToolContext) -> PermissionTarget:
        path = self._path(args, ctx)
        rel = display_path(path, ctx.workspace)
        return PermissionTarget(rule_class="read", subject=rel, summary=f"read {rel}")

    def resources(self, args: ReadFileInput, ctx: ToolContext) -> Resources:
        return Resources(reads=frozenset({f"file:{self._path(args, ctx)}"}))

    async def call(self, args: ReadFileInput, ctx: ToolContext) -> ToolOutput:
        path = self._path(args, ctx)
        shown = display_path(path, ctx.workspace)
        if not path.exists():
            raise ToolError(ToolErrorKind.NOT_FOUND, f"{shown} does not exist")
        if path.is_dir():
            raise ToolError(
                ToolErrorKind.INVALID_ARGUMENTS,
                f"{shown} is a directory; use glob to list files in it",
            )
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ToolError(
                ToolErrorKind.INVALID_ARGUMENTS,
                f"{shown} is {path.stat().st_size} bytes; files over {MAX_FILE_BYTES} bytes "
                "are not read (use grep to find the part you need)",
            )
        data = path.read_bytes()
        if b"\x00" in data[:8192]:
            raise ToolError(
                ToolErrorKind.INVALID_ARGUMENTS,
                f"{shown} looks like a binary file ({len(data)} bytes); read_file only reads text",
            )
        ctx.read_hashes[path] = content_hash(data)
        text = data.decode("utf-8", errors="replace")
        lines = text.splitlines()
        total = len(lines)
        start = (args.offset or 1) - 1
        limit = args.limit or DEFAULT_LIMIT
        window = lines[start : start + limit]
        body = "\n".join(f"{start + n + 1}\t{_cut(line)}" for n, line in enumerate(window))
        end = start + len(window)
        if total == 0:
            footer = f"[{shown} is empty]"
        elif start >= total:
            footer = f"[{shown} has {total} lines; offset {start + 1} is past the end]"
        elif end < total:
            footer = (
                f"[lines {start + 1}-{end} of {total}; continue with "
                f'read_file(path="{args.path}", offset={end + 1})]'
            )
        else:
            footer = f"[lines {start + 1}-{end} of {total}; end of file]"
        return ToolOutput(
            text=f"{body}\n{footer}" if body else footer,
            source={"path": shown, "lines": [start + 1, end], "total_lines": total},
        )


def _cut(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}… [line cut: {len(line)} characters]"
