"""The simple commands a tree-sitter-bash syntax tree runs, and why a narrow rule may not match.

The walk is an allow-list: each node type and token it knows (`shell_syntax`) is read for what
bash does with it; anything else is a reason in `unsafe` (its commands and substitutions still
listed, for deny rules), never skipped. Where tree-sitter's tree is not bash's, bash wins: a
redirection that follows `a && b` or `a | b` belongs to `b` (tree-sitter hangs it on the whole
list, and reads words after a redirection target as more targets: bash passes them as
arguments); a comment must start where bash starts one; a here-document must end where bash ends
it. Words are read by `shell_words`, redirections and here-documents by `shell_redirects`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentcli.permissions import shell_syntax as syntax
from agentcli.permissions.shell_command import SimpleCommand
from agentcli.permissions.shell_redirects import (
    BACKQUOTED_HEREDOC,
    HEREDOC_END,
    NO_REDIRECTIONS,
    UNTERMINATED_HEREDOC,
    VARIABLE_DESCRIPTOR,
    Redirections,
    read_redirect,
)
from agentcli.permissions.shell_words import (
    COMMENT_WORD,
    CUT,
    JOINED,
    Word,
    add_word_node,
    is_name,
    node_text,
    read_word,
    substitutions_in,
)

if TYPE_CHECKING:
    from tree_sitter import Node


@dataclass(frozen=True, slots=True)
class Walked:
    parts: tuple[SimpleCommand, ...]
    nested: tuple[SimpleCommand, ...]
    unsafe: tuple[str, ...]
    misread: str | None
    """Where tree-sitter's tree is known not to be bash's (then no part can be trusted)."""


def walk(root: Node, source: bytes) -> Walked:
    """The commands of an error-free tree of `source`, and why no narrow rule may match them."""
    walker = _Walker(source)
    walker.container(root, syntax.SEPARATORS, nested=False)
    ordered = [why for _, why in sorted(walker.reasons, key=lambda reason: reason[0])]
    return Walked(
        parts=tuple(walker.parts),
        nested=tuple(walker.nested),
        unsafe=tuple(dict.fromkeys(ordered)),
        misread=next((why for why in ordered if why in _MISREADS), None),
    )


SKIPPED = "text tree-sitter skipped"
MISPLACED_COMMENT = "a comment bash may read differently"
_MISREADS = frozenset(
    {SKIPPED, MISPLACED_COMMENT, HEREDOC_END, BACKQUOTED_HEREDOC, CUT, JOINED, COMMENT_WORD}
    | {UNTERMINATED_HEREDOC, VARIABLE_DESCRIPTOR, "a [ … ] test bash reads differently"}
    | {"words after a redirection of a compound command"}
)
"""Reasons that mean tree-sitter's tree is not what bash runs: a word tree-sitter joined or
skipped, a comment or here-document end bash sees elsewhere. Its commands are not bash's, so
the command counts as unparsable (deny and destructive checks then split it roughly)."""


@dataclass(slots=True)
class _Walker:
    """The walk so far; it is the `shell_redirects.Walk` that redirections are read with."""

    source: bytes
    parts: list[SimpleCommand] = field(default_factory=list)
    nested: list[SimpleCommand] = field(default_factory=list)
    reasons: list[tuple[int, str]] = field(default_factory=list)
    # Redirections of the compound commands being walked: they apply to every command
    # inside (`{ echo x; } > .git/config` writes with echo's output).
    outer: Redirections = NO_REDIRECTIONS

    def unsafe(self, node: Node, why: str) -> None:
        self.reasons.append((node.start_byte, why))

    def children(self, node: Node) -> Iterator[tuple[str | None, Node]]:
        """(field name, child) for every child but comments, which are checked here, as is
        the text between children: tree-sitter skips some that bash reads as part of a word
        (`\\<tab>`, a carriage return); only blanks and newlines may separate them."""
        cursor = node.start_byte
        for index, child in enumerate(node.children):
            self.gap(cursor, child.start_byte)
            cursor = max(cursor, child.end_byte)
            if child.type == "comment":
                self.comment(child)
            else:
                yield node.field_name_for_child(index), child
        self.gap(cursor, node.end_byte)

    def gap(self, start: int, end: int) -> None:
        if self.source[start:end].strip(b" \t\n"):
            self.reasons.append((start, SKIPPED))

    def comment(self, node: Node) -> None:
        """A comment is fine where bash starts one too (at the start of a word) and ends it
        at the end of the line; otherwise text after `#` could be a command to bash."""
        start, end = node.start_byte, node.end_byte
        before = self.source[:start]
        escaped = (len(before[:-1]) - len(before[:-1].rstrip(b"\\"))) % 2 == 1
        starts = start == 0 or (before[-1] in syntax.COMMENT_BEFORE and not escaped)
        one_line = b"\n" not in (node.text or b"")
        if not starts or not one_line or self.source[end : end + 1] not in (b"", b"\n"):
            self.unsafe(node, MISPLACED_COMMENT)

    def statement(
        self, node: Node, *, nested: bool, attached: Redirections = NO_REDIRECTIONS
    ) -> None:
        """Walk one statement; `attached`: redirections tree-sitter put after it (bash gives
        them to the last command of a list or pipeline, to a compound command as a whole)."""
        kind = node.type
        if kind == "command":
            self.command(node, nested=nested, attached=attached)
            return
        if kind in ("list", "pipeline", "negated_command"):
            self.container(node, syntax.CONTAINERS[kind], nested=nested, last=attached)
            return
        if attached.arguments:
            self.unsafe(node, "words after a redirection of a compound command")
        outer = self.outer
        self.outer = outer + Redirections(attached.writes, attached.reads)
        try:
            self.compound(node, nested=nested)
        finally:
            self.outer = outer
        for statement in attached.then:
            self.statement(statement, nested=nested)

    def compound(self, node: Node, *, nested: bool) -> None:
        kind = node.type
        if kind == "redirected_statement":
            self.redirected(node, nested=nested)
        elif kind == "compound_statement" and node.children and node.children[0].type == "{":
            self.container(node, syntax.BRACES, nested=nested)
        elif kind in syntax.CONTAINERS:
            self.container(node, syntax.CONTAINERS[kind], nested=nested)
        elif kind == "function_definition":
            self.function(node)
        elif kind in ("variable_assignment", "variable_assignments"):
            assignments = [node] if kind == "variable_assignment" else node.named_children
            texts = tuple(self.assignment(child) for child in assignments)
            self.emit(SimpleCommand(texts, ()), nested=nested)
        elif kind in ("declaration_command", "unset_command"):
            self.declaration(node, nested=nested)
        elif kind == "test_command" and node.children and node.children[0].type == "[":
            self.bracket_test(node, nested=nested)
        else:
            self.unsupported(node, nested=nested)

    def container(
        self,
        node: Node,
        tokens: frozenset[str],
        *,
        nested: bool,
        last: Redirections = NO_REDIRECTIONS,
    ) -> None:
        """Statements and the tokens between them; `last` goes to the last statement."""
        kind = node.type
        if kind == "for_statement" and node.children and node.children[0].type == "select":
            self.unsafe(node, "select")
        statements = [c for c in node.named_children if c.type in syntax.STATEMENTS]
        final = statements[-1] if statements else None
        for name, child in self.children(node):
            if not child.is_named:
                if child.type not in tokens:
                    self.unsafe(child, f"unsupported syntax ({child.type})")
            elif child.type in syntax.STATEMENTS:
                self.statement(
                    child, nested=nested, attached=last if child == final else NO_REDIRECTIONS
                )
            elif child.type in syntax.CONTAINERS:  # elif, else, do ... done, case items
                self.container(child, syntax.CONTAINERS[child.type], nested=nested)
            elif (kind, name) in syntax.CONTAINER_WORDS:
                self.word(child)
            elif kind == "for_statement" and name == "variable" and is_name(node_text(child)):
                continue
            else:
                self.unsupported(child, nested=nested)

    def unsupported(self, node: Node, *, nested: bool) -> None:
        """Something this walk does not read as a whole: unsafe, but the commands and
        substitutions inside still count (for deny rules)."""
        self.unsafe(node, syntax.UNSUPPORTED.get(node.type, f"unsupported syntax ({node.type})"))
        stack = list(reversed(node.children))
        while stack:
            child = stack.pop()
            if child.type in syntax.STATEMENTS:
                self.statement(child, nested=nested)
            elif child.type in ("command_substitution", "process_substitution"):
                self.substitution(child)
            else:
                stack.extend(reversed(child.children))

    def substitution(self, node: Node) -> None:
        """The commands of `$(…)`, a backquote or `<(…)`: nested, and not redirected by the
        compound commands around the word."""
        outer, self.outer = self.outer, NO_REDIRECTIONS
        try:
            self.container(node, syntax.CONTAINERS[node.type], nested=True)
        finally:
            self.outer = outer

    def word(self, *nodes: Node, assignment: bool = False) -> Word:
        word = read_word(*nodes, assignment=assignment)
        self.reasons.extend(word.reasons)
        for inner in word.substitutions:
            self.substitution(inner)
        return word

    def emit(self, command: SimpleCommand, *, nested: bool) -> None:
        writes, reads = self.outer.writes, self.outer.reads
        if writes or reads:
            command = SimpleCommand(
                command.assignments,
                command.argv,
                command.globbed,
                file_writes=writes + command.file_writes,
                file_reads=reads + command.file_reads,
                computed=command.computed,
            )
        (self.nested if nested else self.parts).append(command)

    def command(self, node: Node, *, nested: bool, attached: Redirections) -> None:
        assignments: list[str] = []
        words: list[list[Node]] = []  # the nodes of each word
        own = NO_REDIRECTIONS
        for name, child in self.children(node):
            if name == "name":
                add_word_node(words, self.name_node(child))
            elif name == "argument":
                add_word_node(words, child)
            elif child.type == "variable_assignment" and not words:
                assignments.append(self.assignment(child))
            elif child.type in syntax.REDIRECTS:
                redirections = read_redirect(self, child)
                for argument in redirections.arguments:
                    add_word_node(words, argument)
                own += redirections
            else:
                self.unsupported(child, nested=nested)
        for argument in attached.arguments:
            add_word_node(words, argument)
        own += attached
        argv = [self.word(*nodes) for nodes in words]
        if argv:
            self.check_name(node, argv[0])
        self.emit(
            SimpleCommand(
                assignments=tuple(assignments),
                argv=tuple(word.text for word in argv),
                globbed=tuple(word.globbed for word in argv),
                file_writes=own.writes,
                file_reads=own.reads,
                computed=tuple(not word.literal for word in argv),
            ),
            nested=nested,
        )
        for statement in own.then:
            self.statement(statement, nested=nested)

    def name_node(self, node: Node) -> Node:
        """The word inside `command_name`."""
        if node.type == "command_name" and len(node.children) == 1 and node.children[0].is_named:
            return node.children[0]
        self.unsafe(node, "a computed command name")
        return node

    def check_name(self, node: Node, word: Word) -> None:
        if not word.literal or word.globbed:
            self.unsafe(node, "a computed command name")
        elif word.text in syntax.KEYWORDS:
            self.unsafe(node, f"the shell keyword {word.text}")
        elif word.text.startswith("%"):  # bash runs `fg WORD` (`bg` with &), quoted or not
            self.unsafe(node, f"a job specification {word.text} (bash's fg)")

    def assignment(self, node: Node) -> str:
        """`NAME=value` as bash assigns it (for rules: the value unquoted)."""
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name is None or name.type != "variable_name" or not is_name(node_text(name)):
            self.unsafe(node, "an array or unusual assignment")
            self.substitutions_of(node)
            return node_text(node)
        operator = self.source[name.end_byte : value.start_byte if value else node.end_byte]
        if operator not in (b"=", b"+="):
            self.unsafe(node, "an array or unusual assignment")
        if value is None:
            text = ""
        elif value.type == "array":
            self.unsafe(value, "an array or unusual assignment")
            self.substitutions_of(value)
            text = node_text(value)
        else:
            text = self.word(value, assignment=True).text
        return f"{node_text(name)}{operator.decode(errors='replace')}{text}"

    def substitutions_of(self, node: Node) -> None:
        for inner in substitutions_in(node):
            self.substitution(inner)

    def declaration(self, node: Node, *, nested: bool) -> None:
        """`export`, `declare`, `local`, `readonly`, `typeset`, `unset`: builtins whose
        arguments bash reads like assignments; listed for deny rules, never narrowly matched."""
        keyword = node.children[0].type if node.children else node.type
        self.unsafe(node, f"the builtin {keyword}")
        words = [keyword]
        for _, child in self.children(node):
            if child.type == "variable_assignment":
                words.append(self.assignment(child))
            elif child.is_named:
                words.append(self.word(child).text)
        plain = (False,) * len(words)
        # Bash reads these words as assignments (`export A=~/x` expands `~`), not as argv.
        self.emit(
            SimpleCommand((), tuple(words), plain, computed=(True,) * len(words)), nested=nested
        )

    def bracket_test(self, node: Node, *, nested: bool) -> None:
        """`[ … ]` is the `[` builtin: tree-sitter reads an expression, bash passes the words
        (`<` and `>` there are redirections to bash, parentheses a syntax error)."""
        words: list[list[Node]] = []
        cursor = node.start_byte
        stack = list(reversed(node.children))
        while stack:
            child = stack.pop()
            if child.type in syntax.TEST_EXPRESSIONS:
                stack.extend(reversed(child.children))
                continue
            self.gap(cursor, child.start_byte)
            cursor = child.end_byte
            if child.type == "comment":
                self.comment(child)
            elif child.type in ("<", ">", "(", ")"):
                self.unsafe(child, "a [ … ] test bash reads differently")
            else:
                add_word_node(words, child)
        self.gap(cursor, node.end_byte)
        argv = [self.word(*nodes) for nodes in words]
        self.emit(
            SimpleCommand(
                (),
                tuple(w.text for w in argv),
                tuple(w.globbed for w in argv),
                computed=tuple(not w.literal for w in argv),
            ),
            nested=nested,
        )

    def function(self, node: Node) -> None:
        self.unsafe(node, "function definition")
        body: Node | None = None
        redirections = NO_REDIRECTIONS
        for name, child in self.children(node):
            if name == "body":
                body = child
            elif child.type in syntax.REDIRECTS:
                redirections += read_redirect(self, child)
            elif child.is_named and name != "name":
                self.unsupported(child, nested=True)
        if body is not None:
            self.statement(body, nested=True, attached=redirections)

    def redirected(self, node: Node, *, nested: bool) -> None:
        body: Node | None = None
        redirections = NO_REDIRECTIONS
        for name, child in self.children(node):
            if name == "body":
                body = child
            elif child.type in syntax.REDIRECTS:
                redirections += read_redirect(self, child)
            else:
                self.unsupported(child, nested=nested)
        if body is not None:
            self.statement(body, nested=nested, attached=redirections)
            return
        # Only redirections (`> out`): bash opens the files and runs nothing.
        self.command(node, nested=nested, attached=NO_REDIRECTIONS)
