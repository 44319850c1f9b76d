"""glob and grep leave out .gitignore'd files, hidden files and `.git` whatever the pattern or
glob the model gives (ripgrep's own `--glob` would override all three), include hidden paths
the pattern names, and give the same results with ripgrep and with the pure-Python fallback.

Real temp git repositories, the real ripgrep binary, the real tool runtime.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentcli.errors import ToolErrorKind
from agentcli.tools.base import Tool, ToolContext
from agentcli.tools.glob_tool import Glob
from agentcli.tools.grep import Grep
from agentcli.tools.ripgrep import find_rg
from agentcli.tools.search_fallback import FALLBACK_NOTE, glob_matches
from tests.tools.conftest import Harness

GITIGNORE = "ignored.py\n*.log\nnode_modules/\nsrc/gen/\n"
VISIBLE = ["README.md", "a.py", "src/app.py", "src/deep/mod.py"]
LEFT_OUT = [
    "ignored.py",  # .gitignore'd files, at any depth
    "src/ignored.py",
    "debug.log",
    "node_modules/pkg/index.js",  # in .gitignore'd directories
    "src/gen/out.py",
    ".env",  # hidden files and directories
    "src/.env",
    ".hidden/b.py",
    ".github/workflows/ci.yml",
    ".github/secret.log",  # hidden and .gitignore'd
]
PY = ["a.py", "src/app.py", "src/deep/mod.py"]


def plant(root: Path, paths: list[str]) -> None:
    """Each file holds `needle`, with distinct modification times (so output order is fixed)."""
    for n, rel in enumerate(paths):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"needle in {rel}\n")
        os.utime(path, (1_700_000_000 + n * 10, 1_700_000_000 + n * 10))


@pytest.fixture
def tree(workspace: Path) -> Path:
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    (workspace / ".gitignore").write_text(GITIGNORE)
    plant(workspace, VISIBLE + LEFT_OUT)
    return workspace


def listed(text: str) -> list[str]:
    return sorted(text.splitlines())


# --- glob -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("**/*", VISIBLE),
        ("*", VISIBLE),
        ("*.py", PY),
        ("**/*.py", PY),
        ("src/**", ["src/app.py", "src/deep/mod.py"]),
        ("src/*", ["src/app.py"]),
        ("*.{py,js,log}", PY),
        ("/*.py", ["a.py"]),
    ],
)
async def test_glob_never_lists_ignored_hidden_or_git_files(
    harness: Harness, tree: Path, pattern: str, expected: list[str]
) -> None:
    record = await harness.call("glob", pattern=pattern)
    assert not record.is_error, record.result_text
    assert listed(record.result_text) == sorted(expected)


async def test_glob_includes_a_hidden_path_it_names_but_not_its_ignored_files(
    harness: Harness, tree: Path
) -> None:
    github = await harness.call("glob", pattern=".github/**")
    assert github.result_text == ".github/workflows/ci.yml"  # not the .gitignore'd secret.log
    env = await harness.call("glob", pattern="**/.env")
    assert listed(env.result_text) == [".env", "src/.env"]
    for pattern in (".git/**", ".git/*", "**/.git/**", ".*/*"):
        git = await harness.call("glob", pattern=pattern)
        assert not any(line.startswith(".git/") for line in listed(git.result_text)), pattern
    hidden_dirs = await harness.call("glob", pattern=".*/**")
    assert listed(hidden_dirs.result_text) == [".github/workflows/ci.yml", ".hidden/b.py"]
    gitignore = await harness.call("glob", pattern=".gitignore")
    assert gitignore.result_text == ".gitignore"


async def test_glob_says_what_is_left_out_when_nothing_matches(
    harness: Harness, tree: Path
) -> None:
    record = await harness.call("glob", pattern="*.log")
    assert record.result_text == (
        "no files match *.log in . (files ignored by .gitignore and hidden files are not listed)"
    )


# --- grep -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("glob", "expected"),
    [
        ("*.py", PY),
        ("*", VISIBLE),
        ("**/*", VISIBLE),
        ("src/**", ["src/app.py", "src/deep/mod.py"]),
        ("**/*.{py,log}", PY),
        ("*.log", []),
    ],
)
@pytest.mark.parametrize("mode", ["files_with_matches", "content"])
async def test_grep_with_a_glob_never_searches_ignored_hidden_or_git_files(
    harness: Harness, tree: Path, glob: str, expected: list[str], mode: str
) -> None:
    record = await harness.call("grep", pattern="needle", glob=glob, output_mode=mode)
    assert not record.is_error, record.result_text
    lines = record.result_text.splitlines()
    if not expected:
        assert record.result_text == "no matches for 'needle' in ."
    elif mode == "files_with_matches":
        assert sorted(lines[1:]) == sorted(expected)  # after the header line
    else:  # each file's matching line names the file
        matched = [line.removeprefix("1:needle in ") for line in lines if line.startswith("1:")]
        assert sorted(matched) == sorted(expected)
    for rel in LEFT_OUT:
        assert rel not in record.result_text


async def test_grep_never_searches_git_even_when_a_glob_names_it(
    harness: Harness, tree: Path
) -> None:
    for glob in ("*", "**/*", ".git/**", "**/HEAD", "HEAD"):
        record = await harness.call("grep", pattern="refs/heads", glob=glob)
        assert record.result_text == "no matches for 'refs/heads' in .", glob


async def test_grep_searches_a_hidden_path_its_glob_names_but_not_its_ignored_files(
    harness: Harness, tree: Path
) -> None:
    github = await harness.call("grep", pattern="needle", glob=".github/**")
    assert github.result_text == "1 file match\n.github/workflows/ci.yml"
    env = await harness.call("grep", pattern="needle", glob=".env")
    assert listed(env.result_text) == [".env", "2 files match", "src/.env"]
    in_src = await harness.call("grep", pattern="needle", glob="*.py", path="src")
    assert listed(in_src.result_text) == ["2 files match", "src/app.py", "src/deep/mod.py"]


@pytest.mark.parametrize(
    ("glob", "expected"),
    [
        ("!*.md", PY),
        ("!src", ["README.md", "a.py"]),  # a directory it matches is left out whole
        ("!src/deep/*", ["README.md", "a.py", "src/app.py"]),
        ("!.env", VISIBLE),  # an exclusion names no hidden path to include
    ],
)
async def test_a_grep_glob_that_excludes_leaves_the_ignore_rules_alone(
    harness: Harness, tree: Path, glob: str, expected: list[str]
) -> None:
    record = await harness.call("grep", pattern="needle", glob=glob)
    assert sorted(record.result_text.splitlines()[1:]) == sorted(expected)


@pytest.mark.parametrize("use_rg", [True, False])
@pytest.mark.parametrize("mode", ["files_with_matches", "content", "count"])
async def test_grep_on_one_file_names_it_in_every_mode(
    make_harness: Any, tree: Path, use_rg: bool, mode: str
) -> None:
    harness = make_harness([Grep(use_rg=use_rg)])
    for glob in (None, "*.py"):
        record = await harness.call(
            "grep", pattern="needle", path="src/app.py", glob=glob, output_mode=mode
        )
        assert record.result_text.splitlines()[1] in ("src/app.py", "src/app.py: 1"), glob


# --- malformed globs ------------------------------------------------------------------------


@pytest.mark.parametrize("use_rg", [True, False])
@pytest.mark.parametrize(
    ("glob", "message"),
    [
        ("a{", "unclosed alternate group"),
        ("{a,{b}}", "nested alternate groups are not allowed"),
        ("[ab", "unclosed character class"),
        ("a\\", "dangling '\\'"),
    ],
)
async def test_a_malformed_glob_is_an_error_with_or_without_ripgrep(
    make_harness: Any, tree: Path, use_rg: bool, glob: str, message: str
) -> None:
    harness = make_harness([Glob(use_rg=use_rg), Grep(use_rg=use_rg)])
    for record in (
        await harness.call("glob", pattern=glob),
        await harness.call("grep", pattern="needle", glob=glob),
    ):
        assert record.error_kind is ToolErrorKind.INVALID_ARGUMENTS
        assert f"error parsing glob '{glob}': {message}" in record.result_text


# --- ripgrep and the fallback agree ---------------------------------------------------------

AGREEMENT_FILES = [
    "README.md",
    "a.py",
    "ab.py",
    "src/app.py",
    "src/s.py",
    "src/a.b",
    "src/deep/mod.py",
    "src/deep/deeper/x.py",
    "src/a:b.txt",
    "docs/a.md",
    ".env",
    "src/.env",
    ".hidden/b.py",
    ".github/workflows/ci.yml",
]
SEGMENTS = [
    "*", "**", "src", "deep", "a*", "s**", "*.py", "?.py", "*.{py,md}", "[as]*", "[!a]*",
    "mod.py", ".env", ".*", ".github", "\\*.py", "*:*", "*.py ", "deep/", "a{", "[x",
]  # fmt: skip


@pytest.fixture(scope="module")
def plain_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository without a .gitignore: hidden files and `.git` are all it hides."""
    root = tmp_path_factory.mktemp("agree")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    plant(root, AGREEMENT_FILES)
    return root


