"""Parsing shell commands for permission decisions.

A command string becomes a `ParsedCommand`: the simple commands bash runs at top level (every
part of `&&`, `||`, `;`, `&`, `|`, newlines, subshells, braces, `!`, `if`/`for`/`while`/`case`
bodies), the commands nested in substitutions and function bodies, and why a narrow rule may not
match it: anything bash computes at run time (expansions, substitutions, `$'…'`, `~`, brace
expansion), redirection into files, function definitions, keywords tree-sitter does not know
(`time`, `coproc`), here-documents that expand. Every argv word is the literal word bash passes.

Parsing uses tree-sitter-bash. The walk over its syntax tree is an allow-list: a node type or
token it does not know is a reason in `unsafe`, never skipped, and a tree with an error or a
missing node is unparsable (`error`), so it never matches a narrow rule. Where tree-sitter and
bash are known to disagree, bash wins: a backslash-newline joins words, as in bash, before the
tree is read; a comment must start where bash starts one; a here-document must end where bash
ends it. `tests/permissions/test_shell_differential.py` checks the result against bash itself.

`parse_command` is memoised and returns immutable values, so the policy, the tool's resource
check and the sandbox share one parse of a command.
"""

from __future__ import annotations

import functools
import re
import shlex
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentcli.permissions.shell_command import SimpleCommand
from agentcli.permissions.shell_redirects import HARMLESS_TARGETS
from agentcli.permissions.shell_walk import walk

if TYPE_CHECKING:
    from tree_sitter import Node, Parser, Tree


@dataclass(frozen=True, slots=True)
class ParsedCommand:
    source: str
    parts: tuple[SimpleCommand, ...] = ()
    """Simple commands the shell runs at top level, in order."""
    nested: tuple[SimpleCommand, ...] = ()
    """Simple commands inside substitutions and function bodies."""
    unsafe: tuple[str, ...] = ()
    """Why no narrow rule may match this command (empty when a narrow rule may)."""
    error: str | None = None
    """Why parsing failed (then `parts` is empty)."""

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def narrow_matchable(self) -> bool:
        """True when matching every part against narrow rules says what the command does."""
        return self.ok and not self.unsafe and bool(self.parts)

    def commands(self) -> tuple[SimpleCommand, ...]:
        return (*self.parts, *self.nested)


@functools.lru_cache(maxsize=512)
def parse_command(source: str) -> ParsedCommand:
    """Parse `source`; never raises (a failure is recorded in `error`)."""
    if "\x00" in source:
        return ParsedCommand(source, error="the command contains a NUL byte")
    if not source.strip():
        return ParsedCommand(source, error="the command is empty")
    try:
        encoded = source.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return ParsedCommand(source, error="the command is not valid text")
    joined = _join_continuations(encoded)
    if joined is None:
        return ParsedCommand(source, error="the command has too many line continuations to check")
    text, tree = joined
    broken = _first_error(tree.root_node)
    if broken is not None:
        near = text[broken.start_byte : broken.start_byte + 20].decode("utf-8", "replace")
        return ParsedCommand(source, error=f"the command cannot be parsed (near {near!r})")
    try:
        walked = walk(tree.root_node, text)
    except RecursionError:
        return ParsedCommand(source, error="the command is nested too deeply to check")
    if walked.misread is not None:
        why = f"tree-sitter would read the command differently from bash: {walked.misread}"
        return ParsedCommand(source, error=why)
    return ParsedCommand(source, walked.parts, walked.nested, walked.unsafe)


_parser_lock = threading.Lock()


@functools.cache
def _parser() -> Parser:
    """The tree-sitter-bash parser, loaded on first use: commands that never classify a shell
    command do not load its native library (it costs ~1 ms once agentcli is imported)."""
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def _parse(source: bytes) -> Tree:
    # One parser for every thread: a tree-sitter parser must not parse two texts at once.
    with _parser_lock:
        return _parser().parse(source)


MAX_CONTINUATIONS = 100
"""Each backslash-newline bash joins costs one more parse (microseconds); past this many the
command is not checked at all (it asks)."""
_CONTINUATION = re.compile(rb"(\\+)\n")
_LITERAL_CONTEXTS = frozenset({"raw_string", "ansi_c_string", "comment", "string"})


def _join_continuations(source: bytes) -> tuple[bytes, Tree] | None:
    """Remove every backslash-newline bash removes, and parse the result.

    tree-sitter reads a backslash-newline as a space, bash removes it (`rg --p\\<newline>re=sh`
    runs `rg --pre=sh`). Bash removes it anywhere but inside single quotes, comments and
    quoted here-documents; inside double quotes the word reader drops it. Which context the
    leftmost one is in is known from the tree of the text before it, which holds no other
    backslash-newline bash removes: so they are removed one at a time, leftmost first, each
    followed by a fresh parse.
    """
    for _ in range(MAX_CONTINUATIONS + 1):
        tree = _parse(source)
        at = _first_continuation(tree, source)
        if at is None:
            return source, tree
        source = source[:at] + source[at + 2 :]
    return None


def _first_continuation(tree: Tree, source: bytes) -> int | None:
    for match in _CONTINUATION.finditer(source):
        if len(match.group(1)) % 2 == 0:
            continue  # an escaped backslash, then a plain newline
        at = match.end() - 2
        # The context of the backslash: a comment ends before the newline.
        node: Node | None = tree.root_node.descendant_for_byte_range(at, at + 1)
        literal = False
        while node is not None and not literal:
            literal = node.type in _LITERAL_CONTEXTS or (
                node.type == "heredoc_body" and _quoted_heredoc(node.parent)
            )
            node = node.parent
        if not literal:
            return at
    return None


def _quoted_heredoc(redirect: Node | None) -> bool:
    start = _child_of_type(redirect, "heredoc_start") if redirect is not None else None
    return start is not None and any(q in (start.text or b"") for q in b"'\"\\")


def _child_of_type(node: Node, kind: str) -> Node | None:
    return next((child for child in node.children if child.type == kind), None)


def _first_error(root: Node) -> Node | None:
    """The first ERROR or MISSING node, if any."""
    if not root.has_error:
        return None
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            return node
        stack.extend(reversed(node.children))
    return root


def rough_commands(source: str) -> list[SimpleCommand]:
    """A best-effort split of a command that could not be parsed, for deny and destructive
    checks only (never to allow anything): cut at every operator, then shell-split."""
    commands = []
    for segment in re.split(r"[;&|\n()`<>{}]|\$\(", source):
        try:
            words = shlex.split(segment, comments=False)
        except ValueError:
            words = segment.split()
        assignments = []
        while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
            assignments.append(words.pop(0))
        if words or assignments:
            commands.append(SimpleCommand(assignments=tuple(assignments), argv=tuple(words)))
    return commands


__all__ = ["HARMLESS_TARGETS", "ParsedCommand", "SimpleCommand", "parse_command", "rough_commands"]
