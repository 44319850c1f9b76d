"""File names are bytes: how a name that is not valid UTF-8 is carried across each boundary.

On Linux a file name (and a workspace path) is any bytes but NUL and `/`. Inside agentcli it is a
`str` decoded as Python decodes every OS string (`os.fsdecode`: UTF-8 with `surrogateescape`):
each byte that is not part of valid UTF-8 becomes the lone surrogate U+DC80–U+DCFF (byte 0xff
is `'\\udcff'`), and `os.fsencode` gives the exact bytes back. Where such a name leaves the
process it takes one of these forms, each lossless:

- the file system, git (`-z` output decoded with `surrogateescape`), commands: the bytes.
- the journal (SQLite): `to_db` stores a string that is valid UTF-8 as TEXT, as before, and any
  other as a BLOB of its bytes (SQLite's TEXT cannot hold a lone surrogate, and Python's
  `sqlite3` refuses to encode one); `from_db` reads either back. Equal names compare equal.
  JSON columns need nothing: `json.dumps` writes a lone surrogate as the escape `\\udcff`.
  The conversation itself (messages, tool results) is stored as the model was sent it.
- JSON output (`--output-format json`, stream-json, `sessions export`): the string itself, which
  JSON writes as `\\udcff` (`json_text` where the output is not ASCII-escaped anyway);
  `os.fsencode(json.loads(text)[...])` gives the bytes back.
- the model: `for_model` writes each such byte as the four characters `\\xff`. The API takes
  valid Unicode only (the SDK cannot even encode a lone surrogate); `\\xff` is how bash
  (`$'\\xff'`), printf and Python spell the byte, so the model can name the file in a command,
  and the file tools map a path in that form back to the name (`from_model`). Text that merely
  contains a literal backslash-x stays as it is: it is only read as bytes when no file of that
  literal name exists and the decoded name is exactly one `for_model` shows.
- the terminal: `agentcli.ui.term.safe.visible` shows it as `\\udcff`, like every other character it
  escapes.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")
_BYTE_ESCAPE = re.compile(r"\\x([89a-fA-F][0-9a-fA-F])")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def for_model(text: str) -> str:
    """`text` as valid Unicode for the model: each byte kept by `surrogateescape` written as
    `\\xNN` (any other lone surrogate as `\\uNNNN`). Text without one is returned as it is."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(_escaped, text)


def from_model(text: str) -> str | None:
    """The name `text` spells in `for_model`'s form (`\\xff.txt` -> `'\\udcff.txt'`), or None
    when it holds no such escape or is not exactly what `for_model` makes of some name (the
    escapes must stand for bytes that are not valid UTF-8)."""
    escapes = len(_BYTE_ESCAPE.findall(text))
    if not escapes:
        return None
    decoded = _BYTE_ESCAPE.sub(lambda m: chr(0xDC00 + int(m.group(1), 16)), text)
    name = os.fsdecode(os.fsencode(decoded))  # bytes that form UTF-8 become characters
    return name if len(_SURROGATE.findall(name)) == escapes else None


def to_db(text: str) -> str | bytes:
    """What to bind in SQLite for a name or text that may hold surrogate-escaped bytes."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return os.fsencode(text)


def from_db(value: str | bytes) -> str:
    """A value `to_db` stored, as the string it was."""
    return value if isinstance(value, str) else os.fsdecode(value)


def json_text(value: Any, **options: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, ...)` that stays writable as UTF-8: a lone
    surrogate (only ever inside a string) is written as its `\\uNNNN` escape."""
    text = json.dumps(value, ensure_ascii=False, **options)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
