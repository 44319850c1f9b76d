"""`agentcli --resume` without an id, end to end: the real binary in a pseudo-terminal shows the
workspace's sessions (recorded in the real SQLite journal), the user picks one, and the next
message goes to the fake Messages API with that session's conversation before it."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text
from tests.repl.test_pty import Terminal
from tests.repl.test_resume_start import recorded


@pytest.fixture
def server() -> Iterator[FakeMessagesServer]:
    with FakeMessagesServer() as fake:
        yield fake


def said(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content)


def test_a_bare_resume_picks_a_session_and_goes_on_with_it(
    workspace: Path, server: FakeMessagesServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    older = asyncio.run(recorded(workspace, "the codeword is PELICAN", "Noted."))
    asyncio.run(recorded(workspace, "what is 2+2?", "4"))
    server.push(stream_message([text("It was PELICAN.")]))

    term = Terminal(workspace, server, "--resume")
    term.expect("newest first:")
    term.expect("what is 2+2?")  # the newest first
    term.expect("the codeword is PELICAN")
    term.expect("resume which? [1-2, Enter: 1, Esc: none]")
    term.send("2\r")
    term.expect(f"resumed session {older} (2 messages)")
    term.expect("you: the codeword is PELICAN")
    term.prompt()
    term.send("what was the codeword?\r")
    term.expect("It was PELICAN.")
    term.prompt()
    term.send("\x04")
    assert term.exit_code() == 0
    assert len(server.requests) == 1
    sent = [said(message) for message in server.requests[0].body["messages"]]
    assert sent == ["the codeword is PELICAN", "Noted.", "what was the codeword?"]


def test_sigterm_at_the_start_up_picker_ends_agentcli(
    workspace: Path, server: FakeMessagesServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The question is not the REPL's prompt, but `kill` must end agentcli there too."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    asyncio.run(recorded(workspace, "an earlier task", "ok"))
    term = Terminal(workspace, server, "--resume")
    term.expect("resume which? [1-1, Enter: 1, Esc: none]")
    term.child.kill(signal.SIGTERM)
    term.expect("no session resumed")
    assert term.exit_code() == 130
    assert server.requests == []
