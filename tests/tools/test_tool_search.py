"""glob and grep on a real git repository: .gitignore and hidden files, newest first, the three
grep modes, rg's own error for a bad regex, caps with exact continuation, and the pure-Python
fallback agreeing with ripgrep."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentcli.call_records import CallStatus
from agentcli.errors import ToolErrorKind
from agentcli.tools.base import ToolContext
from agentcli.tools.glob_tool import Glob
from agentcli.tools.grep import Grep
from agentcli.tools.output import split_lines
from agentcli.tools.ripgrep import find_rg

FILES = {
    "src/app.py": "import os\n\ndef main():\n    return helper()\n",
    "src/util.py": "def helper():\n    return 42\n\nHELPER = 'x'\n",
    "src/deep/mod.py": "from src.util import helper\n",
    "README.md": "# Demo\nCall main() to start.\n",
    "build/gen.py": "def main(): pass\n",
    "debug.log": "main crashed\n",
    ".hidden/secret.py": "def main(): hidden\n",
    ".github/ci.yml": "run: main\n",
}


@pytest.fixture
def repo(workspace: Path) -> Path:
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    (workspace / ".gitignore").write_text("build/\n*.log\n")
    for offset, (rel, content) in enumerate(FILES.items()):
        path = workspace / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        os.utime(path, (1_700_000_000 + offset * 100, 1_700_000_000 + offset * 100))
    return workspace


def test_the_wheel_ships_ripgrep() -> None:
    rg = find_rg()
    assert rg is not None and Path(rg).is_file()
    assert b"ripgrep 14.1.0" in subprocess.run([rg, "--version"], capture_output=True).stdout


# --- glob -----------------------------------------------------------------------------------


async def test_glob_respects_gitignore_and_lists_newest_first(harness: Any, repo: Path) -> None:
    record = await harness.call("glob", pattern="*.py")
    assert record.result_text.splitlines() == ["src/deep/mod.py", "src/util.py", "src/app.py"]
    assert record.source == {"path": ".", "pattern": "*.py", "total": 3}
    os.utime(repo / "src/app.py")  # touched now: comes first
    again = await harness.call("glob", pattern="src/**/*.py")
    assert again.result_text.splitlines()[0] == "src/app.py"


async def test_glob_includes_hidden_paths_only_when_named(harness: Any, repo: Path) -> None:
    record = await harness.call("glob", pattern=".github/*.yml")
    assert record.result_text == ".github/ci.yml"
    hidden = await harness.call("glob", pattern="**/secret.py")
    assert hidden.result_text.startswith("no files match **/secret.py")
    git = await harness.call("glob", pattern=".git/**")
    assert git.result_text.startswith("no files match")


async def test_glob_in_a_subdirectory(harness: Any, repo: Path) -> None:
    record = await harness.call("glob", pattern="*.py", path="src/deep")
    assert record.result_text == "src/deep/mod.py"
    absolute = await harness.call("glob", pattern=str(repo / "src" / "*.py"), path="src")
    assert sorted(absolute.result_text.splitlines()) == ["src/app.py", "src/util.py"]


async def test_glob_bad_input(harness: Any, repo: Path) -> None:
    bad = await harness.call("glob", pattern="a{")
    assert (
        bad.error_kind is ToolErrorKind.INVALID_ARGUMENTS
        and "unclosed alternate" in bad.result_text
    )
    missing = await harness.call("glob", pattern="*", path="nope")
    assert missing.error_kind is ToolErrorKind.NOT_FOUND
    file = await harness.call("glob", pattern="*", path="README.md")
    assert "is not a directory" in file.result_text
    negated = await harness.call("glob", pattern="!*.py")
    assert negated.error_kind is ToolErrorKind.INVALID_ARGUMENTS


async def test_glob_says_when_it_is_capped(harness: Any, workspace: Path, ctx: ToolContext) -> None:
    ctx.output_cap = 1500
    for n in range(300):
        (workspace / f"file_{n:03}.txt").write_text("x")
        os.utime(workspace / f"file_{n:03}.txt", (1_700_000_000 + n, 1_700_000_000 + n))
    record = await harness.call("glob", pattern="*.txt")
    lines = record.result_text.splitlines()
    match = re.search(r"showing the (\d+) most recently modified of 300 matching files", lines[-1])
    assert match, lines[-1]
    shown = int(match.group(1))
    assert lines[:shown] == [f"file_{n:03}.txt" for n in range(299, 299 - shown, -1)]
    spill = Path(re.search(r'read_file\(path="(.*?)", offset=(\d+)\)', lines[-1]).group(1))
    full = spill.read_text().splitlines()
    assert len(full) == 300 and full[:shown] == lines[:shown]


async def test_glob_fallback_without_ripgrep(make_harness: Any, repo: Path) -> None:
    harness = make_harness([Glob(use_rg=False)])
    record = await harness.call("glob", pattern="src/**/*.py")
    assert record.result_text.splitlines()[:3] == ["src/deep/mod.py", "src/util.py", "src/app.py"]
    assert "ripgrep not found" in record.result_text


# --- grep -----------------------------------------------------------------------------------


async def test_grep_lists_matching_files_newest_first(harness: Any, repo: Path) -> None:
    record = await harness.call("grep", pattern="main")
    assert record.result_text == "2 files match\nREADME.md\nsrc/app.py"
    assert record.source == {"path": ".", "pattern": "main", "files": 2}


async def test_grep_content_with_context_and_case(harness: Any, repo: Path) -> None:
    record = await harness.call(
        "grep", pattern="HELPER", output_mode="content", case_insensitive=True, path="src"
    )
    assert record.result_text.split("\n\n") == [
        "4 matching lines in 3 files\nsrc/deep/mod.py\n1:from src.util import helper",
        "src/util.py\n1:def helper():\n4:HELPER = 'x'",
        "src/app.py\n4:    return helper()",
    ]
    context = await harness.call(
        "grep", pattern="return 42", output_mode="content", context=1, path="src/util.py"
    )
    assert context.result_text == (
        "1 matching line in 1 file\nsrc/util.py\n1-def helper():\n2:    return 42\n3-"
    )


async def test_grep_count_glob_and_dash_patterns(harness: Any, repo: Path) -> None:
    count = await harness.call("grep", pattern="helper", output_mode="count")
    assert count.result_text == (
        "3 matching lines in 3 files\nsrc/deep/mod.py: 1\nsrc/util.py: 1\nsrc/app.py: 1"
    )
    only_md = await harness.call("grep", pattern="main", glob="*.md")
    assert only_md.result_text == "1 file match\nREADME.md"
    (repo / "flags.txt").write_text("use --force here\n")
    dash = await harness.call("grep", pattern="--force")
    assert dash.result_text == "1 file match\nflags.txt"


async def test_grep_errors_are_errors_and_no_match_is_not(harness: Any, repo: Path) -> None:
    bad = await harness.call("grep", pattern="foo(")
    assert bad.error_kind is ToolErrorKind.INVALID_ARGUMENTS
    assert "regex parse error" in bad.result_text and "unclosed group" in bad.result_text
    none = await harness.call("grep", pattern="zebra")
    assert none.status is CallStatus.SUCCEEDED and not none.is_error
    assert none.result_text == "no matches for 'zebra' in ."
    context = await harness.call("grep", pattern="x", context=2)
    assert "only applies to output_mode='content'" in context.result_text
    missing = await harness.call("grep", pattern="x", path="nope")
    assert missing.error_kind is ToolErrorKind.NOT_FOUND


async def test_grep_cut_states_what_was_omitted(
    harness: Any, workspace: Path, ctx: ToolContext
) -> None:
    ctx.output_cap = 2000
    for n in range(40):
        (workspace / f"f{n:02}.txt").write_text("".join(f"needle {n} {k}\n" for k in range(10)))
        os.utime(workspace / f"f{n:02}.txt", (1_700_000_000 + n, 1_700_000_000 + n))
    record = await harness.call("grep", pattern="needle", output_mode="content")
    text = record.result_text
    assert len(text) <= 2000
    notice = re.search(
        r"\[showing (\d+) of 400 matching lines, in (\d+) complete files of 40; (\d+) matching "
        r'lines omitted\. .*read_file\(path="(.*?)", offset=(\d+)\)\]$',
        text,
    )
    assert notice, text[-400:]
    shown, _complete, omitted, spill, offset = notice.groups()
    assert int(shown) + int(omitted) == 400
    body = text[: notice.start()].rstrip("\n").split("\n")
    assert sum(1 for line in body if re.match(r"\d+:", line)) == int(shown)
    full = split_lines(Path(spill).read_text())
    assert full[: len(body)] == body  # the shown part is exactly the start of the spill
    assert int(offset) == len(body) + 1  # and read_file at `offset` continues right after it
    assert full[0] == "400 matching lines in 40 files" and len(full) > int(offset)
    files = await harness.call("grep", pattern="needle")
    assert "showing files 1-" not in files.result_text  # 40 paths fit


@pytest.mark.parametrize(
    "query",
    [
        {"pattern": "def \\w+"},
        {"pattern": "helper", "output_mode": "count"},
        {"pattern": "return", "output_mode": "content", "context": 1},
        {"pattern": "MAIN", "case_insensitive": True, "output_mode": "content"},
        {"pattern": "def", "glob": "*.py", "path": "src"},
    ],
)
async def test_the_python_fallback_agrees_with_ripgrep(
    make_harness: Any, workspace: Path, query: dict[str, Any]
) -> None:
    for offset, (rel, content) in enumerate(FILES.items()):
        if rel.startswith((".", "build")) or rel.endswith(".log"):
            continue  # the fallback does not read .gitignore; hidden files both skip
        path = workspace / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        os.utime(path, (1_700_000_000 + offset, 1_700_000_000 + offset))
    with_rg = await make_harness([Grep()]).call("grep", **query)
    without = await make_harness([Grep(use_rg=False)]).call("grep", **query)
    assert without.result_text.endswith("does not apply .gitignore)")
    assert without.result_text.rsplit("\n", 1)[0] == with_rg.result_text
