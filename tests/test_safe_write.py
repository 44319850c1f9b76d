"""`agentcli.safe_write`: the writer of the file tools and of undo. Nothing is written, created
or removed through a link; undo may put a directory back where a link replaced it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentcli.safe_write import (
    Unwritable,
    pinned_parent,
    remove,
    replace_file,
    replace_with_link,
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "victim").write_text("theirs\n")
    return (tmp_path / "ws").resolve()


def outside(ws: Path) -> Path:
    return ws.parent / "outside"


def test_a_linked_directory_on_the_way_is_refused(ws: Path) -> None:
    (ws / "keys").symlink_to(outside(ws))
    with pytest.raises(Unwritable) as caught, pinned_parent(ws / "keys" / "new", [ws]):
        pass
    assert caught.value.path == ws / "keys" and "never followed" in caught.value.why
    assert sorted(p.name for p in outside(ws).iterdir()) == ["victim"]


def test_undo_replaces_the_link_by_the_directory_it_was(ws: Path) -> None:
    (ws / "keys").symlink_to(outside(ws))
    with pinned_parent(ws / "keys" / "authorized_keys", [ws], replace_links=True) as fd:
        replace_file(fd, "authorized_keys", b"key\n", keep_special=False)
    assert (ws / "keys").is_dir() and not (ws / "keys").is_symlink()
    assert (ws / "keys" / "authorized_keys").read_bytes() == b"key\n"
    assert sorted(p.name for p in outside(ws).iterdir()) == ["victim"]


def test_missing_directories_are_created_inside_only(ws: Path) -> None:
    with pinned_parent(ws / "a" / "b" / "f", [ws]) as fd:
        replace_file(fd, "f", b"x", mode=0o640)
    assert (ws / "a" / "b" / "f").read_bytes() == b"x"
    assert (ws / "a" / "b" / "f").stat().st_mode & 0o777 == 0o640
    with pytest.raises(Unwritable), pinned_parent(ws.parent / "elsewhere" / "f", [ws]):
        pass


def test_the_tools_never_replace_a_pipe_or_a_link_but_undo_does(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    (ws / "link").symlink_to(outside(ws) / "victim")
    with pinned_parent(ws / "pipe", [ws]) as fd:
        for name, kind in (("pipe", "a named pipe (FIFO)"), ("link", "a link")):
            with pytest.raises(Unwritable) as caught:
                replace_file(fd, name, b"x")
            assert caught.value.why == kind
        replace_file(fd, "pipe", b"file again", keep_special=False)
        replace_file(fd, "link", b"file again", keep_special=False)
    assert (ws / "pipe").read_bytes() == (ws / "link").read_bytes() == b"file again"
    assert (outside(ws) / "victim").read_text() == "theirs\n"


def test_a_link_is_put_back_as_a_link(ws: Path) -> None:
    (ws / "l").write_text("a file now")
    with pinned_parent(ws / "l", [ws]) as fd:
        replace_with_link(fd, "l", "target/elsewhere")
    assert os.readlink(ws / "l") == "target/elsewhere"


def test_remove_never_reaches_through_a_link(ws: Path) -> None:
    (ws / "keys").symlink_to(outside(ws))
    assert remove(ws / "keys" / "victim", ws) is False
    assert (outside(ws) / "victim").exists()
    (ws / "d" / "e").mkdir(parents=True)
    (ws / "d" / "e" / "f").write_text("x")
    (ws / "d" / "keep").write_text("y")
    assert remove(ws / "d" / "e" / "f", ws) is True
    assert not (ws / "d" / "e").exists() and (ws / "d" / "keep").exists()
    assert remove(ws / "keys", ws) is True  # the link itself, not what it leads to
    assert not (ws / "keys").is_symlink() and (outside(ws) / "victim").exists()
