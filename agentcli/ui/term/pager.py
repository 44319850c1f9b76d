"""A full-screen pager inside the terminal: long text (a whole diff, a tool call's output) read
page by page without leaving agentcli, then back to where the user was.

It is a prompt-toolkit application, so it works the same in a real terminal and under a pipe
input in tests, needs no external `less`, and returns to the caller (a permission question, the
REPL prompt) when the user presses `q` or Esc. The text is a rich `Text` the caller has already
made safe (`agentcli.ui.term.safe.visible`); only the styles rich adds become terminal sequences.
"""

from __future__ import annotations

import io
from collections.abc import Callable

from prompt_toolkit.application import Application
from prompt_toolkit.formatted_text import ANSI, StyleAndTextTuples, to_formatted_text
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import HSplit, Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.output import Output
from rich.console import Console
from rich.text import Text

QUIT = "q/Esc back"
HELP = "↑/↓ j/k line · Space/PgDn PgUp/b page · g/G top/end"


def styled_lines(text: Text, width: int) -> list[StyleAndTextTuples]:
    """`text` wrapped to `width` columns, one list of prompt-toolkit fragments per line."""
    buffer = io.StringIO()
    console = Console(
        file=buffer, width=max(20, width), force_terminal=True, color_system="standard"
    )
    console.print(text, end="", soft_wrap=False, markup=False, highlight=False)
    rendered = buffer.getvalue().rstrip("\n").split("\n")
    return [to_formatted_text(ANSI(line)) for line in rendered]


class Pager:
    """The state of one pager: the lines and the first line on screen."""

    def __init__(self, text: Text, title: str, width: int) -> None:
        self.lines = styled_lines(text, width) or [[("", "")]]
        self.title = title
        self.top = 0
        self.height = 20

    def scroll(self, delta: int) -> None:
        self.top = max(0, min(self.top + delta, max(0, len(self.lines) - self.height)))

    def body(self) -> StyleAndTextTuples:
        fragments: StyleAndTextTuples = []
        for line in self.lines[self.top : self.top + self.height]:
            fragments.extend(line)
            fragments.append(("", "\n"))
        return fragments

    def status(self, width: int = 10_000) -> StyleAndTextTuples:
        """The bottom line: how to leave first, where the view is, then the title and the
        other keys as far as `width` lets them (never cut in a word: a part fits or goes)."""
        last = min(len(self.lines), self.top + self.height)
        parts = [QUIT, f"lines {self.top + 1}-{last} of {len(self.lines)}", self.title, HELP]
        line = ""
        for part in parts:
            candidate = f"{line} · {part}" if line else f" {part}"
            if len(candidate) + 1 > width:
                if not line:  # not even the first part fits: cut it
                    line = candidate[: max(1, width - 1)]
                break
            line = candidate
        return [("reverse", line + " ")]


async def page(
    text: Text,
    *,
    title: str,
    input: Input | None = None,
    output: Output | None = None,
) -> None:
    """Show `text` full screen until the user presses q or Esc."""
    app: Application[None] = Application(full_screen=True, input=input, output=output)
    size = app.output.get_size()
    pager = Pager(text, title, size.columns)
    pager.height = max(1, size.rows - 1)
    bindings = KeyBindings()

    def scroller(delta: int | None, *, pages: bool = False) -> Callable[[KeyPressEvent], None]:
        def handler(event: KeyPressEvent) -> None:
            pager.height = max(1, event.app.output.get_size().rows - 1)
            if delta is None:
                pager.top = max(0, len(pager.lines) - pager.height)
            else:
                pager.scroll(delta * pager.height if pages else delta)

        return handler

    for names, delta, pages in (
        (("down", "j", "enter"), 1, False),
        (("up", "k"), -1, False),
        ((" ", "pagedown", "f", "c-f"), 1, True),
        (("pageup", "b", "c-b"), -1, True),
        (("G", "end"), None, False),
    ):
        for name in names:
            bindings.add(name)(scroller(delta, pages=pages))

    @bindings.add("g")
    @bindings.add("home")
    def _top(event: KeyPressEvent) -> None:
        pager.top = 0

    @bindings.add("q")
    @bindings.add("Q")
    @bindings.add("escape", eager=True)
    @bindings.add("c-c")
    def _quit(event: KeyPressEvent) -> None:
        event.app.exit()

    bindings.add("<any>")(lambda event: None)
    app.layout = Layout(
        HSplit(
            [
                Window(FormattedTextControl(pager.body), wrap_lines=False),
                Window(
                    FormattedTextControl(lambda: pager.status(app.output.get_size().columns)),
                    height=1,
                ),
            ]
        )
    )
    app.key_bindings = bindings
    await app.run_async(handle_sigint=False)
