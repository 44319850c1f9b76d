"""read_file, write_file and edit_file on real files: windows and footers, refusal of binary
files and directories, the stale-read guard, pre-state for the journal, atomic no-follow
writes, encodings and line endings, and the help a failed edit gives."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from agentcli.call_records import CallStatus, FileWrite
from agentcli.errors import ToolError, ToolErrorKind
from agentcli.permissions import (
    Answer,
    NonInteractivePrompter,
    PermissionMode,
    PermissionRequest,
    PromptAnswer,
)
from agentcli.tools.base import ToolContext
from agentcli.tools.edit_file import EditFile, EditFileInput
from agentcli.tools.textfile import write_atomic
from agentcli.tools.write_file import WriteFile, WriteFileInput
from tests.tools.conftest import RecordingPrompter


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- read_file ------------------------------------------------------------------------------


async def test_read_numbers_lines_and_says_how_to_continue(harness: Any, workspace: Path) -> None:
    (workspace / "f.txt").write_text("".join(f"l{n}\n" for n in range(1, 2501)))
    first = await harness.call("read_file", path="f.txt")
    assert first.result_text.startswith("1\tl1\n2\tl2\n")
    assert first.result_text.endswith(
        '[lines 1-2000 of 2500; continue with read_file(path="f.txt", offset=2001)]'
    )
    assert first.source == {"path": "f.txt", "lines": [1, 2000], "total_lines": 2500}
    rest = await harness.call("read_file", path="f.txt", offset=2001)
    assert rest.result_text.startswith("2001\tl2001\n")
    assert rest.result_text.endswith("[lines 2001-2500 of 2500; end of file]")
    window = await harness.call("read_file", path="f.txt", offset=10, limit=2)
    assert window.result_text.startswith("10\tl10\n11\tl11\n[lines 10-11 of 2500;")
    past = await harness.call("read_file", path="f.txt", offset=9999)
    assert "has 2500 lines; offset 9999 is past the end" in past.result_text


async def test_read_cuts_long_lines_and_stays_under_the_cap(
    harness: Any, workspace: Path, ctx: ToolContext
) -> None:
    (workspace / "wide.txt").write_text(("x" * 5000 + "\n") * 40)
    record = await harness.call("read_file", path="wide.txt")
    assert "… [line cut: 5000 characters]" in record.result_text
    assert len(record.result_text) <= ctx.output_cap
    assert "(the window stopped early to stay within the output limit)" in record.result_text
    assert "spill" not in record.result_text  # the file itself is where to read on


async def test_read_refuses_binaries_images_and_directories(harness: Any, workspace: Path) -> None:
    (workspace / "bin.dat").write_bytes(b"\x00\x01\x02abc")
    (workspace / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 20)
    (workspace / "d").mkdir()
    binary = await harness.call("read_file", path="bin.dat")
    assert "looks like a binary file" in binary.result_text and binary.is_error
    image = await harness.call("read_file", path="pic.png")
    assert "is a PNG image" in image.result_text
    directory = await harness.call("read_file", path="d")
    assert "is a directory; use glob" in directory.result_text
    missing = await harness.call("read_file", path="nope.txt")
    assert missing.error_kind is ToolErrorKind.NOT_FOUND
    (workspace / "empty.txt").write_text("")
    assert "[empty.txt is empty]" in (await harness.call("read_file", path="empty.txt")).result_text


async def test_read_shows_crlf_and_latin1_files_as_text(harness: Any, workspace: Path) -> None:
    (workspace / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    (workspace / "latin.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    (workspace / "u16.txt").write_bytes("hi\nthere\n".encode("utf-16"))
    assert (await harness.call("read_file", path="crlf.txt")).result_text.startswith(
        "1\tone\n2\ttwo\n"
    )
    assert "1\tcafé" in (await harness.call("read_file", path="latin.txt")).result_text
    assert "2\tthere" in (await harness.call("read_file", path="u16.txt")).result_text


async def test_read_can_read_spill_files(harness: Any, ctx: ToolContext) -> None:
    spill = ctx.data_dir / "spill" / "x.txt"
    spill.parent.mkdir(parents=True)
    spill.write_text("full output\n")
    record = await harness.call("read_file", path=str(spill))
    assert record.status is CallStatus.SUCCEEDED and "1\tfull output" in record.result_text


# --- write_file -----------------------------------------------------------------------------


async def test_write_creates_files_and_parents(harness: Any, workspace: Path) -> None:
    record = await harness.call("write_file", path="new/deep/a.py", content="x = 1\n")
    assert record.status is CallStatus.SUCCEEDED
    assert record.result_text == "created new/deep/a.py (1 lines, 6 bytes)"
    assert (workspace / "new/deep/a.py").read_text() == "x = 1\n"
    # The session wrote it, so it may overwrite it without reading it again.
    again = await harness.call("write_file", path="new/deep/a.py", content="x = 2\n")
    assert again.status is CallStatus.SUCCEEDED and "-x = 1\n+x = 2" in again.result_text


async def test_overwrite_needs_a_fresh_read(harness: Any, workspace: Path) -> None:
    target = workspace / "a.txt"
    target.write_text("original\n")
    unread = await harness.call("write_file", path="a.txt", content="mine\n")
    assert unread.error_kind is ToolErrorKind.CONFLICT
    assert "has not been read in this session; read it with read_file first" in unread.result_text
    await harness.call("read_file", path="a.txt")
    target.write_text("changed by the user\n")
    stale = await harness.call("write_file", path="a.txt", content="mine\n")
    assert stale.error_kind is ToolErrorKind.CONFLICT
    assert "has changed since you last read it" in stale.result_text
    assert target.read_text() == "changed by the user\n"
    await harness.call("read_file", path="a.txt")
    ok = await harness.call("write_file", path="a.txt", content="mine\n")
    assert ok.status is CallStatus.SUCCEEDED and target.read_text() == "mine\n"


REFUSED_BEFORE_ASKING = {
    "overwrite unread": (
        ("write_file", {"path": "a.txt", "content": "mine\n"}),
        "has not been read in this session",
    ),
    "edit unread": (
        ("edit_file", {"path": "a.txt", "old_string": "original", "new_string": "mine"}),
        "has not been read in this session",
    ),
    "overwrite stale": (
        ("write_file", {"path": "read.txt", "content": "mine\n"}),
        "has changed since you last read it",
    ),
    "edit that does not apply": (
        ("edit_file", {"path": "fresh.txt", "old_string": "absent", "new_string": "x"}),
        "old_string was not found in fresh.txt",
    ),
    "edit of a missing file": (
        ("edit_file", {"path": "missing.txt", "old_string": "a", "new_string": "b"}),
        "does not exist",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED_BEFORE_ASKING))
async def test_a_write_that_cannot_run_is_refused_before_anyone_is_asked(
    case: str, make_harness: Any, workspace: Path
) -> None:
    """The user is not asked to approve a write the stale-read guard (or the edit itself)
    would refuse; the model gets the same error it got after the prompt before."""
    harness = make_harness(mode=PermissionMode.DEFAULT)
    (workspace / "a.txt").write_text("original\n")
    (workspace / "read.txt").write_text("seen\n")
    (workspace / "fresh.txt").write_text("seen\n")
    harness.prompter.answer = Answer.YES
    for path in ("read.txt", "fresh.txt"):
        assert (await harness.call("read_file", path=path)).status is CallStatus.SUCCEEDED
    (workspace / "read.txt").write_text("changed by the user\n")
    (name, input), says = REFUSED_BEFORE_ASKING[case]
    record = await harness.call(name, **input)
    assert record.status is CallStatus.FAILED and says in record.result_text
    assert harness.prompter.requests == []
    assert (workspace / "a.txt").read_text() == "original\n"
    assert (workspace / "read.txt").read_text() == "changed by the user\n"


async def test_a_read_in_the_same_response_still_lets_the_write_through(
    make_harness: Any, workspace: Path
) -> None:
    """read_file then write_file of one file in one response: the read runs first, so the
    write is not refused up front (it is asked, then checked when it runs, as before)."""
    harness = make_harness(mode=PermissionMode.DEFAULT)
    (workspace / "a.txt").write_text("original\n")
    read, write = await harness.batch(
        ("read_file", {"path": "a.txt"}), ("write_file", {"path": "a.txt", "content": "new\n"})
    )
    assert read.status is CallStatus.SUCCEEDED and write.status is CallStatus.SUCCEEDED
    assert [r.tool for r in harness.prompter.requests] == ["write_file"]
    assert (workspace / "a.txt").read_text() == "new\n"


async def test_without_a_terminal_the_denial_comes_first(
    make_harness: Any, workspace: Path
) -> None:
    """Nobody can answer: the model hears it may not write (and the rule that would let it),
    not to read the file first only to be denied after."""
    harness = make_harness(mode=PermissionMode.DEFAULT)
    harness.runtime.prompter = NonInteractivePrompter()
    (workspace / "a.txt").write_text("original\n")
    record = await harness.call("write_file", path="a.txt", content="mine\n")
    assert record.status is CallStatus.DENIED
    assert "no terminal to ask for permission" in record.result_text
    assert "has not been read" not in record.result_text


async def test_a_precheck_that_fails_itself_refuses_nothing(
    make_harness: Any, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A courtesy that breaks is skipped: the person is asked and the write checks as ever."""

    def broken(self: object, args: object, ctx: object) -> None:
        raise RuntimeError("the precheck itself failed")

    monkeypatch.setattr(WriteFile, "precheck", broken)
    harness = make_harness(mode=PermissionMode.DEFAULT)
    record = await harness.call("write_file", path="new.txt", content="x\n")
    assert record.status is CallStatus.SUCCEEDED
    assert [r.tool for r in harness.prompter.requests] == ["write_file"]


