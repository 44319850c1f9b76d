"""The input line: slash-command parsing, completion of commands and @paths, key handling."""

from __future__ import annotations

from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import ColorDepth, DummyOutput

from agentcli.ui.repl import commands
from agentcli.ui.repl.input import ReplCompleter, make_session, open_history


def completions(completer: ReplCompleter, text: str) -> list[str]:
    return [c.text for c in completer.get_completions(Document(text), CompleteEvent())]


@pytest.fixture
def completer(workspace: Path) -> ReplCompleter:
    (workspace / "src" / "pkg").mkdir(parents=True)
    (workspace / "src" / "main.py").write_text("")
    (workspace / "src" / "pkg" / "mod.py").write_text("")
    (workspace / "README.md").write_text("")
    (workspace / ".env").write_text("")
    (workspace / ".git").mkdir()
    return ReplCompleter(
        {name: c.help for name, c in commands.COMMANDS.items()},
        workspace,
        commands.argument_choices,
    )


@pytest.mark.parametrize(
    ("line", "parsed"),
    [
        ("/help", ("/help", "")),
        ("  /mode   auto ", ("/mode", "auto")),
        ("/accept pytest -q tests/", ("/accept", "pytest -q tests/")),
        ("/etc/hosts is wrong", None),
        ("fix /help text", None),
        ("/", None),
    ],
)
def test_parse(line: str, parsed: tuple[str, str] | None) -> None:
    assert commands.parse(line) == parsed


def test_command_completion(completer: ReplCompleter) -> None:
    assert completions(completer, "/c") == [
        "/clear",
        "/check",
        "/cost",
        "/compact",
        "/context",
        "/calls",
    ]
    assert "/help" in completions(completer, "/")
    assert completions(completer, "/mode a") == ["accept-edits", "auto"]
    assert completions(completer, "fix /c") == []


def test_path_completion_after_at(completer: ReplCompleter) -> None:
    assert completions(completer, "look at @") == ["@src/", "@README.md"]
    assert completions(completer, "look at @src/") == ["@src/pkg/", "@src/main.py"]
    assert completions(completer, "@src/pkg/m") == ["@src/pkg/mod.py"]
    assert completions(completer, "@.") == ["@.env"]  # hidden only when asked for; never .git
    assert completions(completer, "@../") == []  # nothing outside the workspace
    assert completions(completer, "no at sign") == []


async def submit(keys: str, tmp_path: Path) -> str:
    with create_pipe_input() as pipe:
        session = make_session(
            history=open_history(tmp_path / "h" / "history"),
            completer=ReplCompleter({}, tmp_path),
            toolbar=lambda: "status",
            depth=ColorDepth.DEPTH_1_BIT,
            input=pipe,
            output=DummyOutput(),
        )
        pipe.send_text(keys)
        return await session.prompt_async(handle_sigint=False)


@pytest.mark.parametrize(
    ("keys", "text"),
    [
        ("one line\r", "one line"),
        ("first\\\rsecond\r", "first\nsecond"),  # trailing backslash continues the message
        ("first\x1b\rsecond\r", "first\nsecond"),  # Esc/Alt-Enter inserts a newline
        ("first\nsecond\r", "first\nsecond"),  # Ctrl-J inserts a newline
        ("\x1b[200~pasted\rtwo lines\x1b[201~\r", "pasted\ntwo lines"),  # bracketed paste
        ("typo\x03again\r", "again"),  # Ctrl-C clears a non-empty line
    ],
)
async def test_keys(keys: str, text: str, tmp_path: Path) -> None:
    assert await submit(keys, tmp_path) == text


async def test_ctrl_c_on_empty_line_and_ctrl_d(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt):
        await submit("\x03", tmp_path)
    with pytest.raises(EOFError):
        await submit("\x04", tmp_path)


async def test_history_is_persistent(tmp_path: Path) -> None:
    await submit("remember me\r", tmp_path)
    assert await submit("\x1b[A\r", tmp_path) == "remember me"  # Up recalls it next time
    assert "+remember me" in (tmp_path / "h" / "history").read_text()


def test_history_falls_back_to_memory_when_unwritable(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    history = open_history(blocker / "sub" / "history")
    assert type(history).__name__ == "InMemoryHistory"
