"""Class 8 (issue 26, its class 3): undo never writes through a link.

A task replaces the workspace's `keys/` directory by a link to a directory outside (where an
absent `authorized_keys` would be a key for anyone). `agentcli undo` must put `keys/` back as
the directory it was at the checkpoint, with its `authorized_keys`, and write nothing outside.
In a git workspace the swap must also show in the task's `changed_files` (a changed path is
compared as the link it is, never through it).

Also: undo and crash recovery compare files without opening a named pipe planted where a file
was (they would block forever); a normal undo keeps working, in git and out.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcli.call_records import CallStatus, PreState
from agentcli.recovery import resolve_call
from agentcli.store.queries import CallRow
from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text, tool_use
from tests.adversarial.own_files import release_fifos
from tests.adversarial.own_runs import cli, one_result, server

__all__ = ["server"]  # a fixture

KEY = "ssh-ed25519 AAAAC3Nza-the-users-own-key user@host\n"
SWAP = "rm -rf keys && ln -s {outside} keys"


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "keys").mkdir(parents=True)
    outside.mkdir()
    (ws / "keys" / "authorized_keys").write_text(KEY)
    (ws / "README.md").write_text("# demo\n")
    yield ws, outside
    release_fifos(tmp_path)


def git(ws: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=ws,
        check=True,
        capture_output=True,
    )


def run_shell(server: FakeMessagesServer, ws: Path, command: str) -> dict[str, Any]:
    server.push(
        stream_message([tool_use("shell", {"command": command}, id="t1")]),
        stream_message([text("done")]),
    )
    proc = cli(
        *("run", "go", "--permission-mode", "yolo", "--output-format", "json"),
        server=server,
        cwd=ws,
    )
    assert proc.returncode == 0, proc.stderr
    return one_result(proc.stdout)


def outside_files(outside: Path) -> list[str]:
    return sorted(p.name for p in outside.iterdir())


@pytest.mark.timeout(60, method="signal")
@pytest.mark.parametrize("in_git", [False, True], ids=["plain", "git"])
def test_undo_puts_a_swapped_directory_back_and_writes_nothing_through_the_link(
    server: FakeMessagesServer, lab: tuple[Path, Path], in_git: bool
) -> None:
    ws, outside = lab
    if in_git:
        git(ws, "init", "-q")
        git(ws, "add", "-A")
        git(ws, "commit", "-q", "-m", "initial")
    result = run_shell(server, ws, SWAP.format(outside=outside))
    assert (ws / "keys").is_symlink()
    if in_git:
        assert "keys/authorized_keys" in result["changed_files"], result["changed_files"]
    undone = cli("undo", server=server, cwd=ws)
    assert outside_files(outside) == [], "undo wrote through the link, outside the workspace"
    assert undone.returncode == 0, undone.stderr
    assert not (ws / "keys").is_symlink() and (ws / "keys").is_dir()
    assert (ws / "keys" / "authorized_keys").read_text() == KEY


@pytest.mark.timeout(60, method="signal")
def test_undo_never_writes_into_a_link_made_after_the_task(
    server: FakeMessagesServer, lab: tuple[Path, Path]
) -> None:
    # The task deletes the directory; someone then puts a link where it was. Undo restores a
    # file under it: through the link would be outside.
    ws, outside = lab
    run_shell(server, ws, "rm -rf keys")
    (ws / "keys").symlink_to(outside)
    undone = cli("undo", server=server, cwd=ws)
    assert outside_files(outside) == [], "undo wrote through the link, outside the workspace"
    if undone.returncode == 0:  # restored: as the directory it was at the checkpoint
        assert not (ws / "keys").is_symlink()
        assert (ws / "keys" / "authorized_keys").read_text() == KEY
    else:  # or refused, naming it
        assert "keys" in undone.stderr


@pytest.mark.timeout(60, method="signal")
@pytest.mark.parametrize("in_git", [False, True], ids=["plain", "git"])
def test_a_normal_undo_still_restores_and_removes(
    server: FakeMessagesServer, lab: tuple[Path, Path], in_git: bool
) -> None:
    ws, _outside = lab
    if in_git:
        git(ws, "init", "-q")
        git(ws, "add", "-A")
        git(ws, "commit", "-q", "-m", "initial")
    result = run_shell(
        server,
        ws,
        "echo changed > keys/authorized_keys && mkdir -p new/deep && echo n > new/deep/f",
    )
    assert sorted(result["changed_files"]) == ["keys/authorized_keys", "new/deep/f"]
    undone = cli("undo", server=server, cwd=ws)
    assert undone.returncode == 0, undone.stderr
    assert (ws / "keys" / "authorized_keys").read_text() == KEY
    assert not (ws / "new").exists()


@pytest.mark.timeout(30, method="signal")
@pytest.mark.parametrize("in_git", [False, True], ids=["plain", "git"])
def test_undo_does_not_block_on_a_named_pipe_where_a_changed_file_was(
    server: FakeMessagesServer, lab: tuple[Path, Path], in_git: bool
) -> None:
    ws, _outside = lab
    if in_git:
        git(ws, "init", "-q")
        git(ws, "add", "-A")
        git(ws, "commit", "-q", "-m", "initial")
    run_shell(server, ws, "echo changed > keys/authorized_keys")
    (ws / "keys" / "authorized_keys").unlink()
    os.mkfifo(ws / "keys" / "authorized_keys")  # changed after the task: undo must refuse
    undone = cli("undo", server=server, cwd=ws)
    assert undone.returncode == 1, undone.stderr
    assert "keys/authorized_keys" in undone.stderr


@pytest.mark.timeout(30, method="signal")
def test_recovery_does_not_block_on_a_named_pipe_where_a_write_was_going(
    tmp_path: Path,
) -> None:
    pipe = tmp_path / "f.txt"
    os.mkfifo(pipe)
    try:
        row = CallRow(
            call_id="t1",
            task_id=None,
            name="write_file",
            input={"path": "f.txt", "content": "x"},
            risk="write",
            status=CallStatus.STARTED,
            pre_state=PreState.from_json(
                {"path": str(pipe), "pre_hash": None, "post_hash": "0" * 64}
            ),
            result=None,
            error_kind=None,
            result_is_error=False,
            replayed=False,
            proposed_at=0.0,
            started_at=0.0,
            ended_at=None,
            duration_s=None,
        )
        resolution = resolve_call(row)
    finally:
        release_fifos(tmp_path)
    assert resolution.status is CallStatus.OUTCOME_UNKNOWN