async def test_a_file_changed_while_the_user_decides_is_still_refused(
    make_harness: Any, workspace: Path
) -> None:
    """The check before asking is a courtesy; the one when the write runs decides."""
    harness = make_harness(mode=PermissionMode.DEFAULT)
    target = workspace / "a.txt"
    target.write_text("original\n")
    await harness.call("read_file", path="a.txt")

    class ChangesTheFile(RecordingPrompter):
        async def ask(self, request: PermissionRequest) -> PromptAnswer:
            target.write_text("changed during the prompt\n")
            return await super().ask(request)

    harness.runtime.prompter = harness.prompter = ChangesTheFile()
    record = await harness.call("write_file", path="a.txt", content="mine\n")
    assert record.error_kind is ToolErrorKind.CONFLICT
    assert "has changed since you last read it" in record.result_text
    assert len(harness.prompter.requests) == 1
    assert target.read_text() == "changed during the prompt\n"


async def test_write_keeps_crlf_and_the_file_mode(harness: Any, workspace: Path) -> None:
    target = workspace / "win.txt"
    target.write_bytes(b"a\r\nb\r\n")
    target.chmod(0o754)
    await harness.call("read_file", path="win.txt")
    await harness.call("write_file", path="win.txt", content="c\nd\n")
    assert target.read_bytes() == b"c\r\nd\r\n"
    assert target.stat().st_mode & 0o777 == 0o754


