"""A write the file system refuses is an ordinary tool error with the OS's reason, never an
`[internal]` one, and nothing is half-written: real faults, not mocks.

- a parent that is a file (ENOTDIR): the path is wrong, `invalid_arguments`;
- a read-only file or directory: `os_error` (chmod for a normal user; the immutable attribute
  for root, whom modes do not stop);
- a full disk (ENOSPC) and a command's output that cannot be spilled: the real binary in a
  private mount namespace with small tmpfs mounts (see `tests/test_cli_failures.py`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from agentcli.call_records import CallStatus
from agentcli.errors import ToolErrorKind
from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text, tool_use
from agentcli.tools.base import ToolContext
from tests.tools.conftest import Harness

AGENTCLI = (sys.executable, "-m", "agentcli")
YOLO_JSON = ("--permission-mode", "yolo", "--output-format", "json")


@contextmanager
def read_only(path: Path) -> Iterator[None]:
    """Make `path` really read-only for this process, then writable again."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            yield
        finally:
            path.chmod(mode)
        return
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(path)], capture_output=True).returncode:
        pytest.skip("running as root on a file system without the immutable attribute")
    try:
        yield
    finally:
        subprocess.run([chattr, "-i", str(path)], check=True)


def assert_ordinary(record: Any, kind: ToolErrorKind, *needles: str) -> None:
    assert record.status is CallStatus.FAILED
    assert record.error_kind is kind, record.result_text
    assert "[internal]" not in record.result_text and "Traceback" not in record.result_text
    for needle in needles:
        assert needle in record.result_text


def leftovers(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if ".agentcli-" in p.name]


async def test_a_parent_that_is_a_file(harness: Harness, workspace: Path) -> None:
    (workspace / "notes.txt").write_text("keep\n")
    for call in (
        harness.call("write_file", path="notes.txt/todo.txt", content="x"),
        harness.call("write_file", path="notes.txt/deeper/todo.txt", content="x"),
        harness.call("edit_file", path="notes.txt/todo.txt", old_string="a", new_string="b"),
    ):
        assert_ordinary(await call, ToolErrorKind.INVALID_ARGUMENTS, "Not a directory")
    assert (workspace / "notes.txt").read_text() == "keep\n"


async def test_a_read_only_file_is_left_as_it_is(harness: Harness, workspace: Path) -> None:
    target = workspace / "locked.txt"
    target.write_text("old\n")
    await harness.call("read_file", path="locked.txt")
    with read_only(target):
        write = await harness.call("write_file", path="locked.txt", content="new\n")
        edit = await harness.call("edit_file", path="locked.txt", old_string="old", new_string="x")
    for record in (write, edit):
        assert_ordinary(record, ToolErrorKind.OS_ERROR, "cannot write", "nothing was written")
        assert "(EACCES)" in record.result_text or "(EPERM)" in record.result_text
    assert target.read_text() == "old\n"
    assert leftovers(workspace) == []


async def test_a_read_only_directory(harness: Harness, workspace: Path) -> None:
    locked = workspace / "locked"
    locked.mkdir()
    with read_only(locked):
        new = await harness.call("write_file", path="locked/new.txt", content="x")
        nested = await harness.call("write_file", path="locked/sub/new.txt", content="x")
    assert_ordinary(new, ToolErrorKind.OS_ERROR, "cannot write", "nothing was written")
    assert_ordinary(nested, ToolErrorKind.OS_ERROR, "locked/sub")
    assert list(locked.iterdir()) == []


async def test_output_that_cannot_be_spilled_is_still_returned(
    workspace: Path, tmp_path: Path
) -> None:
    """The session's data directory is a file: the command ran, so its result comes back,
    capped, saying the full output could not be saved instead of naming a file."""
    blocked = tmp_path / "data"
    blocked.write_text("")
    harness = Harness(ToolContext(workspace=workspace, data_dir=blocked / "session"))
    record = await harness.call("shell", command="seq 1 40000")
    assert record.status is CallStatus.SUCCEEDED and not record.result_is_error
    assert "1\n2\n3\n" in record.result_text and "40000" in record.result_text
    assert "The full output could not be saved (Not a directory)" in record.result_text
    assert "read_file" not in record.result_text


def _namespace() -> tuple[str, ...]:
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("no unshare(1)")
    prefix = (unshare, "--user", "--map-root-user", "--mount")
    if subprocess.run([*prefix, "true"], capture_output=True, timeout=30).returncode:
        pytest.skip("no user and mount namespaces here")
    return prefix


def test_a_full_disk_reaches_the_model_as_an_ordinary_error(
    workspace: Path, tmp_path: Path
) -> None:
    """The real binary with its workspace on a 64 KiB tmpfs and its sessions directory on a
    full one: a write too large for the disk and a command whose output cannot be spilled."""
    home = tmp_path / "home"
    (home / "sessions").mkdir(parents=True)
    big, ws = "x" * 200_000, str(workspace)
    with FakeMessagesServer() as server:
        server.push(
            stream_message(
                [
                    tool_use("write_file", {"path": "big.txt", "content": big}, id="w1"),
                    tool_use("shell", {"command": "seq 1 40000"}, id="s1"),
                ]
            ),
            stream_message([text("done")]),
        )
        script = (
            'mount -t tmpfs -o size=64k tmpfs "$WS" && '
            'mount -t tmpfs -o size=16k tmpfs "$SESSIONS" && '
            '(cat /dev/zero > "$SESSIONS/filler" 2>/dev/null; true) && exec "$@"'
        )
        done = subprocess.run(
            [*_namespace(), "sh", "-c", script, "sh", *AGENTCLI, "run", "go", *YOLO_JSON, "-C", ws],
            cwd=tmp_path,
            env={
                **os.environ,
                "ANTHROPIC_BASE_URL": server.base_url,
                "ANTHROPIC_API_KEY": "test",
                "AGENTCLI_HOME": str(home),
                "WS": str(workspace),
                "SESSIONS": str(home / "sessions"),
            },
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["task_state"] == "unverified"
        results = {
            block["tool_use_id"]: block
            for message in server.requests[1].body["messages"]
            for block in message["content"]
            if block.get("type") == "tool_result"
        }
    write, shell = results["w1"], results["s1"]
    assert write["is_error"] and write["content"].startswith("[os_error] cannot write")
    assert "No space left on device (ENOSPC); nothing was written" in write["content"]
    assert not shell.get("is_error") and "40000" in shell["content"]
    assert "could not be saved (No space left on device)" in shell["content"]
