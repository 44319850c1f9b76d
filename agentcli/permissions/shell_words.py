"""What bash makes of one word of a tree-sitter-bash syntax tree.

A word (an argument, a command name, an assignment's value, a redirection target) is read the
way bash reads it: quotes removed and backslash escapes resolved, character by character,
remembering which characters were quoted. From that follow the literal value bash passes to the
program and whatever bash computes only at run time: parameter, arithmetic and tilde expansion,
`$'…'`/`$"…"` quoting, command and process substitution (reasons that no narrow rule may match
the command), and unquoted glob characters and brace expansion (the word may become other
words). Node types not listed here are never read as literal text: they are a reason too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node

PARAMETER = "a parameter expansion"
COMMAND_SUBSTITUTION = "command substitution"
PROCESS_SUBSTITUTION = "process substitution"
ARITHMETIC = "arithmetic expansion"
ANSI_C = "$'…' quoting"
LOCALE = '$"…" quoting'
TILDE = "tilde expansion"
BRACE = "brace expansion"
EXTGLOB = "an extended glob"
COMMENT_WORD = "a word bash reads as a comment"
CUT = "a word tree-sitter cut oddly"
JOINED = "words tree-sitter joined"

_SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution"})
_EXPANDING = {
    "simple_expansion": PARAMETER,
    "expansion": PARAMETER,
    "command_substitution": COMMAND_SUBSTITUTION,
    "process_substitution": PROCESS_SUBSTITUTION,
    "arithmetic_expansion": ARITHMETIC,
    "ansi_c_string": ANSI_C,
    "translated_string": LOCALE,
}
_PLAIN = frozenset({"word", "number", "variable_name", "extglob_pattern", "test_operator"})
"""Node types whose text bash reads as an unquoted word (backslash escapes aside)."""
_DOUBLE_QUOTE_ESCAPES = frozenset('$`"\\\n')
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True)
class Word:
    """One word as bash reads it."""

    text: str
    """The value bash passes when `literal` (quotes removed, escapes resolved); otherwise the
    same with every expansion left as written (`$HOME/x`, `$(id)`)."""
    reasons: tuple[tuple[int, str], ...] = ()
    """(byte offset, why) for everything bash computes at run time: a word with reasons is
    not literal."""
    globbed: bool = False
    """An unquoted `*`, `?`, `[` or a brace expansion: bash may turn it into other words."""
    substitutions: tuple[Node, ...] = ()
    """Command and process substitutions inside it: commands bash runs to compute it."""

    @property
    def literal(self) -> bool:
        return not self.reasons


def read_word(*nodes: Node, assignment: bool = False) -> Word:
    """Read `nodes` (adjacent in the source: one word to bash, however tree-sitter cut it) as
    bash reads a word; `assignment` for the value of `NAME=value` (no pathname or brace
    expansion there, but tilde expansion after `=` and every `:`)."""
    reader = _Reader(nodes[0].start_byte if nodes else 0)
    for node in nodes:
        reader.node(node)
    return reader.finish(assignment=assignment)


def add_word_node(words: list[list[Node]], node: Node) -> None:
    """Add a word's node to `words` (the nodes of each word, for `read_word`); one right after
    the previous one (`''\\a`) is the same word."""
    if words and words[-1][-1].end_byte == node.start_byte:
        words[-1].append(node)
    else:
        words.append([node])


def substitutions_in(node: Node) -> list[Node]:
    """The outermost command and process substitutions anywhere under `node`."""
    found: list[Node] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in _SUBSTITUTIONS:
            found.append(current)
        else:
            stack.extend(reversed(current.children))
    return sorted(found, key=lambda n: n.start_byte)


def is_name(text: str) -> bool:
    """Is `text` a valid shell variable name (so `text=…` is an assignment)?"""
    return _NAME.fullmatch(text) is not None


def node_text(node: Node) -> str:
    """The source text of `node`, undecodable bytes kept as surrogates."""
    return (node.text or b"").decode("utf-8", "surrogateescape")


class _Reader:
    def __init__(self, start: int) -> None:
        self.start = start
        self.chars: list[tuple[str, bool]] = []
        """(character, quoted) for the literal characters, in order."""
        self.pieces: list[str] = []
        self.reasons: list[tuple[int, str]] = []
        self.substitutions: list[Node] = []

    def literal(self, char: str, quoted: bool) -> None:
        self.chars.append((char, quoted))
        self.pieces.append(char)

    def computed(self, node: Node, why: str) -> None:
        self.reasons.append((node.start_byte, why))
        self.pieces.append(node_text(node))
        self.substitutions.extend(substitutions_in(node))
        # What follows an expansion is not at the start of the word (an inert placeholder).
        self.chars.append(("\0", True))

    def node(self, node: Node) -> None:
        kind = node.type
        if kind in _PLAIN or not node.is_named:
            self.unquoted(node_text(node), node.start_byte)
        elif kind == "raw_string":
            for char in node_text(node)[1:-1]:
                self.literal(char, True)
        elif kind == "string":
            self.double_quoted(node)
        elif kind in ("concatenation", "variable_assignment"):
            self.sequence(node, node.start_byte, node.end_byte)
        elif kind == "brace_expression":
            self.reasons.append((node.start_byte, BRACE))
            self.unquoted(node_text(node), node.start_byte)
        elif kind in _EXPANDING:
            self.computed(node, _EXPANDING[kind])
        else:
            self.computed(node, f"unsupported syntax in a word ({kind})")

    def sequence(self, node: Node, start: int, end: int, *, quoted: bool = False) -> None:
        """The named children of `node` between byte offsets `start` and `end`, and the text
        between them read as plain text: tokens (a lone `$`) and text tree-sitter left out of
        every child (its closing-quote token of `" "` takes in the space)."""
        source = node.text or b""
        base = node.start_byte
        cursor = start
        for child in node.named_children:
            if child.end_byte <= start or child.start_byte >= end:
                continue
            if child.start_byte < cursor or child.end_byte > end:
                self.reasons.append((child.start_byte, CUT))
                continue
            if child.start_byte > cursor:
                self.gap(source[cursor - base : child.start_byte - base], cursor, quoted)
            if quoted and child.type == "string_content":
                self.in_double_quotes(node_text(child), child.start_byte)
            else:
                self.node(child)
            cursor = child.end_byte
        if cursor < end:
            self.gap(source[cursor - base : end - base], cursor, quoted)

    def gap(self, raw: bytes, offset: int, quoted: bool) -> None:
        text = raw.decode("utf-8", "surrogateescape")
        if quoted:
            self.in_double_quotes(text, offset)
        else:
            self.unquoted(text, offset)

    def double_quoted(self, node: Node) -> None:
        raw = node.text or b""
        if not (len(raw) >= 2 and raw.startswith(b'"') and raw.endswith(b'"')):
            self.computed(node, "an unterminated string")
            return
        self.sequence(node, node.start_byte + 1, node.end_byte - 1, quoted=True)

    def in_double_quotes(self, text: str, offset: int) -> None:
        index = 0
        while index < len(text):
            char = text[index]
            if char == "\\" and index + 1 < len(text) and text[index + 1] in _DOUBLE_QUOTE_ESCAPES:
                if text[index + 1] != "\n":  # a line continuation: both characters go
                    self.literal(text[index + 1], True)
                index += 2
                continue
            if char in "$`":
                self.reasons.append((offset + index, PARAMETER if char == "$" else "a backquote"))
            self.literal(char, True)
            index += 1

    def unquoted(self, text: str, offset: int) -> None:
        index = 0
        while index < len(text):
            char = text[index]
            if char == "\\":
                if index + 1 >= len(text):
                    self.reasons.append((offset + index, "a trailing backslash"))
                    self.literal(char, False)
                elif text[index + 1] != "\n":
                    self.literal(text[index + 1], True)
                index += 2
                continue
            if char in "$`":
                self.reasons.append((offset + index, PARAMETER if char == "$" else "a backquote"))
            elif char in "()":
                self.reasons.append((offset + index, EXTGLOB))
            elif char in " \t\n;&|<>":  # bash would end the word there
                self.reasons.append((offset + index, JOINED))
            self.literal(char, False)
            index += 1

    def finish(self, *, assignment: bool) -> Word:
        chars = self.chars
        globbed = False
        if not assignment:
            globbed = any(c in "*?[" and not q for c, q in chars)
            if _has_brace_expansion(chars):
                globbed = True
                self.reasons.append((self.start, BRACE))
            if chars and chars[0] == ("#", False):
                self.reasons.append((self.start, COMMENT_WORD))
        if _has_tilde_expansion(chars, assignment=assignment):
            self.reasons.append((self.start, TILDE))
        return Word(
            text="".join(self.pieces),
            reasons=tuple(self.reasons),
            globbed=globbed,
            substitutions=tuple(self.substitutions),
        )


def _has_brace_expansion(chars: list[tuple[str, bool]]) -> bool:
    """An unquoted `{` with an unquoted `}` after it and an unquoted `,` or `..` between them
    (bash expands more narrowly; this never misses one)."""
    opened = False
    previous = ""
    between = False
    for char, quoted in chars:
        if quoted:
            previous = ""
            continue
        if char == "{":
            opened, between = True, False
        elif opened and (char == "," or (char == "." and previous == ".")):
            between = True
        elif opened and char == "}" and between:
            return True
        previous = char
    return False


def _has_tilde_expansion(chars: list[tuple[str, bool]], *, assignment: bool) -> bool:
    """An unquoted `~` at the start of the word, or (as bash also expands in words that look
    like assignments, `x=~/a`, `PATH=a:~/b`) right after an unquoted `=` or `:`."""
    if assignment and chars and chars[0] == ("~", False):
        return True
    previous: tuple[str, bool] | None = None
    for index, (char, quoted) in enumerate(chars):
        if char == "~" and not quoted:
            if index == 0 or (previous is not None and previous[0] in "=:" and not previous[1]):
                return True
        previous = (char, quoted)
    return False