def call(root: Path, tool: Tool[Any], **input: Any) -> tuple[str, ToolErrorKind | None]:
    harness = Harness(ToolContext(workspace=root, data_dir=root.parent / "data"), [tool])
    record = asyncio.run(harness.call(tool.name, **input))
    return record.result_text.removesuffix(f"\n{FALLBACK_NOTE}"), record.error_kind


globs = st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=3).map("/".join)


@settings(max_examples=80, deadline=None)
@example(pattern="**/", anchored=False, path=None)  # directories only: no file
@example(pattern="*.p\0y", anchored=False, path=None)  # no NUL in a command-line argument
@given(pattern=globs, anchored=st.booleans(), path=st.sampled_from([None, "src"]))
def test_glob_with_and_without_ripgrep_agree(
    plain_tree: Path, pattern: str, anchored: bool, path: str | None
) -> None:
    pattern = "/" + pattern if anchored else pattern
    with_rg = call(plain_tree, Glob(), pattern=pattern, path=path)
    assert call(plain_tree, Glob(use_rg=False), pattern=pattern, path=path) == with_rg
    assert not any(line.startswith(".git/") for line in listed(with_rg[0]))


@settings(max_examples=80, deadline=None)
@example(glob="**/", negated=True, path=None, mode="count")  # excludes every directory
@example(glob=" ", negated=True, path=None, mode="count")  # `!` alone excludes nothing
@example(glob="*.p\0y", negated=False, path=None, mode="count")  # no NUL in an argument
@example(glob="src/*\0", negated=True, path=None, mode="count")
@given(
    glob=globs,
    negated=st.booleans(),
    path=st.sampled_from([None, "src", "src/s.py"]),
    mode=st.sampled_from(["count", "content"]),
)
def test_grep_with_a_glob_with_and_without_ripgrep_agree(
    plain_tree: Path, glob: str, negated: bool, path: str | None, mode: str
) -> None:
    glob = "!" + glob if negated else glob
    query = {"pattern": "needle", "glob": glob, "path": path, "output_mode": mode}
    with_rg = call(plain_tree, Grep(), **query)
    assert call(plain_tree, Grep(use_rg=False), **query) == with_rg


@settings(max_examples=150, deadline=None)
@given(pattern=globs)
def test_the_glob_matcher_agrees_with_ripgreps_own_globs(plain_tree: Path, pattern: str) -> None:
    """On the files ripgrep lists anyway (no hidden or ignored ones, so its `--glob` overrides
    nothing), the tools' matcher picks the files ripgrep's own glob picks."""
    rg = find_rg()
    assert rg is not None
    if "{" in pattern.replace("{py,md}", "") or "[x" in pattern or pattern.endswith("\\"):
        return  # malformed: tested above
    files = rg_files(rg, plain_tree)
    theirs = set(rg_files(rg, plain_tree, "--glob", pattern)) & set(files)
    assert sorted(rel for rel in files if glob_matches(rel, pattern)) == sorted(theirs)


def rg_files(rg: str, root: Path, *flags: str) -> list[str]:
    run = subprocess.run(
        [rg, "--no-config", "--files", *flags], cwd=root, capture_output=True, text=True
    )
    assert run.returncode in (0, 1), run.stderr
    return run.stdout.splitlines()
