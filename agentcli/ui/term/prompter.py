"""TerminalPrompter: asks the user, in the terminal, whether a tool call may run.

It shows the tool, its risk and what will happen (the request's preview — a diff for an edit,
the command and cwd for shell — or else the target's summary; for a command, how it will run:
in which sandbox profile, or in red, OUTSIDE the sandbox). Untrusted text is shown exactly,
control and invisible characters as escapes, with a warning in plain words when there are any
(`agentcli.ui.term.safe`). It takes one key: `y` yes once,
`a` always (saved as the suggested rule), `n` no, then an optional reason that goes to the
model; when the preview is longer than the screen shows, `d` pages through all of it
(`agentcli.ui.term.pager`) and comes back to the question. A diff shows its `+added -removed` count
and both sides of every change, whatever its length. Requests are asked strictly one at a
time. Keys typed before the question appeared are discarded so that type-ahead can never
answer a permission prompt. Ctrl-C cancels the task.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager

from prompt_toolkit.application import Application
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.output import Output
from prompt_toolkit.shortcuts import PromptSession
from rich.console import Console
from rich.text import Text

from agentcli.permissions import Answer, PermissionRequest, PromptAnswer
from agentcli.truncation import shorten
from agentcli.ui.term.diffs import diff_text
from agentcli.ui.term.pager import page
from agentcli.ui.term.safe import hidden_characters, visible

MAX_PREVIEW_LINES = 60
MAX_SUMMARY = 50
CANCEL = "cancel"


def _no_suspend() -> AbstractContextManager[None]:
    return contextlib.nullcontext()


def _flush_typeahead() -> None:
    try:
        import termios

        if sys.stdin.isatty():
            termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)
    except (ImportError, OSError, ValueError):
        pass


def is_diff(text: str) -> bool:
    return any(line.startswith(("@@", "+++", "---")) for line in text.splitlines()[:5])


def preview_lines(request: PermissionRequest) -> list[str]:
    body = request.preview.strip("\n") or request.target.summary
    return body.split("\n")  # not splitlines: \r, \x0b, \x1c… stay in the line, escaped


def diff_stat(lines: list[str]) -> Text:
    """`+12 -3 lines`: how much the change adds and removes, counted over the whole diff."""
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    stat = Text("    ")
    stat.append(f"+{added}", style="green")
    stat.append(" ")
    stat.append(f"-{removed}", style="red")
    stat.append(" lines\n")
    return stat


def preview_text(request: PermissionRequest, max_lines: int | None = MAX_PREVIEW_LINES) -> Text:
    """What will happen, as the user should read it before saying yes: every control or
    invisible character written as an escape (`agentcli.ui.term.safe`), none dropped. Capped at
    `max_lines` (None: all of it), saying exactly what the cap leaves out."""
    lines = preview_lines(request)
    cap = len(lines) if max_lines is None else max_lines
    if is_diff(request.preview):
        return diff_stat(lines).append_text(diff_text(lines, max_lines=cap))
    text = Text()
    for line in lines[:cap]:
        text.append(f"    {visible(line, keep='', crlf=False)}\n")
    if len(lines) > cap:
        text.append(f"    … {len(lines) - cap} more lines\n", style="dim")
    return text


ROOM_FOR_THE_QUESTION = 10
"""Lines the question needs under a preview (what wants what, warnings, how it runs, the
answers and the prompt): a preview never pushes the question off the screen."""


def is_long(request: PermissionRequest, cap: int = MAX_PREVIEW_LINES) -> bool:
    """Whether the preview is cut at the prompt (at `cap` lines), so `d` pages through all."""
    return len(preview_lines(request)) > cap


class TerminalPrompter:
    """A `Prompter` for an interactive terminal."""

    asks_a_person = True

    def __init__(
        self,
        console: Console,
        *,
        suspend: Callable[[], AbstractContextManager[None]] = _no_suspend,
        previewed: set[str] | None = None,
        input: Input | None = None,
        output: Output | None = None,
    ) -> None:
        self.console = console
        self.suspend = suspend
        self.previewed = previewed if previewed is not None else set()
        self._input = input
        self._output = output
        self._lock = asyncio.Lock()

    async def ask(self, request: PermissionRequest) -> PromptAnswer:
        async with self._lock:
            with self.suspend():
                self._show(request)
                if self._input is None:
                    _flush_typeahead()
                choices = "yan" if request.suggested_rule else "yn"
                key = await self._read_key(choices + ("d" if is_long(request, self._cap()) else ""))
                while key == "d":
                    await page(
                        preview_text(request, max_lines=None),
                        title=visible(f"{request.tool}: {request.target.summary}", keep=""),
                        input=self._input,
                        output=self._output,
                    )
                    key = await self._read_key(choices + "d")
                if key == CANCEL:
                    self.console.print(Text("  cancelling the task…", style="yellow"))
                    task = asyncio.current_task()
                    if task is not None:
                        task.cancel()
                    await asyncio.sleep(0)  # raises CancelledError: the task unwinds from here
                    raise asyncio.CancelledError
                if key == "y":
                    return PromptAnswer(Answer.YES)
                if key == "a":
                    return PromptAnswer(Answer.ALWAYS)
                return PromptAnswer(Answer.NO, await self._read_reason())

    def _cap(self) -> int:
        """How many preview lines fit above the question on this terminal."""
        return max(3, min(MAX_PREVIEW_LINES, self.console.height - ROOM_FOR_THE_QUESTION))

    def _show(self, request: PermissionRequest) -> None:
        summary = visible(request.target.summary, keep="", crlf=False)
        if request.preview.strip() and len(summary) > MAX_SUMMARY:
            summary = shorten(summary, MAX_SUMMARY)  # the preview below shows it whole
        head = Text()
        head.append("? ", style="bold yellow")
        head.append(visible(request.tool, keep=""), style="bold")
        head.append(f" wants to {summary}", style="")
        head.append(f"  [{request.risk.value}]", style="magenta")
        self.console.print(head, soft_wrap=False)
        if request.preview.strip():
            if is_diff(request.preview):  # the diff after the call would only repeat it
                self.previewed.add(request.call_id)
            # Soft wrap: a command or path must never look split into two lines.
            self.console.print(preview_text(request, self._cap()), end="", soft_wrap=True)
        hidden = hidden_characters(request.target.subject, keep="\n")
        if hidden:
            warning = Text("  ⚠ ", style="bold red")
            warning.append(
                f"this contains {hidden} control or invisible character"
                f"{'' if hidden == 1 else 's'} (an escape sequence, a carriage return, a bidi "
                "or zero-width character…), shown above as \\x.. / \\u.. escapes; they are "
                "part of what will run",
                style="bold red",
            )
            self.console.print(warning, soft_wrap=True)
        if request.confinement is not None:
            unconfined = not request.confinement.sandboxed
            where = Text("  ⚠ " if unconfined else "  ", style="bold red")
            where.append(f"runs {request.confinement.describe()}")
            where.stylize("bold red" if unconfined else "dim")
            self.console.print(where, soft_wrap=True)
            if unconfined and request.reason:
                why = Text(f"  why: {visible(request.reason)}", style="red")
                self.console.print(why, soft_wrap=True)
        options = Text("  y", style="bold")
        options.append(" yes")
        if request.suggested_rule:
            options.append(" · ")
            options.append("a", style="bold")
            options.append(f" always allow {visible(request.suggested_rule, keep='')}")
        options.append(" · ")
        options.append("n", style="bold")
        options.append(" no")
        if is_long(request, self._cap()):
            options.append(" · ")
            options.append("d", style="bold")
            options.append(" page through all of it")
        options.append(" · Ctrl-C cancels", style="dim")
        self.console.print(options)

    async def _read_key(self, choices: str) -> str:
        answered: list[str] = []
        bindings = KeyBindings()

        def answer(value: str) -> Callable[[KeyPressEvent], None]:
            def handler(event: KeyPressEvent) -> None:
                answered.append(value)
                event.app.exit(result=value)

            return handler

        for key in choices:
            bindings.add(key)(answer(key))
            bindings.add(key.upper())(answer(key))
        bindings.add("escape", eager=True)(answer("n"))
        bindings.add("c-c")(answer(CANCEL))
        bindings.add("c-d")(answer(CANCEL))
        bindings.add("<any>")(lambda event: None)
        prompt = f"  allow? [{'/'.join(choices.replace('d', ''))}] "
        control = FormattedTextControl(lambda: prompt + (answered[0] if answered else ""))
        app: Application[str] = Application(
            layout=Layout(Window(control, height=1, dont_extend_height=True)),
            key_bindings=bindings,
            full_screen=False,
            input=self._input,
            output=self._output,
        )
        return await app.run_async(handle_sigint=False)

    async def _read_reason(self) -> str | None:
        session: PromptSession[str] = PromptSession(input=self._input, output=self._output)
        try:
            reason = await session.prompt_async(
                "  why not? (optional, told to the model; Enter to skip) ", handle_sigint=False
            )
        except (KeyboardInterrupt, EOFError):
            return None
        return reason.strip() or None
