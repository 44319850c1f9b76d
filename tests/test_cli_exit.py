"""`agentcli` ends its process without the interpreter's teardown once a command is done
(`ui.entry.exit_without_teardown`), yet everything a normal exit guarantees still happens: the
whole output reaches the pipe, atexit handlers run, the exit code is the command's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text

PROBE = """
import atexit, pathlib, sys
from agentcli.ui.entry import main

class Witness:
    def __del__(self):
        pathlib.Path("torn-down").write_text("teardown ran")

witness = Witness()
atexit.register(lambda: pathlib.Path("atexit-ran").write_text("yes"))
sys.argv = ["agentcli", *sys.argv[1:]]
sys.exit(main())
"""


def test_a_long_answer_is_printed_whole_and_atexit_handlers_run(workspace: Path) -> None:
    answer = "".join(f"line {n} of a long answer\n" for n in range(20_000))  # 8x a pipe's buffer
    with FakeMessagesServer() as server:
        # In deltas of 4 kB: 7-character ones (77 000 events) took ~9 s to stream and parse.
        server.push(stream_message([text(answer)], delta_chars=4096))
        done = subprocess.run(
            [sys.executable, "-c", PROBE, "run", "say it", "--output-format", "json", "-q"],
            cwd=workspace,
            env={
                **os.environ,
                "ANTHROPIC_BASE_URL": server.base_url,
                "ANTHROPIC_API_KEY": "test",
            },
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["final_text"] == answer
    assert (workspace / "atexit-ran").read_text() == "yes"
    assert not (workspace / "torn-down").exists()  # the teardown was skipped


def test_an_in_process_call_returns_its_code(workspace: Path) -> None:
    probe = "from agentcli.ui.entry import main\nprint('code', main(['sessions', 'list']))\n"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=workspace, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip().endswith("code 0"), done.stdout + done.stderr
