"""A definition's body with its arguments in place, cut into text and shell lines.

Placeholders:
- `$ARGUMENTS`: the argument string as typed; when the body has no argument placeholder at all
  and arguments were given, they are appended as `ARGUMENTS: …` instead;
- `$ARGUMENTS[N]`: the N-th argument, from 0;
- `$1` … `$9`: the N-th argument, from 1 (as Codex prompts and Claude Code's command files
  written before 2026 use them); `$0` is the first argument too, as current Claude Code reads
  it, so a file using both `$0` and `$1` is told that `$1` is the first here;
- `${AGENTCLI_SKILL_DIR}` (also `${CLAUDE_SKILL_DIR}`): the skill's directory;
- `$$`: a literal `$` in Codex prompts (as Codex reads it).
Arguments are split as a shell would (quotes group words); a missing one is empty.

Shell lines, run before the prompt is sent: `` !`cmd` `` at the start of a line or after
whitespace, and a fenced block opened by ```` ```! ````. The body is cut into pieces first, so
an argument can never become a shell line; inside a shell line every substituted value is
shell-quoted (`shlex.quote`): `x; rm -rf ~` stays one word.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

_PLACEHOLDER = re.compile(
    r"\$\{(?:AGENTCLI|CLAUDE)_SKILL_DIR\}|\$ARGUMENTS\[(\d+)\]|\$ARGUMENTS\b|\$(\d)(?!\d)|\$\$"
)
_ARGUMENT_USE = re.compile(r"\$ARGUMENTS(?:\[\d+\])?\b|\$\d(?!\d)")
_ZERO = re.compile(r"\$0(?!\d)")
_ONE_TO_NINE = re.compile(r"\$[1-9](?!\d)")
_INLINE = re.compile(r"(?:(?<=\s)|^)!`([^`\n]+)`", re.MULTILINE)
_FENCE = re.compile(r"^```![ \t]*\r?\n(.*?)^```[ \t]*\r?$\n?", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True, slots=True)
class Text:
    text: str


@dataclass(frozen=True, slots=True)
class ShellLine:
    command: str
    block: bool = False
    """From a ```` ```! ```` block (the output keeps a fence of its own)."""


Piece = Text | ShellLine


@dataclass(frozen=True, slots=True)
class Arguments:
    raw: str
    words: tuple[str, ...]

    @classmethod
    def parse(cls, raw: str) -> Arguments:
        raw = raw.strip()
        try:
            words = shlex.split(raw)
        except ValueError:  # an unbalanced quote: plain words
            words = raw.split()
        return cls(raw, tuple(words))

    def word(self, index: int) -> str:
        return self.words[index] if 0 <= index < len(self.words) else ""


def pieces(body: str) -> list[Piece]:
    """The body cut into text and shell lines, in order."""
    found: list[Piece] = []
    for index, part in enumerate(_FENCE.split(body)):
        if index % 2 == 1:
            found.append(ShellLine(part.rstrip("\n"), block=True))
            continue
        at = 0
        for match in _INLINE.finditer(part):
            found.append(Text(part[at : match.start()]))
            found.append(ShellLine(match.group(1)))
            at = match.end()
        found.append(Text(part[at:]))
    return [piece for piece in found if not (isinstance(piece, Text) and not piece.text)]


def uses_arguments(body: str) -> bool:
    return _ARGUMENT_USE.search(body) is not None


def mixes_zero_and_one(body: str) -> bool:
    """`$0` and `$1`…`$9` both: written for 0-based arguments, read here as 1-based."""
    return _ZERO.search(body) is not None and _ONE_TO_NINE.search(body) is not None


MIXED_NOTICE = (
    "uses both $0 and $1: agentcli reads $1…$9 as the first to ninth argument (as Codex and "
    "Claude Code's older command files do) and $0 as the first; for 0-based arguments write "
    "$ARGUMENTS[0], $ARGUMENTS[1], …"
)


def substituted(
    body: str, arguments: Arguments, directory: Path, *, dollars: bool = False
) -> list[Piece]:
    """The body's pieces with the placeholders replaced (quoted in shell lines), and the
    arguments appended as `ARGUMENTS: …` when the body uses none. `dollars`: `$$` is `$`."""
    done: list[Piece] = []
    for piece in pieces(body):
        if isinstance(piece, Text):
            done.append(Text(_replace(piece.text, arguments, directory, str, dollars)))
        else:
            command = _replace(piece.command, arguments, directory, shlex.quote, dollars)
            done.append(ShellLine(command, piece.block))
    if arguments.raw and not uses_arguments(body):
        if done and isinstance(done[-1], Text):
            done[-1] = Text(done[-1].text.rstrip())
        done.append(Text(f"\n\nARGUMENTS: {arguments.raw}"))
    return done


def _replace(
    text: str,
    arguments: Arguments,
    directory: Path,
    quote: Callable[[str], str],
    dollars: bool,
) -> str:
    def value(match: re.Match[str]) -> str:
        whole = match.group(0)
        if whole == "$$":
            return "$" if dollars else whole
        if whole.startswith("${"):
            return quote(str(directory))
        if match.group(1) is not None:
            return quote(arguments.word(int(match.group(1))))
        if match.group(2) is not None:
            number = int(match.group(2))
            return quote(arguments.word(max(number - 1, 0)))
        return quote(arguments.raw)

    return _PLACEHOLDER.sub(value, text)
