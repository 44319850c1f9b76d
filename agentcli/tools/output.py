"""One output cap for every tool result, with truncation stated exactly.

A capped result says what range is shown, the total size, where the full text was saved (a spill
file in the session's data directory) and how to read on, so the model never mistakes partial
evidence for the whole. Lines are counted the way `read_file` numbers them (split on `\\n`
only), so an `offset` quoted in a notice is the line `read_file` shows at that number.
"""

from __future__ import annotations

import codecs
import contextlib
import uuid
from pathlib import Path
from typing import BinaryIO

from agentcli.private import open_private, write_private
from agentcli.truncation import keep_ends

DEFAULT_OUTPUT_CAP = 30_000
NOTICE_ROOM = 600
"""Upper bound on what a truncation notice adds to the capped text."""
MAX_SPILL_BYTES = 64 * 1024 * 1024
"""Spill files stop growing here, so a runaway command cannot fill the disk."""


def split_lines(text: str) -> list[str]:
    """Lines without their `\\n` (a trailing `\\n` does not start another line)."""
    if not text:
        return []
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return lines


def count_lines(text: str) -> int:
    return text.count("\n") + (0 if not text or text.endswith("\n") else 1)


def new_spill_path(data_dir: Path, stem: str) -> Path:
    """A fresh spill file name under the session's data directory."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in stem)[:80] or "output"
    return data_dir / "spill" / f"{safe}-{uuid.uuid4().hex[:8]}.txt"


def save_spill(text: str, spill_path: Path) -> str | None:
    """Keep `text` in a spill file (only the user may read it: it holds file contents and
    command output). None when saved; else why it could not be (the file system's reason,
    e.g. a full disk), for the notice to say instead of pointing at a file that is not there."""
    try:
        # surrogateescape: a name that is not UTF-8 is written back as its bytes.
        write_private(spill_path, text.encode("utf-8", errors="surrogateescape"))
    except OSError as exc:
        return _unsaved(spill_path, exc)
    return None


def _unsaved(spill_path: Path, exc: OSError) -> str:
    with contextlib.suppress(OSError):
        spill_path.unlink()  # a partial copy would pass for the whole
    return f"the full output could not be saved ({exc.strerror or exc})"


def read_on(spill_path: Path, offset: int) -> str:
    return f'read_file(path="{spill_path}", offset={offset})'


def cap_head(text: str, limit: int, spill_path: Path) -> str:
    """Keep the first `limit` characters (cut at a line boundary when possible)."""
    kept = keep_ends(text, limit)
    if kept is None:
        return text
    unsaved = save_spill(text, spill_path)
    head = kept.head
    cut = head.rfind("\n")
    if cut >= limit // 2:
        head = head[: cut + 1]
    complete = head.count("\n")
    if head.endswith("\n"):
        shown = f"lines 1-{complete}" if complete else "no complete line"
        offset = complete + 1
    else:
        shown = f"lines 1-{complete} and the start of line {complete + 1}"
        offset = complete + 1
    joiner = "" if head.endswith("\n") else "\n"
    return (
        f"{head}{joiner}[output truncated: showing characters 1-{len(head)} ({shown}) of "
        f"{len(text)} characters ({count_lines(text)} lines). "
        + (
            f"Full output saved to {spill_path}; read on with {read_on(spill_path, offset)}]"
            if unsaved is None
            else f"{unsaved[:1].upper()}{unsaved[1:]}.]"
        )
    )


def cap_head_tail(text: str, limit: int, spill_path: Path) -> str:
    """Keep the beginning and the end (errors usually sit at the end of command output)."""
    collector = HeadTailCollector(limit, spill_path)
    collector.feed(text.encode("utf-8"))
    return collector.finish().text


class CollectedOutput:
    """What a `HeadTailCollector` kept: the (possibly capped) text and the totals."""

    def __init__(self, text: str, total_bytes: int, total_lines: int, truncated: bool) -> None:
        self.text = text
        self.total_bytes = total_bytes
        self.total_lines = total_lines
        self.truncated = truncated


class HeadTailCollector:
    """Collects a stream of bytes in bounded memory: the first and last `limit // 2` bytes
    are kept for the model; once the stream outgrows `limit` everything also goes to a spill
    file (up to MAX_SPILL_BYTES)."""

    def __init__(self, limit: int, spill_path: Path) -> None:
        self.limit = max(limit, 2)
        self.spill_path = spill_path
        self._half = self.limit // 2
        self._head = bytearray()
        self._tail = bytearray()
        self._total = 0
        self._newlines = 0
        self._last_byte = b""
        self._spill: BinaryIO | None = None
        self._spilled = 0
        self._outgrown = False
        self._unsaved: str | None = None
        """Why the spill file could not be written (the output is still capped)."""

    def feed(self, data: bytes) -> None:
        if not data:
            return
        self._total += len(data)
        self._newlines += data.count(b"\n")
        self._last_byte = data[-1:]
        if not self._outgrown:
            self._head += data
            if self._total <= self.limit:
                return
            # The stream just outgrew the cap: from now on keep a head, a tail and the spill.
            self._outgrown = True
            try:
                self._spill = open_private(self.spill_path)
            except OSError as exc:
                self._unsaved = _unsaved(self.spill_path, exc)
            self._write_spill(bytes(self._head))
            self._tail = self._head[-self._half :]
            del self._head[self._half :]
            return
        self._write_spill(data)
        self._tail += data
        if len(self._tail) > 4 * self._half:
            del self._tail[: len(self._tail) - self._half]

    def _write_spill(self, data: bytes) -> None:
        room = MAX_SPILL_BYTES - self._spilled
        if self._spill is None or room <= 0:
            return
        try:
            self._spill.write(data[:room])
        except OSError as exc:  # e.g. the disk filled up: the command goes on, unspilled
            with contextlib.suppress(OSError):
                self._spill.close()
            self._spill = None
            self._unsaved = _unsaved(self.spill_path, exc)
            return
        self._spilled += min(room, len(data))

    def finish(self) -> CollectedOutput:
        """Close the spill file and return the text for the model."""
        total_lines = self._newlines + (0 if self._last_byte in (b"", b"\n") else 1)
        if not self._outgrown:
            text = decode_output(bytes(self._head))
            return CollectedOutput(text, self._total, total_lines, truncated=False)
        if self._spill is not None:
            try:
                self._spill.close()
            except OSError as exc:  # the last buffered bytes did not fit either
                self._unsaved = _unsaved(self.spill_path, exc)
            self._spill = None
        head = bytes(self._head[: self._half])
        tail = bytes(self._tail[-self._half :])
        text = self._head_tail_text(head, tail, total_lines)
        return CollectedOutput(text, self._total, total_lines, truncated=True)

    def _head_tail_text(self, head: bytes, tail: bytes, total_lines: int) -> str:
        cut = head.rfind(b"\n")
        start = tail.find(b"\n")
        if cut < 0 or start < 0:
            # Very long lines: show byte ranges instead of whole lines.
            first_omitted, last_omitted = len(head) + 1, self._total - len(tail)
            omitted = f"bytes {first_omitted}-{last_omitted}"
            shown = f"bytes 1-{len(head)} and {last_omitted + 1}-{self._total}"
            offset = head.count(b"\n") + 1
        else:
            head, tail = head[: cut + 1], tail[start + 1 :]
            head_lines = _line_count(head)
            tail_lines = _line_count(tail)
            first_omitted, last_omitted = head_lines + 1, total_lines - tail_lines
            omitted = f"lines {first_omitted}-{last_omitted}"
            shown = f"lines 1-{head_lines}" + (
                f" and {last_omitted + 1}-{total_lines}" if tail_lines else ""
            )
            offset = first_omitted
        partial = (
            f" (the spill file holds only the first {MAX_SPILL_BYTES} bytes)"
            if self._total > MAX_SPILL_BYTES
            else ""
        )
        saved = (
            f"Full output saved to {self.spill_path}{partial}; "
            f"read the omitted part with {read_on(self.spill_path, offset)}"
            if self._unsaved is None
            else f"{self._unsaved[:1].upper()}{self._unsaved[1:]}"
        )
        notice = (
            f"[... {omitted} omitted; showing {shown} of {total_lines} lines "
            f"({self._total} bytes). {saved} ...]"
        )
        head_text = decode_output(head, cut_after=True)
        tail_text = decode_output(tail, cut_before=True)
        joiner = "" if head_text.endswith("\n") or not head_text else "\n"
        return f"{head_text}{joiner}{notice}\n{tail_text}"


def decode_output(data: bytes, *, cut_before: bool = False, cut_after: bool = False) -> str:
    """Command output as text for the model. A byte that is not part of valid UTF-8 (in a file
    name `ls` lists, say) is spelled `\\xff`, the form `fsnames.for_model` gives names, so the
    model can name it; a character that the head/tail cut split (`cut_before`, `cut_after`: the
    piece starts or ends at a cut) is one `\ufffd` per stray byte, as a plain decode shows it."""
    lead = 0
    if cut_before:
        while lead < min(3, len(data)) and 0x80 <= data[lead] <= 0xBF:
            lead += 1
    decoder = codecs.getincrementaldecoder("utf-8")("backslashreplace")
    text = decoder.decode(data[lead:], final=not cut_after)
    split_at_end = cut_after and bool(decoder.getstate()[0])
    return "\ufffd" * lead + text + ("\ufffd" if split_at_end else "")


def _line_count(data: bytes) -> int:
    return data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)
