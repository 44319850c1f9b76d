"""Untrusted text never drives the terminal: the one sanitizer every renderer goes through.

Everything the model writes, every tool input and output, file names and contents, and error
text from a server is untrusted. A terminal reads some characters as orders: C0 controls (a
carriage return or erase-line redraws what the user reads), ESC and the sequences it starts
(cursor moves, OSC 52 clipboard writes, window titles, hyperlinks), the 8-bit C1 controls
(U+0080–U+009F, e.g. CSI U+009B), and bidi controls that reorder what is shown (Trojan Source).
Invisible formatting characters (zero-width spaces, word joiners, tag characters) hide text.

`visible(text)` makes each of them visible as an escape (`\\x1b`, `\\u202e`) instead of passing
it through or dropping it; newlines and tabs stay. Lone surrogates (a file name that is not
UTF-8, kept by surrogateescape) are escaped too, so they cannot crash a UTF-8 terminal.

`SafeConsole` is the rich Console every agentcli renderer uses: it applies `visible` to every
text segment it renders (rich's own styling and cursor controls are not text segments, so
colours, spinners and `NO_COLOR` keep working), and it never reads rich markup or emoji codes
in what it prints, so `[bold]` or `[link=…]` in untrusted text stays literal. Text written to a
stream without rich (the final answer in text mode, `sessions show`, error lines) goes through
`visible` directly. JSON output keeps exact strings: its escaping already makes them inert.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType
    from rich.segment import Segment

_ASCII_HIDDEN = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""Controls, format characters (bidi, zero-width, tags, soft hyphen…), surrogates, and the
line and paragraph separators some terminals break lines on."""


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _hidden(char: str, keep: str) -> bool:
    if char in keep:
        return False
    if char < "\x80":
        return char < " " or char == "\x7f"
    return unicodedata.category(char) in _HIDDEN_CATEGORIES


def visible(text: str, *, keep: str = "\n\t", crlf: bool = True) -> str:
    """`text` with every character that could control a terminal or hide text written as an
    escape. `keep` are the controls left as they are (newline and tab by default); `crlf` keeps
    a carriage return right before a newline (a Windows line end moves nothing out of sight)."""
    if text.isascii() and not _needs_escape_ascii(text, keep):
        return text
    out = []
    keep_crlf = crlf and "\n" in keep
    for index, char in enumerate(text):
        if char == "\r" and keep_crlf and text[index + 1 : index + 2] == "\n":
            out.append(char)
        elif _hidden(char, keep):
            out.append(_escape(char))
        else:
            out.append(char)
    return "".join(out)


def _needs_escape_ascii(text: str, keep: str) -> bool:
    return any(char not in keep for char in _ASCII_HIDDEN.findall(text))


def hidden_characters(text: str, *, keep: str = "\n\t") -> int:
    """How many characters `visible(text, keep=keep, crlf=False)` would escape."""
    return sum(1 for char in text if _hidden(char, keep))


def _segments(segments: Iterable[Segment]) -> Iterable[Segment]:
    from rich.segment import Segment

    for segment in segments:
        if segment.control or not segment.text:
            yield segment  # rich's own cursor and screen controls: no untrusted text in them
        else:
            text = visible(segment.text)
            yield segment if text is segment.text else Segment(text, segment.style)


@functools.cache
def _console_class() -> type[Console]:
    # rich is imported on first use: `run` prints nothing before its first request.
    from rich.console import Console

    class SafeConsole(Console):
        def render(
            self, renderable: RenderableType, options: ConsoleOptions | None = None
        ) -> Iterable[Segment]:
            return _segments(super().render(renderable, options))

    return SafeConsole


def safe_console(**kwargs: Any) -> Console:
    """A rich Console that makes everything it renders visible (see the module docstring).
    Markup, emoji codes and highlighting are off unless asked for."""
    kwargs.setdefault("markup", False)
    kwargs.setdefault("emoji", False)
    kwargs.setdefault("highlight", False)
    return _console_class()(**kwargs)
