"""Start-up runs with the garbage collector off (it spends ~7% of the SDK's import collecting
objects that live as long as the process); the task itself must run with it on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text

PROBE = """
import gc, json
import agentcli.conversation as conversation

seen = []
original = conversation.ConversationManager.run_task

async def run_task(self, prompt, **kwargs):
    seen.append({"enabled": gc.isenabled(), "frozen": gc.get_freeze_count()})
    return await original(self, prompt, **kwargs)

conversation.ConversationManager.run_task = run_task
from agentcli.ui.entry import main

codes = [main(["--help"]), main(["run", "hi", "-q"])]
print(json.dumps({"codes": codes, "seen": seen, "after": gc.isenabled()}))
"""


@pytest.fixture
def server() -> Iterator[FakeMessagesServer]:
    with FakeMessagesServer() as fake:
        yield fake


def test_run_collects_garbage_while_the_task_runs(
    server: FakeMessagesServer, workspace: Path
) -> None:
    server.push(stream_message([text("ok")]))
    env = {**os.environ, "ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=True,
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["codes"] == [0, 0]
    # Collection is on for the task; what start-up built was frozen out of it.
    assert report["seen"] == [{"enabled": True, "frozen": report["seen"][0]["frozen"]}]
    assert report["seen"][0]["frozen"] > 10_000
    assert report["after"] is True  # the entry point leaves the collector as it found it
