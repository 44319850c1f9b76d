"""Fixtures for the sandbox tests: real commands through the real helper, on this kernel."""

from __future__ import annotations

import contextlib
import os
import platform
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentcli.confinement import Confinement
from agentcli.permissions.confine import escalated
from agentcli.permissions.shell import parse_command
from agentcli.sandbox import landlock
from agentcli.sandbox.runner import OsSandbox

LANDLOCK_ABI = landlock.abi_version()
requires_landlock = pytest.mark.skipif(
    LANDLOCK_ABI < 1,
    reason=f"this kernel ({platform.system()} {platform.release()}) has no Landlock, so the "
    "sandbox cannot be exercised here (agentcli reports it and auto mode asks instead)",
)

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory outside the workspace that a sandboxed command must not write to."""
    path = tmp_path / "outside"
    path.mkdir()
    return path


@pytest.fixture
def repo(workspace: Path) -> Path:
    """The workspace as a git repository with one commit."""
    env = {**os.environ, **GIT_ENV}
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=workspace, check=True, env=env)
    (workspace / "a.txt").write_text("a\n")
    subprocess.run(["git", "add", "a.txt"], cwd=workspace, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "first"], cwd=workspace, check=True, env=env)
    return workspace


@pytest.fixture
def sandbox(workspace: Path) -> OsSandbox:
    return OsSandbox(workspace=workspace)


@pytest.fixture
def run() -> Run:
    """Run `bash -c COMMAND` through a sandbox, in its workspace, stdin closed, confined as
    given (default: as the policy would confine an approved command, `escalated`)."""

    def runner(
        box: OsSandbox,
        command: str,
        env: dict[str, str] | None = None,
        confinement: Confinement | None = None,
    ) -> subprocess.CompletedProcess[str]:
        confined = confinement or escalated(parse_command(command))
        prepared = box.prepare(["bash", "-c", command], confined)
        return subprocess.run(
            prepared.argv,
            cwd=box.workspace,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            env={**prepared.env, **GIT_ENV, **(env or {})},
            check=False,
        )

    return runner


@contextlib.contextmanager
def unix_socket_listener(path: Path) -> Iterator[list[bytes]]:
    """A unix socket listening at `path` (outside any sandbox); yields what clients sent."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen()
    server.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            received.append(conn.recv(100) or b"(connected)")
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield received
    finally:
        stop.set()
        thread.join(timeout=2)
        server.close()
