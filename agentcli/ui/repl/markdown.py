"""Streaming markdown for the REPL: an answer is rendered as it grows, without flicker.

Each update re-renders the part of the answer that may still change and prints the lines that
can no longer change (all but the last few) exactly once; the rest is the live tail shown under
it. So the re-rendered part does not grow with the answer, a long answer is cut into chunks at
block boundaries (a blank line outside code fences, not inside a list): the finished chunk is
printed in full and rendering goes on from the boundary.
"""

from __future__ import annotations

import re
import time

from rich.console import Console
from rich.markdown import Markdown
from rich.segment import Segment, Segments

from agentcli.ui.term.safe import visible

LIVE_TAIL_LINES = 6
"""Rendered lines kept live at the bottom: the part a growing paragraph or table may reflow."""
RENDER_INTERVAL_S = 0.08
CHUNK_CHARS = 2000
"""Past this many characters in the rendered part, cut at the last block boundary."""

_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_CONTINUES_BLOCK = re.compile(r"^(\s|[-*+] |\d+[.)] |>)")

Lines = list[list[Segment]]


def block_boundary(text: str, start: int) -> int | None:
    """The offset of the last block start after `start` where the text before it renders the
    same on its own: after a blank line, outside a code fence, not continuing a list, an
    indented block or a quote. None if there is none."""
    found = None
    in_fence = False
    offset = 0
    previous_blank = False
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        fence = _FENCE.match(line) is not None
        if not in_fence and previous_blank and stripped and offset > start:
            if fence or not _CONTINUES_BLOCK.match(line):
                found = offset
        if fence:
            in_fence = not in_fence
        previous_blank = not stripped and not in_fence
        offset += len(line)
    return found


def _plain_blank(line: list[Segment]) -> bool:
    return all(
        not segment.text.strip() and (segment.style is None or segment.style.bgcolor is None)
        for segment in line
    )


def _squeeze_blank(lines: Lines, after_blank: bool) -> tuple[Lines, bool]:
    """Drop blank lines that follow a blank line (markdown blocks each add their own margin);
    lines with a background colour (code block padding) are kept."""
    kept = []
    for line in lines:
        blank = _plain_blank(line)
        if not (blank and after_blank):
            kept.append(line)
        after_blank = blank
    return kept, after_blank


def _rstrip(line: list[Segment]) -> list[Segment]:
    """Without the padding spaces after the text (they would end up in copied text)."""
    kept = list(line)
    while kept:
        last = kept[-1]
        if last.control or (last.style is not None and last.style.bgcolor is not None):
            break
        stripped = last.text.rstrip(" ")
        if stripped:
            kept[-1] = Segment(stripped, last.style)
            break
        kept.pop()
    return kept


class MarkdownStream:
    """Markdown that grows: prints settled lines once, keeps the tail for the live area."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.text = ""
        self.base = 0
        """Where the part that is still re-rendered starts; everything before is printed."""
        self.printed = 0
        """Lines of the current part's render already printed."""
        self.tail: Lines = []
        self._rendered_at = 0.0
        self._after_blank = True

    def _render(self, text: str) -> Lines:
        options = self.console.options.update(width=max(20, self.console.width))
        # Made visible before rendering: rich would drop some controls (BEL, CR) silently.
        markdown = Markdown(visible(text), code_theme="ansi_dark", hyperlinks=False)
        lines = self.console.render_lines(markdown, options, pad=False)
        while lines and not "".join(s.text for s in lines[-1]).strip():
            lines.pop()
        return lines

    def _emit(self, lines: Lines) -> None:
        lines, self._after_blank = _squeeze_blank(lines, self._after_blank)
        if not lines:
            return
        segments: list[Segment] = []
        for line in lines:
            segments.extend(_rstrip(line))
            segments.append(Segment.line())
        self.console.print(Segments(segments), end="", soft_wrap=True)

    def visible_tail(self) -> Lines:
        return _squeeze_blank(self.tail, self._after_blank)[0]

    def add(self, delta: str, *, force: bool = False) -> None:
        self.text += delta
        now = time.monotonic()
        if not force and now - self._rendered_at < RENDER_INTERVAL_S:
            return
        self._rendered_at = now
        if len(self.text) - self.base > CHUNK_CHARS:
            self._close_chunk()
        lines = self._render(self.text[self.base :])
        settled = max(self.printed, len(lines) - LIVE_TAIL_LINES)
        self._emit(lines[self.printed : settled])
        self.printed = settled
        self.tail = lines[settled:]

    def _close_chunk(self) -> None:
        boundary = block_boundary(self.text, self.base)
        if boundary is None:
            return
        done = self._render(self.text[self.base : boundary])
        if self.printed <= len(done):
            self._emit([*done[self.printed :], []])  # and the blank line between two blocks
            self.printed = 0
        else:  # lines printed past the chunk (and its blank line) belong to the next part
            self.printed -= len(done) + 1
        self.base = boundary

    def finish(self) -> None:
        """Print everything not printed yet and start a new, empty answer."""
        if self.text[self.base :].strip():
            lines = self._render(self.text[self.base :])
            self._emit(lines[self.printed :])
        self.text, self.base, self.printed, self.tail = "", 0, 0, []
        self._after_blank = True

    def discard(self) -> bool:
        """Drop the answer (its request is being retried). True if some of it was printed."""
        shown = self.printed > 0 or self.base > 0
        self.text, self.base, self.printed, self.tail = "", 0, 0, []
        self._after_blank = True
        return shown