async def test_write_refuses_directories(harness: Any, workspace: Path) -> None:
    (workspace / "d").mkdir()
    record = await harness.call("write_file", path="d", content="x")
    assert (
        record.error_kind is ToolErrorKind.INVALID_ARGUMENTS
        and "is a directory" in record.result_text
    )


async def test_write_pre_state_has_the_hashes_and_read_hashes_follow(
    ctx: ToolContext, workspace: Path
) -> None:
    tool = WriteFile()
    args = WriteFileInput(path="n.txt", content="hello\n")
    state = tool.pre_state(args, ctx)
    assert state.write == FileWrite(
        path=str(workspace / "n.txt"), pre_hash=None, post_hash=sha(b"hello\n")
    )
    await tool.call(args, ctx)
    assert ctx.read_hashes[workspace / "n.txt"] == sha(b"hello\n")
    args = WriteFileInput(path="n.txt", content="bye\n")
    state = tool.pre_state(args, ctx)
    assert state.write is not None
    assert state.write.pre_hash == sha(b"hello\n") and state.write.post_hash == sha(b"bye\n")


async def test_a_change_between_plan_and_write_is_a_conflict(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("v1\n")
    ctx.read_hashes[workspace / "a.txt"] = sha(b"v1\n")
    tool = EditFile()
    args = EditFileInput(path="a.txt", old_string="v1", new_string="v2")
    tool.pre_state(args, ctx)  # the plan is made (and journaled) ...
    (workspace / "a.txt").write_text("v1 changed\n")  # ... then the user edits the file
    with pytest.raises(ToolError) as info:
        await tool.call(args, ctx)
    assert info.value.kind is ToolErrorKind.CONFLICT
    assert (workspace / "a.txt").read_text() == "v1 changed\n"


def test_write_never_follows_a_symlink_swapped_in(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    (workspace / "sub").mkdir(parents=True)
    outside.mkdir()
    target = workspace / "sub" / "a.txt"  # checked and resolved while sub/ was a directory
    # An attacker swaps sub/ for a symlink to a directory outside the workspace.
    (workspace / "sub").rmdir()
    (workspace / "sub").symlink_to(outside)
    with pytest.raises(ToolError) as info:
        write_atomic(target, b"payload", [workspace])
    assert info.value.kind is ToolErrorKind.PERMISSION_DENIED
    with pytest.raises(ToolError):  # missing parents are not created through it either
        write_atomic(workspace / "sub" / "deeper" / "a.txt", b"payload", [workspace])
    assert list(outside.iterdir()) == []
    # The same for the file itself: a symlink in its place is refused, not written through.
    (workspace / "sub").unlink()
    (workspace / "sub").mkdir()
    (workspace / "sub" / "a.txt").symlink_to(outside / "victim.txt")
    with pytest.raises(ToolError):
        write_atomic(target, b"payload", [workspace])
    assert not (outside / "victim.txt").exists()


def test_atomic_write_leaves_no_temp_files(tmp_path: Path) -> None:
    write_atomic(tmp_path / "a.txt", b"one", [tmp_path])
    write_atomic(tmp_path / "a.txt", b"two", [tmp_path])
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]
    assert (tmp_path / "a.txt").read_bytes() == b"two"


# --- edit_file ------------------------------------------------------------------------------


async def read_then_edit(harness: Any, path: str, **edit: Any) -> Any:
    await harness.call("read_file", path=path)
    return await harness.call("edit_file", path=path, **edit)


async def test_edit_replaces_once_and_returns_a_diff(harness: Any, workspace: Path) -> None:
    (workspace / "a.py").write_text("".join(f"line{n}\n" for n in range(1, 30)))
    record = await read_then_edit(harness, "a.py", old_string="line15\n", new_string="fifteen\n")
    assert record.status is CallStatus.SUCCEEDED
    assert record.result_text.startswith("edited a.py: replaced 1 occurrence (first at line 15)\n")
    assert "@@ -13,5 +13,5 @@\n line13\n line14\n-line15\n+fifteen\n line16\n line17" in (
        record.result_text
    )
    assert record.source == {"path": "a.py", "first_line": 15, "replacements": 1}


async def test_edit_needs_a_unique_match_or_replace_all(harness: Any, workspace: Path) -> None:
    (workspace / "m.py").write_text("x = 1\ny = 2\nx = 1\n")
    many = await read_then_edit(harness, "m.py", old_string="x = 1", new_string="x = 3")
    assert many.error_kind is ToolErrorKind.CONFLICT
    assert "occurs 2 times in m.py, starting at lines 1, 3" in many.result_text
    assert "replace_all=true" in many.result_text
    every = await harness.call(
        "edit_file", path="m.py", old_string="x = 1", new_string="x = 3", replace_all=True
    )
    assert "replaced 2 occurrences" in every.result_text
    assert (workspace / "m.py").read_text() == "x = 3\ny = 2\nx = 3\n"


async def test_edit_without_a_match_shows_the_closest_lines(harness: Any, workspace: Path) -> None:
    (workspace / "c.py").write_text("def main():\n    print('hello world')\n    return 0\n")
    typo = await read_then_edit(
        harness, "c.py", old_string="    print('hello wrld')", new_string="    pass"
    )
    assert typo.error_kind is ToolErrorKind.NOT_FOUND
    assert "closest text is at line 2" in typo.result_text
    assert "2\t    print('hello world')" in typo.result_text
    indent = await harness.call(
        "edit_file", path="c.py", old_string="\treturn 0", new_string="\treturn 1"
    )
    assert "matches line 3 if whitespace is ignored" in indent.result_text
    numbered = await harness.call(
        "edit_file", path="c.py", old_string="3\t    return 0", new_string="x"
    )
    assert "line-number prefixes" in numbered.result_text
    nothing = await harness.call("edit_file", path="c.py", old_string="zzzzqqqq", new_string="x")
    assert "Nothing in the file resembles it" in nothing.result_text


async def test_edit_keeps_crlf_and_encoding(harness: Any, workspace: Path) -> None:
    (workspace / "w.txt").write_bytes(b"alpha\r\nbeta\r\ngamma\r\n")
    await read_then_edit(harness, "w.txt", old_string="beta\ngamma", new_string="B\nG\nD")
    assert (workspace / "w.txt").read_bytes() == b"alpha\r\nB\r\nG\r\nD\r\n"
    (workspace / "l.txt").write_bytes("na\xefve caf\xe9\n".encode("latin-1"))
    await read_then_edit(harness, "l.txt", old_string="café", new_string="bistro")
    assert (workspace / "l.txt").read_bytes() == "na\xefve bistro\n".encode("latin-1")
    (workspace / "u.txt").write_bytes(b"\xef\xbb\xbfone\ntwo\n")
    await read_then_edit(harness, "u.txt", old_string="two", new_string="2")
    assert (workspace / "u.txt").read_bytes() == b"\xef\xbb\xbfone\n2\n"
    (workspace / "s.txt").write_bytes("a\nb\n".encode("utf-16-be"))
    (workspace / "s.txt").write_bytes(b"\xfe\xff" + "a\nb\n".encode("utf-16-be"))
    await read_then_edit(harness, "s.txt", old_string="b", new_string="c")
    assert (workspace / "s.txt").read_bytes() == b"\xfe\xff" + "a\nc\n".encode("utf-16-be")
    bad = await harness.call("edit_file", path="l.txt", old_string="bistro", new_string="€")
    assert (
        bad.error_kind is ToolErrorKind.INVALID_ARGUMENTS and "cannot represent" in bad.result_text
    )


async def test_edit_refuses_bad_input(harness: Any, workspace: Path) -> None:
    (workspace / "a.txt").write_text("a\n")
    empty = await harness.call("edit_file", path="a.txt", old_string="", new_string="x")
    assert (
        empty.error_kind is ToolErrorKind.INVALID_ARGUMENTS
        and "'old_string' is empty" in empty.result_text
    )
    same = await harness.call("edit_file", path="a.txt", old_string="a", new_string="a")
    assert "identical" in same.result_text
    missing = await harness.call("edit_file", path="b.txt", old_string="a", new_string="b")
    assert missing.error_kind is ToolErrorKind.NOT_FOUND and "use write_file" in missing.result_text
    unread = await harness.call("edit_file", path="a.txt", old_string="a", new_string="b")
    assert unread.error_kind is ToolErrorKind.CONFLICT


async def test_edit_pre_state(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "a.txt").write_text("one two\n")
    ctx.read_hashes[workspace / "a.txt"] = sha(b"one two\n")
    state = EditFile().pre_state(EditFileInput(path="a.txt", old_string="two", new_string="2"), ctx)
    assert state.to_json() == {  # the journal keeps it in this shape
        "path": str(workspace / "a.txt"),
        "pre_hash": sha(b"one two\n"),
        "post_hash": sha(b"one 2\n"),
    }
    assert os.listdir(workspace) == ["a.txt"]  # planning wrote nothing


@pytest.mark.parametrize(
    ("mode", "previews"), [(PermissionMode.YOLO, 0), (PermissionMode.DEFAULT, 1)]
)
async def test_the_preview_is_made_only_for_a_person_asked(
    mode: PermissionMode, previews: int, make_harness: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A diff of the whole write is what the permission prompt shows: nobody asked, none made
    (it read the file and diffed it for every allowed write)."""
    made: list[str] = []
    real = WriteFile.preview

    def counted(self: WriteFile, args: WriteFileInput, ctx: ToolContext) -> str:
        made.append(args.path)
        return real(self, args, ctx)

    monkeypatch.setattr(WriteFile, "preview", counted)
    harness = make_harness(mode=mode)
    record = await harness.call("write_file", path="new.txt", content="x\n")
    assert record.status is CallStatus.SUCCEEDED
    assert len(made) == previews
    assert len(harness.prompter.requests) == previews
