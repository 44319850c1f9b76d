"""What a redirection does to bash, read from a tree-sitter-bash syntax tree.

A redirection writes a file (`> out`, `>> log`, `&> all`: the write checks and rules see the
target), reads one (`< in`), or does nothing lasting (a descriptor duplicated or closed, output
into `/dev/null`); any other operator counts as both. Where tree-sitter's tree is not bash's, bash
wins: words tree-sitter reads as more targets (`echo a > out b`) are bash's arguments, and the
statements it puts inside a here-document's redirection (`cat <<EOF | wc`) are walked after it.
A here-document's body is input, unless an unquoted delimiter lets bash expand it; and it must
end on the line where bash ends it, or a command could hide in it.

The statement walk (`shell_walk`) calls `read_redirect` for each redirection node it meets.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from agentcli.permissions.shell_words import Word, node_text

if TYPE_CHECKING:
    from tree_sitter import Node

# Output redirection targets that write nothing to the file system.
HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})

HEREDOC_END = "a here-document bash may end elsewhere"
BACKQUOTED_HEREDOC = "a backquote in a here-document"
UNTERMINATED_HEREDOC = "an unterminated here-document"
VARIABLE_DESCRIPTOR = "a {variable} redirection"

_WRITES = frozenset({">", ">>", ">|", "&>", "&>>", ">&"})
_FD_DUPLICATION = re.compile(r"[0-9]+-?|-")
_PLAIN_DELIMITER = re.compile(r"[A-Za-z0-9_.:+@%/-]+")


@dataclass(frozen=True, slots=True)
class Redirections:
    """What redirections do: files written and read, words tree-sitter read as extra targets
    (bash's arguments: `echo a > out b` runs `echo a b`), and the statements tree-sitter puts
    inside a here-document's redirection (`cat <<EOF | wc`: `| wc`), to walk after it."""

    writes: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    arguments: tuple[Node, ...] = ()
    then: tuple[Node, ...] = ()

    def __add__(self, other: Redirections) -> Redirections:
        return Redirections(
            self.writes + other.writes,
            self.reads + other.reads,
            self.arguments + other.arguments,
            self.then + other.then,
        )


NO_REDIRECTIONS = Redirections()


class Walk(Protocol):
    """What reading a redirection needs of the statement walk (`shell_walk`)."""

    source: bytes

    def unsafe(self, node: Node, why: str) -> None:
        """Record why no narrow rule may match the command."""

    def children(self, node: Node) -> Iterator[tuple[str | None, Node]]:
        """(field name, child) for every child but comments (checked by the walk)."""

    def word(self, *nodes: Node, assignment: bool = False) -> Word:
        """Read one word (its substitutions walked as nested commands)."""

    def unsupported(self, node: Node, *, nested: bool) -> None:
        """Something not read as a whole: unsafe, its commands still listed."""

    def substitutions_of(self, node: Node) -> None:
        """Walk the command substitutions anywhere under `node`."""


def read_redirect(walk: Walk, node: Node) -> Redirections:
    """What the redirection `node` does, and why no narrow rule may match it (told `walk`)."""
    if walk.source[node.start_byte - 1 : node.start_byte] == b"}":
        # `{fd}>file` has bash pick a descriptor; tree-sitter reads `{fd}` as an argument.
        walk.unsafe(node, VARIABLE_DESCRIPTOR)
    if node.type == "heredoc_redirect":
        return _heredoc(walk, node)
    operator = ""
    targets: list[Node] = []
    for name, child in walk.children(node):
        if name == "descriptor" and child.type == "file_descriptor":
            continue
        if name == "destination" or (node.type == "herestring_redirect" and child.is_named):
            targets.append(child)
        elif not child.is_named and not operator:
            operator = child.type
        else:
            walk.unsafe(child, "an unusual redirection")
    if not targets:
        if operator not in ("<&-", ">&-"):
            walk.unsafe(node, "an unusual redirection")
        return NO_REDIRECTIONS
    done = _redirect_to(walk, node, operator, walk.word(targets[0]))
    return done + Redirections(arguments=tuple(targets[1:]))


def _redirect_to(walk: Walk, node: Node, operator: str, word: Word) -> Redirections:
    target = word.text
    if operator == "<<<":
        return NO_REDIRECTIONS
    if operator == "<":
        return Redirections(reads=(target,))
    if operator in (">&", "<&") and word.literal and _FD_DUPLICATION.fullmatch(target):
        return NO_REDIRECTIONS
    if operator in _WRITES:
        if word.literal and target in HARMLESS_TARGETS:
            return NO_REDIRECTIONS
        walk.unsafe(node, "redirection into a file")
        return Redirections(writes=(target,))
    walk.unsafe(node, f"an unusual redirection ({operator})")
    return Redirections(writes=(target,), reads=(target,))


def _heredoc(walk: Walk, node: Node) -> Redirections:
    """A here-document: its body is input, unless an unquoted delimiter lets bash expand
    it; and it must end on the line where bash ends it, or a command could hide in it."""
    pieces: dict[str, Node] = {}
    redirections = NO_REDIRECTIONS
    for name, child in walk.children(node):
        kind = child.type
        if kind in ("heredoc_start", "heredoc_body", "heredoc_end") and kind not in pieces:
            pieces[kind] = child
        elif kind in ("<<", "<<-") or name == "operator":
            continue
        elif kind == "file_redirect":
            redirections += read_redirect(walk, child)
        elif name == "right" or (kind == "pipeline" and child.children[0].type in ("|", "|&")):
            redirections += Redirections(then=(child,))  # `cat <<EOF && ls`, `| wc`
        elif name == "argument":
            redirections += Redirections(arguments=(child,))
        else:
            walk.unsupported(child, nested=True)
    start, end = pieces.get("heredoc_start"), pieces.get("heredoc_end")
    body = pieces.get("heredoc_body")
    if start is None or end is None:
        walk.unsafe(node, UNTERMINATED_HEREDOC)
        return redirections
    delimiter, quoted = _heredoc_delimiter(node_text(start))
    dashed = node.children[0].type == "<<-"
    if delimiter is None or not _ends_where_bash_does(
        walk.source, start, end, delimiter.encode(), dashed=dashed
    ):
        walk.unsafe(node, HEREDOC_END)
    if not quoted and body is not None:
        if any(c in (body.text or b"") for c in b"$`"):
            walk.unsafe(node, "a here-document that expands")
        if b"`" in (body.text or b""):
            # tree-sitter reads a backquote there as text: its commands would go unlisted.
            walk.unsafe(node, BACKQUOTED_HEREDOC)
        walk.substitutions_of(body)
    return redirections


def _ends_where_bash_does(
    source: bytes, start: Node, end: Node, delimiter: bytes, *, dashed: bool
) -> bool:
    """Bash reads a here-document from the line after the operator's up to the first line
    equal to the delimiter (leading tabs stripped for `<<-`): tree-sitter's end must be that."""
    first_line = source.find(b"\n", start.end_byte) + 1
    end_line = source.rfind(b"\n", 0, end.start_byte) + 1
    if not 0 < first_line <= end_line:
        return False
    indent = source[end_line : end.start_byte]
    if indent.strip(b"\t" if dashed else b"") or (end.text or b"") != delimiter:
        return False
    if source[end.end_byte : end.end_byte + 1] not in (b"", b"\n"):
        return False
    lines = source[first_line:end_line].split(b"\n")[:-1]
    return all((line.lstrip(b"\t") if dashed else line) != delimiter for line in lines)


def _heredoc_delimiter(raw: str) -> tuple[str | None, bool]:
    """The delimiter bash looks for, and whether it was quoted (then the body is not
    expanded); None for spellings this does not read (`E"O"F`, `$'EOF'`)."""
    for quote in ("'", '"'):
        if len(raw) >= 2 and raw[0] == raw[-1] == quote and _PLAIN_DELIMITER.fullmatch(raw[1:-1]):
            return raw[1:-1], True
    if raw.startswith("\\") and _PLAIN_DELIMITER.fullmatch(raw[1:]):
        return raw[1:], True
    if _PLAIN_DELIMITER.fullmatch(raw):
        return raw, False
    return None, any(c in raw for c in "'\"\\")
