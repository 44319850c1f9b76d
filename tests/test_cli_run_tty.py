"""`agentcli run` in a real terminal asks for permission (on stderr) instead of denying."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text, tool_use


@pytest.fixture
def server() -> Iterator[FakeMessagesServer]:
    with FakeMessagesServer() as fake:
        yield fake
        assert fake.pairing_problems() == []


def spawn_run(workspace: Path, server: FakeMessagesServer) -> pexpect.spawn:
    env = {
        **os.environ,
        "ANTHROPIC_BASE_URL": server.base_url,
        "ANTHROPIC_API_KEY": "test",
        "TERM": "xterm-256color",
        "PROMPT_TOOLKIT_NO_CPR": "1",
    }
    return pexpect.spawn(
        sys.executable,
        ["-m", "agentcli", "run", "write the note"],
        cwd=str(workspace),
        env=env,
        dimensions=(24, 100),
        encoding="utf-8",
        codec_errors="replace",
        timeout=60,
    )


@pytest.mark.parametrize("answer", ["y", "n"])
def test_run_in_a_terminal_asks_and_follows_the_answer(
    server: FakeMessagesServer, workspace: Path, answer: str
) -> None:
    server.push(
        stream_message([tool_use("write_file", {"path": "note.txt", "content": "hi\n"})]),
        stream_message([text("All done.")]),
    )
    child = spawn_run(workspace, server)
    child.expect("allow\\?")
    child.send(answer)
    if answer == "n":
        child.expect("why not")
        child.send("not now\r")
    child.expect("All done.")
    child.expect(pexpect.EOF)
    child.close()
    # Refused, the write never happened: "All done." is a claim the workspace contradicts.
    assert child.exitstatus == (0 if answer == "y" else 4)
    result = server.requests[1].body["messages"][-1]["content"][0]
    if answer == "y":
        assert (workspace / "note.txt").read_text() == "hi\n"
        assert not result.get("is_error")
    else:
        assert not (workspace / "note.txt").exists()
        assert result["is_error"] and "not now" in result["content"]


@pytest.mark.parametrize(
    ("words", "current", "offered"),
    [
        ("agentcli ses", 1, {"sessions"}),
        ("agentcli sessions ", 2, {"list", "show", "export"}),
        ("agentcli run --max", 2, {"--max-turns", "--max-cost", "--max-tokens"}),
    ],
)
def test_shell_completion_answers_from_a_terminal(
    workspace: Path, words: str, current: int, offered: set[str]
) -> None:
    """The completion script runs `agentcli` with no arguments from the user's terminal: that
    must answer the completion, not start the REPL."""
    env = {
        **os.environ,
        "COMP_WORDS": words,
        "COMP_CWORD": str(current),
        "_AGENTCLI_COMPLETE": "complete_bash",
        "TERM": "xterm-256color",
    }
    child = pexpect.spawn(
        sys.executable,
        ["-m", "agentcli"],
        cwd=str(workspace),
        env=env,
        encoding="utf-8",
        timeout=60,
    )
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert set(child.before.split()) == offered
