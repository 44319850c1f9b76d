"""File names that are not UTF-8, made on disk for real (bytes paths), through the whole tool
runtime: what `glob`, `grep`, `shell` and `read_file` give the model is valid Unicode with each
such byte spelled `\\xNN`, and the file tools take that spelling back to the same file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from agentcli.call_records import CallStatus, ToolCallRecord
from agentcli.tools.base import ToolContext
from agentcli.tools.glob_tool import Glob
from agentcli.tools.grep import Grep

SHOWN = "\\xff.txt"
"""How the model sees the name b"\\xff.txt"."""


def put(directory: Path, raw: bytes, content: bytes = b"needle\n") -> None:
    fd = os.open(os.fsencode(directory) + b"/" + raw, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    try:
        os.write(fd, content)
    finally:
        os.close(fd)


def get(directory: Path, raw: bytes) -> bytes:
    with open(os.fsencode(directory) + b"/" + raw, "rb") as handle:
        return handle.read()


def for_the_model(record: ToolCallRecord) -> str:
    assert record.status is CallStatus.SUCCEEDED and not record.is_error, record.result_text
    record.result_text.encode("utf-8")  # no lone surrogate: the API request can be encoded
    return record.result_text


@pytest.fixture
def names(workspace: Path) -> Path:
    put(workspace, b"plain.txt")
    put(workspace, b"\xff.txt")
    return workspace


@pytest.mark.parametrize("use_rg", [True, False], ids=["rg", "fallback"])
async def test_glob_and_grep_list_the_name_as_the_model_can_use_it(
    names: Path, make_harness: Any, use_rg: bool
) -> None:
    harness = make_harness([Glob(use_rg=use_rg), Grep(use_rg=use_rg)])
    listed = for_the_model(await harness.call("glob", pattern="*.txt"))
    assert SHOWN in listed.splitlines() and "plain.txt" in listed.splitlines()
    for mode in ("files_with_matches", "count", "content"):
        found = for_the_model(await harness.call("grep", pattern="needle", output_mode=mode))
        assert SHOWN in found, (mode, found)


async def test_shell_output_shows_the_bytes_and_the_model_can_name_them(
    names: Path, harness: Any
) -> None:
    listed = for_the_model(await harness.call("shell", command="ls"))
    assert SHOWN in listed.splitlines()
    shown = for_the_model(await harness.call("shell", command="cat $'\\xff.txt'"))
    assert shown.endswith("needle")


async def test_read_write_and_edit_take_the_spelling_back(names: Path, harness: Any) -> None:
    assert "needle" in for_the_model(await harness.call("read_file", path=SHOWN))
    for_the_model(await harness.call("write_file", path=SHOWN, content="one\n"))
    for_the_model(await harness.call("edit_file", path=SHOWN, old_string="one", new_string="two"))
    assert get(names, b"\xff.txt") == b"two\n"
    assert not os.path.lexists(os.path.join(os.fsencode(names), b"\\xff.txt"))


async def test_a_new_file_goes_into_the_directory_the_model_was_shown(
    workspace: Path, harness: Any
) -> None:
    os.mkdir(os.fsencode(workspace) + b"/dir-\xfe")
    listed = for_the_model(await harness.call("shell", command="ls"))
    assert "dir-\\xfe" in listed
    for_the_model(await harness.call("write_file", path="dir-\\xfe/new.txt", content="x\n"))
    assert get(workspace, b"dir-\xfe/new.txt") == b"x\n"


async def test_a_file_literally_named_with_a_backslash_comes_first(
    names: Path, harness: Any
) -> None:
    put(names, b"\\xff.txt", b"the literal name\n")
    assert "the literal name" in for_the_model(await harness.call("read_file", path=SHOWN))
    # A new file whose spelling names no existing file or directory is taken literally.
    for_the_model(await harness.call("write_file", path="\\xfe.txt", content="x\n"))
    assert get(names, b"\\xfe.txt") == b"x\n"


async def test_escapes_that_spell_utf8_do_not_reach_a_file_by_another_name(
    workspace: Path, harness: Any
) -> None:
    (workspace / "café.txt").write_text("accent\n")
    record = await harness.call("read_file", path="caf\\xc3\\xa9.txt")
    assert record.is_error and "accent" not in record.result_text


async def test_tools_work_in_a_workspace_whose_path_is_not_utf8(tmp_path: Path) -> None:
    from tests.tools.conftest import Harness

    workspace = Path(os.fsdecode(os.fsencode(tmp_path) + b"/ws-\xff"))
    workspace.mkdir()
    put(workspace, b"\xff.txt")
    harness = Harness(ToolContext(workspace=workspace, data_dir=tmp_path / "data"))
    assert SHOWN in for_the_model(await harness.call("glob", pattern="*"))
    assert "needle" in for_the_model(await harness.call("read_file", path=SHOWN))
    absolute = for_the_model(await harness.call("shell", command="pwd"))
    assert "ws-\\xff" in absolute
    for_the_model(await harness.call("write_file", path="new.txt", content="x\n"))
    assert (workspace / "new.txt").read_text() == "x\n"


async def test_a_long_listing_spills_the_exact_bytes(
    workspace: Path, ctx: ToolContext, harness: Any
) -> None:
    ctx.output_cap = 2_000
    for n in range(300):
        put(workspace, b"f%03d-\xff.txt" % n)
    listed = for_the_model(await harness.call("shell", command="ls"))
    assert "f000-\\xff.txt" in listed and "Full output saved to" in listed
    spill = next((ctx.data_dir / "spill").iterdir())
    assert b"f150-\xff.txt\n" in spill.read_bytes()
