"""`read_file`: numbered lines of a text file, a window at a time.

Lines are numbered the way every other tool counts them (split on `\\n`), the window stops early
rather than overflow the output cap, and the footer always says where the window ends and how to
read on. The content hash of what was read feeds the stale-read guard of the write tools.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, PrivateAttr

from agentcli.errors import ToolError, ToolErrorKind
from agentcli.safe_read import Reason, Unreadable, read_bytes
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
from agentcli.tools.output import split_lines
from agentcli.tools.paths import display_path, inside_of, refusal, resolve_confined
from agentcli.tools.textfile import MAX_FILE_BYTES, content_hash, decode, looks_binary

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
FOOTER_ROOM = 400

_IMAGE_MAGIC = {
    b"\x89PNG\r\n\x1a\n": "PNG image",
    b"\xff\xd8\xff": "JPEG image",
    b"GIF87a": "GIF image",
    b"GIF89a": "GIF image",
    b"%PDF-": "PDF document",
}


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
    _checked: Path | None = PrivateAttr(default=None)


class ReadFile(Tool[ReadFileInput]):
    name = "read_file"
    description = (
        "Read a text file from the workspace. Returns numbered lines as `N<TAB>line`, "
        f"at most {DEFAULT_LIMIT} lines from `offset` (1-based); lines longer than "
        f"{MAX_LINE_CHARS} characters are cut with a marker. The footer gives the line range "
        "shown, the total line count and the offset to continue from when the file has more. "
        "Binary files, images and directories are refused. Read-only. Read a file before you "
        "edit or overwrite it: the write tools refuse files this session has not read or that "
        "changed since."
    )
    input_model = ReadFileInput
    risk = Risk.READ

    def _path(self, args: ReadFileInput, ctx: ToolContext) -> Path:
        # The session's data directory holds spill files of long outputs, which the model
        # is told to read with this tool; skills' directories hold the files they refer to.
        roots = (*ctx.extra_dirs, *ctx.read_roots, ctx.data_dir)
        return resolve_confined(args.path, ctx.workspace, roots)

    def _checked_path(self, args: ReadFileInput, ctx: ToolContext) -> Path:
        # validate, permission_target and resources run back to back before permission is
        # asked: one resolution serves all three (it is most of a read's overhead). `call`
        # resolves again, as a link may have changed while the user was being asked.
        if args._checked is None:
            args._checked = self._path(args, ctx)
        return args._checked

    def validate(self, args: ReadFileInput, ctx: ToolContext) -> None:
        self._checked_path(args, ctx)

    def permission_target(self, args: ReadFileInput, ctx: ToolContext) -> PermissionTarget:
        rel = display_path(self._checked_path(args, ctx), ctx.workspace)
        return PermissionTarget(rule_class="read", subject=rel, summary=f"read {rel}")

    def resources(self, args: ReadFileInput, ctx: ToolContext) -> Resources:
        return Resources(reads=frozenset({file_resource(self._checked_path(args, ctx))}))

    async def call(self, args: ReadFileInput, ctx: ToolContext) -> ToolOutput:
        path = self._path(args, ctx)
        shown = display_path(path, ctx.workspace)
        data = _read_bytes(path, shown, ctx)
        # Recorded before the text check: a binary file the model has looked at may be
        # overwritten as knowingly as a text file.
        ctx.read_hashes[path] = content_hash(data)
        _refuse_non_text(data, shown)
        lines = split_lines(decode(data).text)
        total = len(lines)
        start = (args.offset or 1) - 1
        limit = args.limit or DEFAULT_LIMIT
        budget = max(ctx.output_cap - FOOTER_ROOM, 1000)
        body: list[str] = []
        used = 0
        for number in range(start, min(total, start + limit)):
            entry = f"{number + 1}\t{_cut(lines[number].removesuffix(chr(13)))}"
            if body and used + len(entry) + 1 > budget:
                break
            body.append(entry)
            used += len(entry) + 1
        end = start + len(body)
        footer = _footer(
            args.path, shown, start, end, total, cut_by_size=end < min(total, start + limit)
        )
        return ToolOutput(
            text="\n".join([*body, footer]),
            source={"path": shown, "lines": [start + 1, end], "total_lines": total},
        )


def _read_bytes(path: Path, shown: str, ctx: ToolContext) -> bytes:
    """The file's bytes, through `agentcli.safe_read`: a regular file of the workspace (never
    a named pipe, whose open would block, or a device), at most MAX_FILE_BYTES."""
    inside = inside_of((ctx.workspace, *ctx.extra_dirs, *ctx.read_roots, ctx.data_dir))
    try:  # `path` is resolved: a link in it now was swapped in since, and is refused
        return read_bytes(path, inside=inside, limit=MAX_FILE_BYTES, follow=False)
    except FileNotFoundError as exc:
        raise ToolError(ToolErrorKind.NOT_FOUND, f"{shown} does not exist") from exc
    except IsADirectoryError as exc:
        raise ToolError(
            ToolErrorKind.INVALID_ARGUMENTS,
            f"{shown} is a directory; use glob to list the files in it",
        ) from exc
    except Unreadable as exc:
        if exc.reason is Reason.TOO_LARGE:
            raise ToolError(
                ToolErrorKind.INVALID_ARGUMENTS,
                f"{shown} is {exc.why} of read_file: larger files are not read "
                "(use grep to find the part you need)",
            ) from exc
        raise refusal(exc, shown, "read_file reads") from exc
    except OSError as exc:
        raise ToolError(ToolErrorKind.OS_ERROR, f"cannot read {shown}: {exc.strerror}") from exc


def _refuse_non_text(data: bytes, shown: str) -> None:
    for magic, kind in _IMAGE_MAGIC.items():
        if data.startswith(magic):
            raise ToolError(
                ToolErrorKind.INVALID_ARGUMENTS,
                f"{shown} is a {kind} ({len(data)} bytes); read_file only reads text",
            )
    if looks_binary(data):
        raise ToolError(
            ToolErrorKind.INVALID_ARGUMENTS,
            f"{shown} looks like a binary file ({len(data)} bytes); read_file only reads text",
        )


def _footer(raw: str, shown: str, start: int, end: int, total: int, *, cut_by_size: bool) -> str:
    if total == 0:
        return f"[{shown} is empty]"
    if start >= total:
        return f"[{shown} has {total} lines; offset {start + 1} is past the end]"
    if end < total:
        why = " (the window stopped early to stay within the output limit)" if cut_by_size else ""
        return (
            f"[lines {start + 1}-{end} of {total}{why}; continue with "
            f'read_file(path="{raw}", offset={end + 1})]'
        )
    return f"[lines {start + 1}-{end} of {total}; end of file]"


def _cut(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}… [line cut: {len(line)} characters]"
