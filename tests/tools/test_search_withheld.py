"""grep and glob never show files a `read(...)` deny rule covers (nor, unasked, an ask rule's):
real temp workspaces, real ripgrep, the real runtime and policy.

The secret files all hold the word SECRET; nothing a search returns (text, spill files, the
names of files) may contain it or the secret files' names.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentcli.call_records import ToolCallRecord
from agentcli.errors import ToolErrorKind
from agentcli.messages import ToolUseBlock
from agentcli.permissions import (
    Answer,
    Decision,
    NonInteractivePrompter,
    PermissionMode,
    Prompter,
)
from agentcli.permissions.screen import SearchScreen
from agentcli.permissions.setup import build_policy
from agentcli.store import MemoryJournal
from agentcli.tools.base import PermissionTarget, Risk, Tool, ToolContext
from agentcli.tools.glob_tool import Glob
from agentcli.tools.grep import Grep, _rg_note
from agentcli.tools.ripgrep import RgResult, find_rg, run_rg
from agentcli.tools.runtime import ToolRuntime
from tests.tools.conftest import RecordingPrompter

FILES = {
    "src/app.py": "token = load()  # public\n",
    "src/notes.txt": "token rotation is documented\n",
    "secrets/prod.key": "token = SECRET-1\n",
    "secrets/deep/dev.key": "token = SECRET-2\n",
    ".env": "token=SECRET-3\n",
    "src/.env": "token=SECRET-4\n",
    "config/prod/db.toml": "token = 'SECRET-5'\n",
    "config/dev/db.toml": "token = 'dev'\n",
    # Only the rules' own matcher catches this one: to ripgrep `src/**mine*` is `src/*mine*`.
    "src/sub/gold-mine.txt": "token SECRET-6\n",
}
SECRET_NAMES = ("prod.key", "dev.key", ".env", "config/prod", "gold-mine")
DENY = ["read(secrets/**)", "read(**/.env)", "read(src/**mine*)"]
ASK = ["read(config/prod/**)"]


@pytest.fixture
def tree(workspace: Path) -> Path:
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    for rel, content in FILES.items():
        path = workspace / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return workspace


async def run(
    workspace: Path,
    name: str,
    *,
    mode: PermissionMode = PermissionMode.DEFAULT,
    prompter: Prompter | None = None,
    tools: list[Tool[Any]] | None = None,
    output_cap: int | None = None,
    **input: Any,
) -> ToolCallRecord:
    ctx = ToolContext(workspace=workspace, data_dir=workspace.parent / "session-data")
    runtime = ToolRuntime(
        tools or [Grep(), Glob()],
        ctx=ctx,
        policy=build_policy(
            mode=mode,
            flag_deny=DENY,
            flag_ask=ASK,
            workspace=workspace,
            sandbox_available=False,
            persist=False,
        ),
        prompter=prompter or NonInteractivePrompter(),
        journal=MemoryJournal(),
        events=lambda event: None,
        output_cap=output_cap,
    )
    call = ToolUseBlock(id="toolu_1", name=name, input=input)
    records = runtime.propose([call])
    await runtime.execute([call], records)
    return records[0]


def assert_nothing_leaks(record: ToolCallRecord) -> None:
    text = record.result_text
    assert "SECRET" not in text
    for name in SECRET_NAMES:
        assert name not in text.replace("read(config/prod/**)", "").replace("**/.env", "")
    for spill in re.findall(r'read_file\(path="(.*?)"', text):
        assert "SECRET" not in Path(spill).read_text()


@pytest.mark.parametrize("output_mode", ["files_with_matches", "content", "count"])
@pytest.mark.parametrize("use_rg", [True, False])
async def test_grep_withholds_denied_and_asking_files(
    tree: Path, output_mode: str, use_rg: bool
) -> None:
    grep = Grep(use_rg=use_rg)
    # `glob` names hidden files, so ripgrep searches .env files too.
    for glob in (None, "**/.*", "**/*"):
        extra = {"glob": glob} if glob else {}
        record = await run(
            tree, "grep", tools=[grep], pattern="token", output_mode=output_mode, **extra
        )
        assert record.status.value == "succeeded", record.result_text
        assert_nothing_leaks(record)
        if glob != "**/.*":
            assert "src/app.py" in record.result_text
        assert "are left out of search results: the user denied reading them" in (
            record.result_text
        )
        assert "read_file one by its path to ask" in record.result_text


async def test_grep_notice_does_not_depend_on_what_matched(tree: Path) -> None:
    """A count of withheld matches would let the model read a secret one regex at a time."""
    hit = await run(tree, "grep", pattern="SECRET-1")
    miss = await run(tree, "grep", pattern="SECRET-9")
    assert hit.result_text == miss.result_text.replace("SECRET-9", "SECRET-1")


async def test_glob_withholds_denied_and_asking_files(tree: Path) -> None:
    for pattern in ("**/*", "**/.env", "secrets/**", "**/*.key", "config/**"):
        record = await run(tree, "glob", pattern=pattern)
        assert record.status.value == "succeeded"
        assert_nothing_leaks(record)
    everything = await run(tree, "glob", pattern="**/*")
    listed = everything.result_text.split("\n(")[0].splitlines()
    # (ripgrep lets a `**/*` glob override its hidden-file filter: .git is listed too.)
    assert sorted(p for p in listed if not p.startswith(".git/")) == [
        "config/dev/db.toml",
        "src/app.py",
        "src/notes.txt",
    ]
    fallback = await run(tree, "glob", tools=[Glob(use_rg=False)], pattern="**/*")
    assert_nothing_leaks(fallback)


async def test_a_withheld_spill_never_holds_secrets(tree: Path) -> None:
    for n in range(200):
        (tree / "secrets" / f"k{n:03}.key").write_text("token SECRET\n")
        (tree / "src" / f"m{n:03}.py").write_text("token\n")
    for name, extra in (("grep", {"output_mode": "content"}), ("glob", {})):
        pattern = "token" if name == "grep" else "**/*"
        record = await run(tree, name, output_cap=2000, pattern=pattern, **extra)
        assert "read_file(path=" in record.result_text
        assert_nothing_leaks(record)


@pytest.mark.parametrize(
    ("name", "input"),
    [
        ("grep", {"pattern": "token", "path": "secrets"}),
        ("grep", {"pattern": "token", "path": "secrets/deep"}),
        ("grep", {"pattern": "token", "path": "secrets/prod.key"}),
        ("grep", {"pattern": "token", "path": "src/.env"}),
        ("glob", {"pattern": "*", "path": "secrets"}),
        ("glob", {"pattern": "*", "path": "secrets/deep"}),
    ],
)
async def test_searching_a_denied_path_is_denied(
    tree: Path, name: str, input: dict[str, Any]
) -> None:
    record = await run(tree, name, mode=PermissionMode.YOLO, **input)
    assert record.error_kind is ToolErrorKind.PERMISSION_DENIED
    assert "denied by the rule read(" in record.result_text
    assert "SECRET" not in record.result_text


async def test_searching_a_path_under_an_ask_rule_asks(tree: Path) -> None:
    denied = await run(tree, "grep", pattern="token", path="config/prod")
    assert denied.error_kind is ToolErrorKind.PERMISSION_DENIED
    assert "read(config/prod/**) asks" in denied.result_text
    prompter = RecordingPrompter(Answer.YES)
    allowed = await run(tree, "grep", prompter=prompter, pattern="token", path="config/prod")
    assert [r.target.subject for r in prompter.requests] == ["config/prod"]
    assert allowed.result_text.startswith("1 file match\nconfig/prod/db.toml")


async def test_yolo_still_withholds_denied_files_but_not_asking_ones(tree: Path) -> None:
    record = await run(tree, "grep", mode=PermissionMode.YOLO, pattern="token")
    assert "config/prod/db.toml" in record.result_text
    assert "SECRET-1" not in record.result_text and "prod.key" not in record.result_text
    assert "read_file one by its path" not in record.result_text


async def test_the_fallback_does_not_follow_a_link_into_a_denied_file(tree: Path) -> None:
    os.symlink(tree / "secrets" / "prod.key", tree / "src" / "innocent.txt")
    for use_rg in (True, False):
        record = await run(tree, "grep", tools=[Grep(use_rg=use_rg)], pattern="SECRET-")
        assert record.result_text.startswith("no matches for 'SECRET-' in .")
        assert "innocent" not in record.result_text


def test_ripgrep_errors_never_name_a_withheld_file(tmp_path: Path) -> None:
    screen = build_policy(
        mode=PermissionMode.DEFAULT,
        flag_deny=DENY,
        workspace=tmp_path,
        sandbox_available=False,
        persist=False,
    ).search_screen(".")
    result = RgResult(
        exit_code=2,
        stdout=b"src/app.py\n",
        stderr="rg: ./secrets/prod.key: Permission denied (os error 13)\n"
        "rg: src/other: Permission denied (os error 13)\n",
        overflowed=False,
    )
    assert _rg_note(result, screen) == (
        "(ripgrep could not read some files, e.g.: src/other: Permission denied (os error 13))"
    )
    only_secret = RgResult(2, b"", "rg: secrets/prod.key: Permission denied\n", False)
    assert _rg_note(only_secret, screen) == "(ripgrep could not read some files)"
    assert _rg_note(only_secret, SearchScreen()).endswith("secrets/prod.key: Permission denied)")
    # rg ran in `secrets/deep`: its paths are relative to that directory.
    in_subdir = RgResult(2, b"", "rg: ./dev.key: Permission denied\n", False)
    assert _rg_note(in_subdir, screen, "secrets/deep/") == "(ripgrep could not read some files)"


# Ripgrep's exclusions against the rules' matcher, on real files: rg never leaves out a file
# the rule does not cover, and leaves out every file it does, when the rule is expressible.
TREE = [
    "a.txt",
    ".env",
    "src/a.py",
    "src/.env",
    "src/gen/x.py",
    "src/web/gen/y.py",
    "src/web/gen/deep/z.py",
    "secrets/k.txt",
    "secrets/sub/k.txt",
    "a/secrets/k.txt",
    "odd/[x].txt",
    "odd/{y}.txt",
    "odd/b\\c.txt",
    "odd/mine-x.txt",
    "odd/sub/mine-y.txt",
]
EXACT = ["secrets/**", "**/.env", "src/*/gen/**", "**/secrets/*.txt", "odd/[x].txt"]
EXACT += ["odd/{y}.txt", "odd/b\\c.txt", "*.txt", "src/*", "**"]
INEXACT = ["odd/**mine*"]


@pytest.mark.parametrize("base", [".", "src", "src/web", "secrets", "odd", "a/secrets"])
@pytest.mark.parametrize("pattern", EXACT + INEXACT)
async def test_ripgrep_exclusions_agree_with_the_rule(
    tmp_path: Path, pattern: str, base: str
) -> None:
    for rel in TREE:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x\n")
    policy = build_policy(
        mode=PermissionMode.DEFAULT,
        flag_deny=[f"read({pattern})"],
        workspace=tmp_path,
        sandbox_available=False,
        persist=False,
    )
    if policy.decide(Risk.READ, PermissionTarget("read", base, base)).decision is Decision.DENY:
        return  # searching `base` itself is denied
    screen = policy.search_screen(base)
    rg = find_rg()
    assert rg is not None
    flags = ["--files", "--hidden", *screen.rg_excludes(base)]
    result = await run_rg(rg, flags, cwd=tmp_path / base)
    prefix = "" if base == "." else f"{base}/"
    listed = {prefix + line for line in result.stdout.decode().splitlines()}
    under = {rel for rel in TREE if rel.startswith(prefix)}
    allowed = {rel for rel in under if not screen.withholds(rel)}
    assert listed >= allowed, "ripgrep left out a file the rule does not cover"
    if pattern in EXACT:
        assert listed == allowed


@pytest.mark.parametrize("name", ["grep", "glob"])
async def test_ripgrep_is_told_to_skip_withheld_files(
    tree: Path, tmp_path: Path, name: str
) -> None:
    """The first line of defence: ripgrep never opens a denied file (a real rg, behind a
    script that records its arguments)."""
    rg = find_rg()
    assert rg is not None
    log = tmp_path / "rg-args"
    shim = tmp_path / "rg-shim"
    shim.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {log}\nexec {rg} "$@"\n')
    shim.chmod(0o755)
    tool = Grep(rg_binary=str(shim)) if name == "grep" else Glob(rg_binary=str(shim))
    pattern = "token" if name == "grep" else "**/*"
    await run(tree, name, tools=[tool], pattern=pattern, path="src")
    args = log.read_text().splitlines()
    assert "!/**/.env" in args and "!/**mine*" in args
    assert not any("secrets" in arg for arg in args)  # cannot match under src
