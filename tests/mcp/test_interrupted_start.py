"""A signal while MCP servers start (found in review): agentcli ends, and the server it was
starting ends with it, not left running with init as its parent. The process contract, so the
real binary; the "server" is `sleep`, which never answers and ignores its closed stdin."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from agentcli.testing.fake_api import FakeMessagesServer
from tests.mcp.conftest import write_servers


def holders(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_servers_start_stops_them_too(
    workspace: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    seconds = f"{900 + uuid.uuid4().int % 1000}.{os.getpid()}"  # finds this test's own sleep
    config = write_servers(
        tmp_path / "servers.json",
        {"hang": {"command": "sleep", "args": [seconds], "startup_timeout_s": 120}},
    )
    with FakeMessagesServer() as server:
        env = {**os.environ, "ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "t"}
        agent = subprocess.Popen(
            [sys.executable, "-m", "agentcli", "run", "-C", str(workspace), "--mcp-config",
             str(config), "hi"],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while not holders(f"sleep\0{seconds}") and time.monotonic() < deadline:
                time.sleep(0.05)
            assert holders(f"sleep\0{seconds}"), "the server never started"
            time.sleep(0.3)  # well inside the wait for it
            agent.send_signal(sig)
            _, err = agent.communicate(timeout=60)
        finally:
            if agent.poll() is None:
                agent.kill()
    left = holders(f"sleep\0{seconds}")
    deadline = time.monotonic() + 10
    while left and time.monotonic() < deadline:  # SIGKILLs the kernel is still delivering
        time.sleep(0.05)
        left = holders(f"sleep\0{seconds}")
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert agent.returncode == 130, err.decode(errors="replace")
    assert b"Traceback" not in err and b"internal error" not in err
    assert left == [], "the MCP server was left running"
