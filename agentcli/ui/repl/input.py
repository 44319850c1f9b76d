"""The REPL's input line (prompt-toolkit): persistent history, multi-line editing, completion
of slash commands (custom commands and skills with their argument hints) and of workspace
paths after `@`, and the status line as bottom toolbar.

Keys: Enter sends; Alt-Enter / Esc Enter / Ctrl-J insert a newline, and so does Enter after a
trailing backslash; pasted text keeps its newlines (bracketed paste). Ctrl-T shows or hides the
todo list above the status line. Ctrl-C clears the line,
or on an empty line raises KeyboardInterrupt (the REPL then says how to exit); Ctrl-D on an
empty line raises EOFError.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from prompt_toolkit.buffer import Buffer
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.output import ColorDepth, Output
from prompt_toolkit.shortcuts import PromptSession

from agentcli.private import open_private
from agentcli.truncation import shorten

PROMPT = "❯ "
MAX_PATH_COMPLETIONS = 200
SKIPPED_DIRS = frozenset({".git", "__pycache__", "node_modules", ".venv", ".mypy_cache"})


@dataclass(frozen=True, slots=True)
class CustomCommand:
    """A custom command or skill, as completion offers it."""

    name: str
    """With its slash: `/git:commit`."""
    hint: str
    """Its `argument-hint` (empty: none)."""
    description: str


def _complete(event: KeyPressEvent) -> None:
    """Tab: the only completion is taken (a folder: what it holds is listed at once), else the
    next one is selected, else completion starts."""
    buffer = event.current_buffer
    state = buffer.complete_state
    if state is not None and len(state.completions) == 1:
        _apply(buffer, state.completions[0])
    elif state is not None:
        buffer.complete_next()
    else:
        buffer.start_completion(insert_common_part=True)


def _send(event: KeyPressEvent) -> None:
    """Enter: take the completion selected, continue a line that ends in a backslash, else
    send the line."""
    buffer = event.current_buffer
    state = buffer.complete_state
    if state is not None and state.current_completion is not None:
        _apply(buffer, state.current_completion)
        return
    document = buffer.document
    if document.text_before_cursor.endswith("\\") and document.is_cursor_at_the_end:
        buffer.delete_before_cursor(1)
        buffer.insert_text("\n")
        return
    buffer.validate_and_handle()


def _apply(buffer: Buffer, completion: Completion) -> None:
    """Take `completion`; a folder (`@calc/`) lists what it holds at once, as a shell does,
    instead of after one more key."""
    buffer.apply_completion(completion)
    if completion.text.endswith("/"):
        buffer.start_completion(select_first=False)


class ReplCompleter(Completer):
    """Slash commands (and their arguments) at the start of the line, the custom commands and
    skills with their argument hints after them, and paths after `@`."""

    def __init__(
        self,
        commands: Mapping[str, str],
        workspace: Path,
        arguments: Callable[[str], Iterable[str]] = lambda _name: (),
        custom: Callable[[], Iterable[CustomCommand]] = lambda: (),
    ) -> None:
        self.commands = commands
        self.workspace = workspace
        self.arguments = arguments
        self.custom = custom

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterator[Completion]:
        before = document.text_before_cursor
        if before.startswith("/") and "\n" not in before:
            name, space, arg = before.partition(" ")
            if not space:
                for command, help_text in self.commands.items():
                    if command.startswith(name):
                        yield Completion(
                            command, -len(name), display_meta=shorten(help_text.split(".")[0], 50)
                        )
                for custom in self.custom():
                    if custom.name.startswith(name) and custom.name not in self.commands:
                        shown = f"{custom.name} {custom.hint}".rstrip()
                        meta = shorten(custom.description, 50)
                        yield Completion(custom.name, -len(name), display=shown, display_meta=meta)
                return
            if " " not in arg:
                for choice in self.arguments(name):
                    if choice.startswith(arg):
                        yield Completion(choice, -len(arg))
                return
        word = document.get_word_before_cursor(WORD=True)
        if word.startswith("@"):
            yield from self._paths(word)

    def _paths(self, word: str) -> Iterator[Completion]:
        partial = word[1:]
        folder, _, stem = partial.rpartition("/")
        base = (self.workspace / folder).resolve()
        root = self.workspace.resolve()
        if base != root and root not in base.parents:
            return
        try:
            entries = sorted(os.scandir(base), key=lambda e: (not e.is_dir(), e.name))
        except OSError:
            return
        shown = 0
        for entry in entries:
            if not entry.name.startswith(stem) or entry.name in SKIPPED_DIRS:
                continue
            if entry.name.startswith(".") and not stem.startswith("."):
                continue
            is_dir = entry.is_dir()
            suffix = "/" if is_dir else ""
            relative = f"{folder}/{entry.name}" if folder else entry.name
            yield Completion(f"@{relative}{suffix}", -len(word), display=entry.name + suffix)
            shown += 1
            if shown >= MAX_PATH_COMPLETIONS:
                return


def key_bindings(toggle_todos: Callable[[], None] | None = None) -> KeyBindings:
    bindings = KeyBindings()

    @bindings.add("c-t")  # prompt-toolkit's own would transpose two characters
    def _toggle_todos(event: KeyPressEvent) -> None:
        if toggle_todos is not None:
            toggle_todos()
            event.app.invalidate()

    @bindings.add("c-o")  # prompt-toolkit's own Ctrl-O would send the half-typed line
    def _show_latest_call(event: KeyPressEvent) -> None:
        from agentcli.ui.repl.call_log import ShowLatestCall

        # The half-typed line is kept (it comes back after the pager), not left on the screen
        # as a line of its own under the pager's output.
        event.app.erase_when_done = True
        event.app.exit(exception=ShowLatestCall(event.current_buffer.text))

    bindings.add("tab")(_complete)
    bindings.add("enter")(_send)

    @bindings.add("escape", "enter")
    @bindings.add("c-j")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @bindings.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if buffer.text:
            buffer.reset()
        else:
            event.app.exit(exception=KeyboardInterrupt())

    return bindings


def open_history(path: Path) -> History:
    """The history file, or (if the data dir is not writable) an in-memory history."""
    try:
        open_private(path, "ab").close()  # what the user typed is theirs alone
    except OSError:
        return InMemoryHistory()
    return FileHistory(str(path))


def color_depth(color_system: str | None) -> ColorDepth:
    """Match rich's detection (NO_COLOR, TERM, COLORTERM) so both libraries agree."""
    if os.environ.get("NO_COLOR") or color_system is None:
        return ColorDepth.DEPTH_1_BIT
    return {
        "standard": ColorDepth.DEPTH_4_BIT,
        "256": ColorDepth.DEPTH_8_BIT,
        "truecolor": ColorDepth.DEPTH_24_BIT,
        "windows": ColorDepth.DEPTH_4_BIT,
    }.get(color_system, ColorDepth.DEPTH_4_BIT)


def make_session(
    *,
    history: History,
    completer: Completer,
    toolbar: Callable[[], str],
    depth: ColorDepth,
    input: Input | None = None,
    output: Output | None = None,
    toggle_todos: Callable[[], None] | None = None,
) -> PromptSession[str]:
    return PromptSession(
        PROMPT,
        history=history,
        completer=completer,
        complete_while_typing=True,
        key_bindings=key_bindings(toggle_todos),
        multiline=True,
        prompt_continuation=lambda width, line, wrap: " " * width,
        bottom_toolbar=lambda: " " + toolbar(),
        color_depth=depth,
        reserve_space_for_menu=6,
        enable_history_search=False,
        input=input,
        output=output,
    )
