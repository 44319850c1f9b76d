"""What agentcli writes for itself is private whatever the umask: directories 0700, files 0600.

The journal (with its -wal and -shm files), spill files of long command and check output, the
private git dir, locks, the error log, the REPL history and the sandbox probe cache hold whole
conversations and file contents. A real `agentcli run` under a permissive umask (0o000 and
0o022) then a walk of everything under its data directory; the pieces on their own, in-process.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from agentcli.private import make_private, open_private, private_dir, write_private
from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text, tool_use

AGENTCLI = (sys.executable, "-m", "agentcli")


@contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def open_to_others(root: Path) -> list[str]:
    """Everything under `root` (itself included) that its group or others may use at all."""
    found = []
    for path in [root, *root.rglob("*")]:
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            continue
        if stat.S_IMODE(mode) & 0o077:
            found.append(f"{path.relative_to(root.parent)} {stat.S_IMODE(mode):o}")
    return found


@pytest.mark.parametrize("mask", [0o000, 0o022])
def test_a_run_leaves_nothing_readable_by_others(
    workspace: Path, tmp_path: Path, mask: int
) -> None:
    home = tmp_path / "home" / "data"  # missing, parents too: agentcli makes them
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    (workspace / "a.txt").write_text("secret\n")
    loud = "seq 1 40000"  # longer than any cap: spilled to a file
    with FakeMessagesServer() as server:
        server.push(
            stream_message(
                [
                    tool_use("read_file", {"path": "a.txt"}, id="r1"),
                    tool_use("shell", {"command": loud}, id="s1"),
                ]
            ),
            stream_message([tool_use("write_file", {"path": "a.txt", "content": "new\n"})]),
            stream_message([text("done")]),
        )
        done = subprocess.run(
            [*AGENTCLI, "run", "edit it", "--permission-mode", "yolo", "--accept", loud],
            cwd=workspace,
            env={
                **os.environ,
                "ANTHROPIC_BASE_URL": server.base_url,
                "ANTHROPIC_API_KEY": "test",
                "AGENTCLI_HOME": str(home),
            },
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            umask=mask,
        )
    assert done.returncode == 0, done.stderr
    written = {p.name for p in home.rglob("*")}
    assert {"journal.sqlite3", "journal.sqlite3-wal", "journal.sqlite3-shm"} <= written
    assert {"spill", "locks", "git"} <= written  # the spill files of the command and the check
    assert len(list(home.glob("sessions/*/spill/shell-*.txt"))) == 1
    assert len(list(home.glob("sessions/*/spill/check-*.txt"))) == 1
    assert open_to_others(home) == []
    assert stat.S_IMODE((tmp_path / "home").stat().st_mode) == 0o700  # a parent it made


@pytest.mark.parametrize("mask", [0o000, 0o022, 0o277])
def test_directories_and_files_are_made_private_whatever_the_umask(
    tmp_path: Path, mask: int
) -> None:
    with umask(mask):
        private_dir(tmp_path / "a" / "b" / "c")
        write_private(tmp_path / "a" / "b" / "c" / "file", b"x")
        with open_private(tmp_path / "a" / "log", "ab") as log:
            log.write(b"one\n")
        with open_private(tmp_path / "a" / "log", "ab") as log:
            log.write(b"two\n")
    assert (tmp_path / "a" / "log").read_bytes() == b"one\ntwo\n"
    assert open_to_others(tmp_path / "a") == []
    for directory in ("a", "a/b", "a/b/c"):
        assert stat.S_IMODE((tmp_path / directory).stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "a/b/c/file").stat().st_mode) == 0o600


def test_a_directory_that_exists_is_left_as_it_is(tmp_path: Path) -> None:
    """It may be one the user chose for AGENTCLI_HOME, shared with other things."""
    tmp_path.chmod(0o755)
    private_dir(tmp_path)
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o755


def test_an_own_file_readable_by_others_is_made_private(tmp_path: Path) -> None:
    old = tmp_path / "journal.sqlite3"
    old.write_bytes(b"from an older agentcli")
    old.chmod(0o644)
    make_private(old)
    assert stat.S_IMODE(old.stat().st_mode) == 0o600
    assert old.read_bytes() == b"from an older agentcli"


def test_a_file_in_place_of_a_directory_is_not_a_directory(tmp_path: Path) -> None:
    (tmp_path / "home").write_text("")
    with pytest.raises(NotADirectoryError):
        private_dir(tmp_path / "home" / "sessions")


def test_the_error_log_history_and_probe_cache_are_private(tmp_path: Path) -> None:
    from agentcli.paths import data_home
    from agentcli.sandbox.support import SandboxSupport, _cache_path, _write_cache
    from agentcli.ui.repl.input import open_history
    from agentcli.ui.term.errorlog import log_internal_error

    with umask(0):
        log = log_internal_error(RuntimeError("boom"))
        open_history(data_home() / "repl_history").store_string("a prompt")
        cache = _cache_path()
        _write_cache(cache, SandboxSupport(landlock_abi=0, ok=False, problem="none here"))
    assert log is not None and "RuntimeError: boom" in log.read_text()
    assert (data_home() / "repl_history").read_text().count("a prompt") == 1
    assert cache is None or cache.is_file()
    assert open_to_others(data_home()) == []
