"""The real `agentcli` REPL in a pseudo-terminal (pexpect), against the fake Messages API.

Few and robust: generous timeouts, every wait is for something the user would see.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pexpect
import pytest

from agentcli.testing.fake_api import (
    FakeMessagesServer,
    HangResponse,
    stream_message,
    text,
    tool_use,
)

PROMPT = "❯"
TIMEOUT = 60


@pytest.fixture
def server() -> Iterator[FakeMessagesServer]:
    with FakeMessagesServer() as fake:
        yield fake


ANSI = re.compile(r"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07]*\x07|[()][0-9A-B]|[=>78])")


class Terminal:
    """The REPL in a pty; `expect` looks for text as the user would read it (styles removed)."""

    def __init__(self, workspace: Path, server: FakeMessagesServer, *args: str, **env: str) -> None:
        environment = {
            **os.environ,
            "ANTHROPIC_BASE_URL": server.base_url,
            "ANTHROPIC_API_KEY": "test",
            "TERM": "xterm-256color",
            # pexpect is no terminal emulator: it cannot answer prompt-toolkit's
            # cursor-position request, so prompt-toolkit must not wait for the answer.
            "PROMPT_TOOLKIT_NO_CPR": "1",
            **env,
        }
        self.child = pexpect.spawn(
            sys.executable,
            ["-m", "agentcli", *args],
            cwd=str(workspace),
            env=environment,
            dimensions=(24, 80),
            encoding="utf-8",
            codec_errors="replace",
        )
        self.raw = ""
        self.seen = 0

    def plain(self) -> str:
        text = ANSI.sub("", self.raw)
        partial = text.rfind("\x1b")  # an escape sequence still arriving
        return text if partial < 0 else text[:partial]

    def expect(self, needle: str, timeout: float = TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while True:
            found = self.plain().find(needle, self.seen)
            if found >= 0:
                self.seen = found + len(needle)
                return
            if time.monotonic() > deadline:
                tail = self.plain()[-1500:]
                raise AssertionError(f"did not see {needle!r}; the screen ended with:\n{tail}")
            try:
                self.raw += self.child.read_nonblocking(65536, timeout=0.2)
            except pexpect.TIMEOUT:
                pass
            except pexpect.EOF as exc:
                tail = self.plain()[-1500:]
                raise AssertionError(f"agentcli exited before {needle!r}:\n{tail}") from exc

    def prompt(self) -> None:
        """Wait until the prompt is back (keys typed earlier would be discarded)."""
        self.expect(PROMPT)

    def send(self, keys: str) -> None:
        self.child.send(keys)

    def exit_code(self) -> int:
        self.child.expect(pexpect.EOF, timeout=TIMEOUT)
        self.child.close()
        return int(self.child.exitstatus if self.child.exitstatus is not None else -1)


def wait_for(condition: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_ask_stream_commands_and_exit(workspace: Path, server: FakeMessagesServer) -> None:
    (workspace / "hello.py").write_text("print('hi')\n")
    server.push(
        stream_message([text("Reading it."), tool_use("read_file", {"path": "hello.py"})]),
        stream_message([text("The file prints **hi**.\n\n- one line\n- no tests")]),
    )
    term = Terminal(workspace, server, TERM="xterm")  # a 16-colour terminal, colours on
    term.prompt()
    term.send("/help\r")
    term.expect("/resume [ID]")
    term.prompt()
    term.send("what does hello.py do?\r")
    term.expect("✓ read_file hello.py")
    term.expect("The file prints")
    term.expect("task unverified")
    term.expect("proposed 1 · executed 1")
    term.prompt()
    term.send("/cost\r")
    term.expect("this session: 1 task ")
    term.prompt()
    term.send("/mode auto\r")
    term.expect("permission mode: auto")
    term.prompt()
    term.send("/bogus\r")
    term.expect("unknown command /bogus")
    term.prompt()
    term.send("\x03")
    term.expect("to exit, press Ctrl-D")
    term.send("\x04")
    assert term.exit_code() == 0
    assert server.pairing_problems() == []
    assert len(server.requests) == 2
    history = Path(os.environ["AGENTCLI_HOME"]) / "repl_history"
    assert "+what does hello.py do?" in history.read_text()


def test_ctrl_c_cancels_the_running_task_and_the_session_goes_on(
    workspace: Path, server: FakeMessagesServer
) -> None:
    server.push(HangResponse(seconds=60), stream_message([text("Second answer here.")]))
    term = Terminal(workspace, server)
    term.prompt()
    term.send("take your time\r")
    wait_for(lambda: len(server.requests) == 1, "the model request")
    term.send("\x03")
    term.expect("task cancelled")
    term.prompt()
    term.send("and now?\r")
    term.expect("Second answer here.")
    term.prompt()
    term.send("\x04")
    assert term.exit_code() == 0
    assert server.pairing_problems() == []
    second = server.requests[1].body["messages"]
    assert [m["role"] for m in second][-1] == "user"


def test_without_api_key_the_repl_opens_and_says_what_is_missing(
    workspace: Path, server: FakeMessagesServer
) -> None:
    term = Terminal(workspace, server, ANTHROPIC_API_KEY="")
    term.expect("ANTHROPIC_API_KEY is not set")
    term.prompt()
    term.send("hello\r")
    term.expect("tasks need ANTHROPIC_API_KEY")
    term.prompt()
    term.send("/exit\r")
    assert term.exit_code() == 0
    assert server.requests == []


def running(marker: str) -> list[int]:
    """Processes (not zombies) whose command line holds `marker`. A sandboxed command's pids
    are its own PID namespace's, so it is found by what it runs, not by a pid it reports."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmdline.replace(b"\0", b" ") and state != "Z":
            found.append(int(entry.name))
    return found


