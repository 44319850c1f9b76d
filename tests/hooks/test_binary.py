"""What only a real process shows: Ctrl-C (SIGINT) while a hook hangs stops the hook and
everything it started, and `agentcli run` ends aborted (130) with its result object."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text
from tests.hooks.conftest import hook_table, script, user_hooks


def test_sigint_while_a_stop_hook_hangs_stops_it_and_exits_130(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    hang = script(tmp_path / "hang.sh", f"#!/bin/bash\nsleep 300 &\necho $! > {pids}\nwait\n")
    user_hooks(hook_table("Stop", str(hang)))
    server.push(stream_message([text("done")]))
    env = {**os.environ, "ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentcli", "run", "hi", "--output-format", "json"],
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not (pids.exists() and pids.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids.exists() and pids.read_text().strip(), "the Stop hook never started"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    data = json.loads(out)
    assert data["task_state"] == "aborted" and data["terminal_reason"] == "aborted"
    child = int(pids.read_text())
    stat = Path(f"/proc/{child}/stat")
    assert not stat.exists() or stat.read_text().split(") ")[1][0] in "ZX"
