"""`glob`: the files whose paths match a pattern, most recently modified first.

Listing goes through `rg --files`, so .gitignore'd files, hidden files and `.git` are left out
(hidden ones are included when the pattern itself names a hidden path, like `.github/**`; `.git`
never is), and so are files under a `read(...)` deny rule (or an ask rule), which ripgrep skips
and the rules' own matcher filters out again. The pattern decides in Python; ripgrep's
`--glob` would override all of that (see `search_globs`).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from agentcli.errors import ToolError, ToolErrorKind
from agentcli.tools.base import ToolContext, ToolOutput
from agentcli.tools.output import NOTICE_ROOM, new_spill_path, read_on, save_spill
from agentcli.tools.paths import display_path
from agentcli.tools.ripgrep import run_rg
from agentcli.tools.search import (
    SearchInput,
    SearchTool,
    names_hidden,
    search_root,
    search_screen,
)
from agentcli.tools.search_fallback import (
    FALLBACK_NOTE,
    newest_first_key,
    walk_files,
)
from agentcli.tools.search_globs import check_glob, rg_selection, selector

MAX_GLOB_RESULTS = 1000
LISTING_CUT = (
    "(the tree holds too many files to list them all: some matching files may be missing; "
    "give a narrower path)"
)


class GlobInput(SearchInput):
    pattern: str = Field(
        min_length=1,
        description="Glob pattern, .gitignore style: `*.py` matches at any depth, `src/*.py` "
        "only directly in src, `src/**/test_*.py` anywhere under src, `*.{ts,tsx}` either.",
    )
    path: str | None = Field(
        default=None,
        description="Directory to search in, relative to the workspace root (default: the "
        "root). The pattern is matched relative to it.",
    )


class Glob(SearchTool[GlobInput]):
    name = "glob"
    description = (
        "List files whose path matches a glob pattern, most recently modified first. Files "
        "ignored by .gitignore, hidden files and the .git directory are left out (name a hidden "
        f"directory in the pattern, e.g. `.github/**`, to include it). At most "
        f"{MAX_GLOB_RESULTS} paths are listed; the result says when there were more. Paths are "
        "relative to the workspace root. Read-only."
    )
    input_model = GlobInput

    def validate(self, args: GlobInput, ctx: ToolContext) -> None:
        root = search_root(args.path, ctx)
        if not root.is_dir():
            kind = "does not exist" if not root.exists() else "is not a directory"
            raise ToolError(
                ToolErrorKind.NOT_FOUND if not root.exists() else ToolErrorKind.INVALID_ARGUMENTS,
                f"path {args.path} {kind}; give a directory to search in",
            )
        if args.pattern.startswith("!"):
            raise ToolError(
                ToolErrorKind.INVALID_ARGUMENTS,
                "field 'pattern' starts with '!', which would list everything except the "
                "pattern; give the pattern of the files you want",
            )
        check_glob(args.pattern)

    def summary(self, args: GlobInput, shown_root: str) -> str:
        return f"list {args.pattern} in {shown_root}"

    async def call(self, args: GlobInput, ctx: ToolContext) -> ToolOutput:
        root = search_root(args.path, ctx)
        shown_root = display_path(root, ctx.workspace)
        screen = search_screen(root, ctx)
        pattern = self._relative_pattern(args.pattern, root)
        hidden = names_hidden(pattern)
        rg = self.rg(ctx)
        if rg is not None:
            with rg_selection(pattern, hidden=hidden) as selection:
                flags = ["--files", *selection, *screen.rg_excludes(shown_root)]
                result = await run_rg(rg, flags, cwd=root)
            if result.exit_code == 2 and not result.stdout:
                raise ToolError(ToolErrorKind.INVALID_ARGUMENTS, result.error_text())
            listed = result.stdout.decode("utf-8", errors="surrogateescape").splitlines()
            note = f"\n{LISTING_CUT}" if result.overflowed else ""
        else:
            listed, note = list(walk_files(root, hidden=hidden)), f"\n{FALLBACK_NOTE}"
        prefix = "" if shown_root == "." else f"{shown_root}/"
        found = list(filter(selector(pattern, hidden=hidden), listed))
        if screen.rules:
            found = [rel for rel in found if not screen.withholds(prefix + rel)]
        withheld = screen.notice(shown_root)
        note += f"\n{withheld}" if withheld else ""
        return self._format(args, found, root, shown_root, ctx, note)

    def _relative_pattern(self, pattern: str, root: Path) -> str:
        # A model often passes an absolute pattern: make it relative to the search root, and
        # anchored there (a leading `/`), so `/ws/src/*.py` still means "directly in src".
        if pattern.startswith(str(root) + "/"):
            return pattern[len(str(root)) :]
        return pattern

    def _format(
        self,
        args: GlobInput,
        found: list[str],
        root: Path,
        shown_root: str,
        ctx: ToolContext,
        note: str,
    ) -> ToolOutput:
        prefix = "" if shown_root == "." else f"{shown_root}/"
        base = f"{root}/"
        entries = sorted((newest_first_key(base + rel), f"{prefix}{rel}") for rel in found)
        paths = [path for _, path in entries]
        source = {"path": shown_root, "pattern": args.pattern, "total": len(paths)}
        if not paths:
            return ToolOutput(
                text=f"no files match {args.pattern} in {shown_root} (files ignored by "
                f".gitignore and hidden files are not listed){note}",
                source=source,
            )
        budget = ctx.output_cap - NOTICE_ROOM
        shown: list[str] = []
        used = 0
        for path in paths[:MAX_GLOB_RESULTS]:
            if shown and used + len(path) + 1 > budget:
                break
            shown.append(path)
            used += len(path) + 1
        text = "\n".join(shown)
        if len(shown) < len(paths):
            spill = new_spill_path(ctx.data_dir, "glob")
            unsaved = save_spill("\n".join(paths) + "\n", spill)
            rest = f"read the full list (newest first) with {read_on(spill, len(shown) + 1)}"
            text += (
                f"\n[showing the {len(shown)} most recently modified of {len(paths)} matching "
                "files. Narrow the pattern or path to see the rest"
                + (f", or {rest}]" if unsaved is None else f" ({unsaved})]")
            )
        return ToolOutput(text=text + note, source=source)
