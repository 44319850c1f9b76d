"""`agentcli.safe_read`: the one way agentcli opens a file it did not write. Regular files only
(a named pipe never blocks the open), inside the allowed directories after links are resolved,
never more than the limit; a refusal says what the file is."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentcli.safe_read import (
    Inside,
    Reason,
    Unreadable,
    kind_of,
    open_regular,
    read_bytes,
    size_text,
)
from tests.adversarial.own_files import release_fifos


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Path]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("outside secret\n")
    yield workspace
    release_fifos(tmp_path)


def refusal(path: Path, inside: Inside | None, **kwargs: object) -> Unreadable:
    with pytest.raises(Unreadable) as caught:
        read_bytes(path, inside=inside, limit=kwargs.pop("limit", 1000), **kwargs)  # type: ignore[arg-type]
    return caught.value


def test_a_regular_file_and_a_link_inside_are_read(ws: Path) -> None:
    (ws / "docs").mkdir()
    (ws / "docs" / "a.md").write_text("rules\n")
    (ws / "AGENTS.md").symlink_to("docs/a.md")
    assert read_bytes(ws / "AGENTS.md", inside=Inside.of(ws), limit=100) == b"rules\n"
    assert read_bytes(ws / "docs" / "a.md", inside=Inside.of(ws), limit=100) == b"rules\n"


@pytest.mark.timeout(20, method="signal")
def test_a_named_pipe_is_refused_without_blocking(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    for inside in (Inside.of(ws), None):
        exc = refusal(ws / "pipe", inside)
        assert exc.reason is Reason.NOT_REGULAR and exc.why.startswith("a named pipe (FIFO)")
    assert kind_of(ws / "pipe") == "a named pipe (FIFO)"


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ("/proc/self/environ", "a link to /proc/self/environ, outside the workspace"),
        ("/dev/zero", "a link to /dev/zero, outside the workspace"),
        ("../outside/secret.txt", "a link to ../outside/secret.txt, outside the workspace"),
    ],
)
def test_a_link_out_of_the_workspace_is_refused_naming_its_target(
    ws: Path, target: str, why: str
) -> None:
    (ws / "AGENTS.md").symlink_to(target)
    exc = refusal(ws / "AGENTS.md", Inside.of(ws))
    assert (exc.reason, exc.why) == (Reason.OUTSIDE, why)
    assert str(exc) == f"{ws / 'AGENTS.md'}: {why}"
    assert isinstance(exc, OSError) and exc.strerror == why


def test_a_path_through_a_linked_directory_out_is_refused(ws: Path) -> None:
    (ws / "keys").symlink_to(ws.parent / "outside")
    exc = refusal(ws / "keys" / "secret.txt", Inside.of(ws))
    assert exc.reason is Reason.OUTSIDE and "outside the workspace" in exc.why


def test_without_following_any_link_in_the_path_is_refused(ws: Path) -> None:
    (ws / "real").mkdir()
    (ws / "real" / "f").write_text("x")
    (ws / "alias").symlink_to("real")
    (ws / "f-link").symlink_to("real/f")
    assert read_bytes(ws / "real" / "f", inside=Inside.of(ws), limit=10, follow=False) == b"x"
    assert refusal(ws / "alias" / "f", Inside.of(ws), follow=False).reason is Reason.LINK
    assert refusal(ws / "f-link", Inside.of(ws), follow=False).reason is Reason.LINK


def test_the_users_own_file_may_link_anywhere_but_into_the_kernel(ws: Path) -> None:
    mine = ws.parent / "config"
    mine.mkdir()
    (mine / "AGENTS.md").symlink_to(ws.parent / "outside" / "secret.txt")
    assert read_bytes(mine / "AGENTS.md", inside=None, limit=100) == b"outside secret\n"
    (mine / "env.md").symlink_to("/proc/self/environ")
    exc = refusal(mine / "env.md", None)
    assert exc.reason is Reason.OUTSIDE and "a file of the kernel" in exc.why


def test_a_device_is_refused_even_where_links_may_go(ws: Path) -> None:
    (ws / "zero").symlink_to("/dev/zero")
    exc = refusal(ws / "zero", None)
    assert exc.reason is Reason.NOT_REGULAR and exc.why == "a character device, not a regular file"


def test_a_directory_is_refused_as_opening_it_would_say(ws: Path) -> None:
    (ws / "AGENTS.md").mkdir()
    for inside in (Inside.of(ws), None):
        with pytest.raises(IsADirectoryError) as caught:
            read_bytes(ws / "AGENTS.md", inside=inside, limit=10)
        assert caught.value.filename == str(ws / "AGENTS.md")


def test_a_file_over_the_limit_is_refused_or_cut(ws: Path) -> None:
    with (ws / "big").open("wb") as handle:
        handle.truncate(2 * 1024**3)  # sparse: no disk, and never read whole
    exc = refusal(ws / "big", Inside.of(ws), limit=1024)
    assert exc.reason is Reason.TOO_LARGE and exc.why == "2 GiB, over the 1 KiB limit"
    assert read_bytes(ws / "big", inside=Inside.of(ws), limit=8, cut=True) == b"\0" * 8


def test_a_missing_file_is_file_not_found_naming_the_path(ws: Path) -> None:
    for path in (ws / "nope", ws / "no-dir" / "nope"):
        with pytest.raises(FileNotFoundError) as caught:
            read_bytes(path, inside=Inside.of(ws), limit=10)
        assert caught.value.filename == str(path)


def test_a_descriptor_is_given_for_reading_in_chunks(ws: Path) -> None:
    (ws / "f").write_bytes(b"abc")
    fd = open_regular(ws / "f", inside=Inside.of(ws))
    try:
        assert os.read(fd, 10) == b"abc"
    finally:
        os.close(fd)


def test_sizes_are_said_in_binary_units() -> None:
    assert [size_text(n) for n in (512, 1024, 1536, 1024**2, 2 * 1024**3)] == [
        "512 bytes",
        "1 KiB",
        "1.5 KiB",
        "1 MiB",
        "2 GiB",
    ]