def test_permission_prompt_then_ctrl_c_kills_the_running_command(
    workspace: Path, server: FakeMessagesServer
) -> None:
    command = "sleep 300.4321 & echo started > started; wait"
    server.push(
        stream_message([text("Starting it."), tool_use("shell", {"command": command})]),
        stream_message([text("Understood, I stopped.")]),
    )
    term = Terminal(workspace, server)
    term.prompt()
    term.send("run the slow job\r")
    term.expect("shell wants to run")
    term.expect(f"$ {command}")
    term.expect(f"in {workspace}")
    term.expect("allow? [y/")
    term.send("y")
    wait_for(lambda: (workspace / "started").exists(), "the command to start")
    wait_for(lambda: bool(running("sleep 300.4321")), "the sleep to run")
    term.send("\x03")
    term.expect("task cancelled")
    wait_for(lambda: not running("300.4321"), "the command's processes to end", 10)
    term.prompt()
    term.send("ok?\r")
    term.expect("Understood, I stopped.")
    term.prompt()
    term.send("\x04")
    assert term.exit_code() == 0
    assert server.pairing_problems() == []
    results = [
        block
        for message in server.requests[1].body["messages"]
        for block in (message["content"] if isinstance(message["content"], list) else [])
        if block.get("type") == "tool_result"
    ]
    assert len(results) == 1 and results[0]["is_error"]


def test_options_before_any_command_configure_the_repl(
    workspace: Path, server: FakeMessagesServer
) -> None:
    term = Terminal(workspace, server, "-m", "claude-opus-4-5", "--permission-mode", "read-only")
    term.prompt()
    term.send("/model\r")
    term.expect("claude-opus-4-5")
    term.prompt()
    term.send("/mode\r")
    term.expect("read-only")
    term.prompt()
    term.send("\x04")
    assert term.exit_code() == 0


def test_esc_interrupts_the_task_and_gives_the_message_back(
    workspace: Path, server: FakeMessagesServer
) -> None:
    server.push(HangResponse(seconds=60), stream_message([text("Second answer here.")]))
    term = Terminal(workspace, server)
    term.prompt()
    term.send("take your time\r")
    term.expect("Esc or Ctrl-C cancels")
    wait_for(lambda: len(server.requests) == 1, "the model request")
    term.send("\x1b")
    term.expect("task cancelled")
    term.expect("take your time")  # back at the prompt, to edit or resend
    term.send(", but less\r")
    term.expect("Second answer here.")
    term.prompt()
    term.send("\x04")
    assert term.exit_code() == 0
    assert server.pairing_problems() == []
    last = server.requests[1].body["messages"][-1]
    assert "take your time, but less" in str(last["content"])
