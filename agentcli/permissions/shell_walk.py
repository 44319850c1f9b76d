"""The simple commands a tree-sitter-bash syntax tree runs, and why a narrow rule may not match.

The walk is an allow-list: each node type and token it knows is read for what bash does with it;
anything else is a reason in `unsafe` (its commands and substitutions still listed, for deny
rules), never skipped. Where tree-sitter's tree is not bash's, bash wins: a redirection that
follows `a && b` or `a | b` belongs to `b` (tree-sitter hangs it on the whole list, and reads
words after a redirection target as more targets: bash passes them as arguments); a comment must
start where bash starts one; a here-document must end where bash ends it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentcli.permissions.shell_words import (
    COMMENT_WORD,
    CUT,
    JOINED,
    Word,
    is_name,
    read_word,
    substitutions_in,
)

if TYPE_CHECKING:
    from tree_sitter import Node

# Output redirection targets that write nothing to the file system.
HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One simple command: leading `VAR=value` assignments, then argv."""

    assignments: tuple[str, ...]
    argv: tuple[str, ...]
    globbed: tuple[bool, ...] = ()
    """Per argv word: does it contain an unquoted glob (`*`, `?`, `[`) or brace expansion
    (`{a,b}`) the shell expands into other words?"""
    file_writes: tuple[str, ...] = ()
    """Targets of output redirections into files (not /dev/null or a file descriptor), the
    command's own and those of the compound commands around it (`{ ...; } > FILE`)."""
    file_reads: tuple[str, ...] = ()
    """Files its input is redirected from (`< FILE`), its own and those of the compound
    commands around it (`for ...; done < FILE`)."""
    computed: tuple[bool, ...] = ()
    """Per argv word: does bash compute it at run time (an expansion, a substitution, `~`,
    `$'…'`, a brace expansion)? Such a word's text is as written (`$HOME/x`)."""

    @property
    def text(self) -> str:
        """What rule patterns are matched against: the words, unquoted, joined by spaces."""
        return " ".join((*self.assignments, *self.argv))

    @property
    def name(self) -> str:
        return self.argv[0] if self.argv else ""

    def has_glob(self) -> bool:
        return any(self.globbed)


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
    walker.container(root, _SEPARATORS, nested=False)
    ordered = [why for _, why in sorted(walker.reasons, key=lambda reason: reason[0])]
    return Walked(
        parts=tuple(walker.parts),
        nested=tuple(walker.nested),
        unsafe=tuple(dict.fromkeys(ordered)),
        misread=next((why for why in ordered if why in _MISREADS), None),
    )


SKIPPED = "text tree-sitter skipped"
MISPLACED_COMMENT = "a comment bash may read differently"
HEREDOC_END = "a here-document bash may end elsewhere"
BACKQUOTED_HEREDOC = "a backquote in a here-document"
_MISREADS = frozenset(
    {SKIPPED, MISPLACED_COMMENT, HEREDOC_END, BACKQUOTED_HEREDOC, CUT, JOINED, COMMENT_WORD}
    | {"a [ … ] test bash reads differently", "a {variable} redirection"}
    | {"words after a redirection of a compound command", "an unterminated here-document"}
)
"""Reasons that mean tree-sitter's tree is not what bash runs: a word tree-sitter joined or
skipped, a comment or here-document end bash sees elsewhere. Its commands are not bash's, so
the command counts as unparsable (deny and destructive checks then split it roughly)."""


_STATEMENTS = frozenset(
    {
        *("command", "redirected_statement", "list", "pipeline", "subshell", "negated_command"),
        *("compound_statement", "if_statement", "while_statement", "for_statement"),
        *("case_statement", "function_definition", "variable_assignment"),
        *("variable_assignments", "declaration_command", "unset_command", "test_command"),
        "c_style_for_statement",
    }
)
_SEPARATORS = frozenset({";", "&", "\n"})
_CONTAINERS: dict[str, frozenset[str]] = {
    "list": frozenset({"&&", "||"}),
    "pipeline": frozenset({"|", "|&"}),
    "subshell": _SEPARATORS | {"(", ")"},
    "negated_command": frozenset({"!"}),
    "if_statement": _SEPARATORS | {"if", "then", "fi"},
    "elif_clause": _SEPARATORS | {"elif", "then"},
    "else_clause": _SEPARATORS | {"else"},
    "while_statement": _SEPARATORS | {"while", "until"},
    "do_group": _SEPARATORS | {"do", "done"},
    "for_statement": _SEPARATORS | {"for", "in"},
    "case_statement": _SEPARATORS | {"case", "in", "esac"},
    "case_item": _SEPARATORS | {"(", ")", "|", ";;"},
    "command_substitution": _SEPARATORS | {"$(", "`", ")"},
    "process_substitution": _SEPARATORS | {"<(", ">(", ")"},
}
"""Node types made of statements, and the tokens allowed between them."""
_BRACES = _SEPARATORS | {"{", "}"}
_CONTAINER_WORDS = frozenset(
    {("for_statement", "value"), ("case_statement", "value"), ("case_item", "value")}
)
"""Words inside containers that bash expands but never runs (loop lists, case patterns)."""
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_KEYWORDS = frozenset(
    {"time", "coproc", "!", "[[", "]]", "{", "}", "function", "select", "in"}
    | {"case", "esac", "if", "then", "elif", "else", "fi", "for", "while", "until", "do", "done"}
)
"""Bash reserved words: where tree-sitter reads one as a command name (`time ls`), bash runs
something else than that argv."""
_UNSUPPORTED = {
    "test_command": "a [[ … ]] test",
    "c_style_for_statement": "arithmetic",
    "compound_statement": "arithmetic",  # (( … )); `{ … }` is read as a container
}
_TEST_EXPRESSIONS = frozenset({"binary_expression", "unary_expression"})
_WRITES = frozenset({">", ">>", ">|", "&>", "&>>", ">&"})
_FD_DUPLICATION = re.compile(r"[0-9]+-?|-")
_COMMENT_BEFORE = frozenset(b" \t\n;&|(")
"""Unescaped bytes after which bash starts a comment at `#` (the start of a word; not `)`,
which may end `$(…)` inside a word)."""


@dataclass(frozen=True, slots=True)
class _Redirections:
    """What redirections do: files written and read, words tree-sitter read as extra targets
    (bash's arguments: `echo a > out b` runs `echo a b`), and the statements tree-sitter puts
    inside a here-document's redirection (`cat <<EOF | wc`: `| wc`), to walk after it."""

    writes: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    arguments: tuple[Node, ...] = ()
    then: tuple[Node, ...] = ()

    def __add__(self, other: _Redirections) -> _Redirections:
        return _Redirections(
            self.writes + other.writes,
            self.reads + other.reads,
            self.arguments + other.arguments,
            self.then + other.then,
        )


_NONE = _Redirections()


@dataclass(slots=True)
class _Walker:
    source: bytes
    parts: list[SimpleCommand] = field(default_factory=list)
    nested: list[SimpleCommand] = field(default_factory=list)
    reasons: list[tuple[int, str]] = field(default_factory=list)
    # Redirections of the compound commands being walked: they apply to every command
    # inside (`{ echo x; } > .git/config` writes with echo's output).
    outer: _Redirections = _NONE

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
        starts = start == 0 or (before[-1] in _COMMENT_BEFORE and not escaped)
        one_line = b"\n" not in (node.text or b"")
        if not starts or not one_line or self.source[end : end + 1] not in (b"", b"\n"):
            self.unsafe(node, MISPLACED_COMMENT)

    def statement(self, node: Node, *, nested: bool, attached: _Redirections = _NONE) -> None:
        """Walk one statement; `attached`: redirections tree-sitter put after it (bash gives
        them to the last command of a list or pipeline, to a compound command as a whole)."""
        kind = node.type
        if kind == "command":
            self.command(node, nested=nested, attached=attached)
            return
        if kind in ("list", "pipeline", "negated_command"):
            self.container(node, _CONTAINERS[kind], nested=nested, last=attached)
            return
        if attached.arguments:
            self.unsafe(node, "words after a redirection of a compound command")
        outer = self.outer
        self.outer = outer + _Redirections(attached.writes, attached.reads)
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
            self.container(node, _BRACES, nested=nested)
        elif kind in _CONTAINERS:
            self.container(node, _CONTAINERS[kind], nested=nested)
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
        last: _Redirections = _NONE,
    ) -> None:
        """Statements and the tokens between them; `last` goes to the last statement."""
        kind = node.type
        if kind == "for_statement" and node.children and node.children[0].type == "select":
            self.unsafe(node, "select")
        statements = [c for c in node.named_children if c.type in _STATEMENTS]
        final = statements[-1] if statements else None
        for name, child in self.children(node):
            if not child.is_named:
                if child.type not in tokens:
                    self.unsafe(child, f"unsupported syntax ({child.type})")
            elif child.type in _STATEMENTS:
                self.statement(child, nested=nested, attached=last if child == final else _NONE)
            elif child.type in _CONTAINERS:  # elif, else, do ... done, case items
                self.container(child, _CONTAINERS[child.type], nested=nested)
            elif (kind, name) in _CONTAINER_WORDS:
                self.word(child)
            elif kind == "for_statement" and name == "variable" and is_name(_text(child)):
                continue
            else:
                self.unsupported(child, nested=nested)

    def unsupported(self, node: Node, *, nested: bool) -> None:
        """Something this walk does not read as a whole: unsafe, but the commands and
        substitutions inside still count (for deny rules)."""
        self.unsafe(node, _UNSUPPORTED.get(node.type, f"unsupported syntax ({node.type})"))
        stack = list(reversed(node.children))
        while stack:
            child = stack.pop()
            if child.type in _STATEMENTS:
                self.statement(child, nested=nested)
            elif child.type in ("command_substitution", "process_substitution"):
                self.substitution(child)
            else:
                stack.extend(reversed(child.children))

    def substitution(self, node: Node) -> None:
        """The commands of `$(…)`, a backquote or `<(…)`: nested, and not redirected by the
        compound commands around the word."""
        outer, self.outer = self.outer, _NONE
        try:
            self.container(node, _CONTAINERS[node.type], nested=True)
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

    def command(self, node: Node, *, nested: bool, attached: _Redirections) -> None:
        assignments: list[str] = []
        words: list[list[Node]] = []  # the nodes of each word
        own = _NONE
        for name, child in self.children(node):
            if name == "name":
                _add_word(words, self.name_node(child))
            elif name == "argument":
                _add_word(words, child)
            elif child.type == "variable_assignment" and not words:
                assignments.append(self.assignment(child))
            elif child.type in _REDIRECTS:
                redirections = self.redirect(child)
                for argument in redirections.arguments:
                    _add_word(words, argument)
                own += redirections
            else:
                self.unsupported(child, nested=nested)
        for argument in attached.arguments:
            _add_word(words, argument)
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
        elif word.text in _KEYWORDS:
            self.unsafe(node, f"the shell keyword {word.text}")

    def assignment(self, node: Node) -> str:
        """`NAME=value` as bash assigns it (for rules: the value unquoted)."""
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name is None or name.type != "variable_name" or not is_name(_text(name)):
            self.unsafe(node, "an array or unusual assignment")
            self.substitutions_of(node)
            return _text(node)
        operator = self.source[name.end_byte : value.start_byte if value else node.end_byte]
        if operator not in (b"=", b"+="):
            self.unsafe(node, "an array or unusual assignment")
        if value is None:
            text = ""
        elif value.type == "array":
            self.unsafe(value, "an array or unusual assignment")
            self.substitutions_of(value)
            text = _text(value)
        else:
            text = self.word(value, assignment=True).text
        return f"{_text(name)}{operator.decode(errors='replace')}{text}"

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
            if child.type in _TEST_EXPRESSIONS:
                stack.extend(reversed(child.children))
                continue
            self.gap(cursor, child.start_byte)
            cursor = child.end_byte
            if child.type == "comment":
                self.comment(child)
            elif child.type in ("<", ">", "(", ")"):
                self.unsafe(child, "a [ … ] test bash reads differently")
            else:
                _add_word(words, child)
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
        redirections = _NONE
        for name, child in self.children(node):
            if name == "body":
                body = child
            elif child.type in _REDIRECTS:
                redirections += self.redirect(child)
            elif child.is_named and name != "name":
                self.unsupported(child, nested=True)
        if body is not None:
            self.statement(body, nested=True, attached=redirections)

    def redirected(self, node: Node, *, nested: bool) -> None:
        body: Node | None = None
        redirections = _NONE
        for name, child in self.children(node):
            if name == "body":
                body = child
            elif child.type in _REDIRECTS:
                redirections += self.redirect(child)
            else:
                self.unsupported(child, nested=nested)
        if body is not None:
            self.statement(body, nested=nested, attached=redirections)
            return
        # Only redirections (`> out`): bash opens the files and runs nothing.
        self.command(node, nested=nested, attached=_NONE)

    def redirect(self, node: Node) -> _Redirections:
        if self.source[node.start_byte - 1 : node.start_byte] == b"}":
            # `{fd}>file` has bash pick a descriptor; tree-sitter reads `{fd}` as an argument.
            self.unsafe(node, "a {variable} redirection")
        if node.type == "heredoc_redirect":
            return self.heredoc(node)
        operator = ""
        targets: list[Node] = []
        for name, child in self.children(node):
            if name == "descriptor" and child.type == "file_descriptor":
                continue
            if name == "destination" or (node.type == "herestring_redirect" and child.is_named):
                targets.append(child)
            elif not child.is_named and not operator:
                operator = child.type
            else:
                self.unsafe(child, "an unusual redirection")
        if not targets:
            if operator not in ("<&-", ">&-"):
                self.unsafe(node, "an unusual redirection")
            return _NONE
        done = self.redirect_to(node, operator, self.word(targets[0]))
        return done + _Redirections(arguments=tuple(targets[1:]))

    def redirect_to(self, node: Node, operator: str, word: Word) -> _Redirections:
        target = word.text
        if operator == "<<<":
            return _NONE
        if operator == "<":
            return _Redirections(reads=(target,))
        if operator in (">&", "<&") and word.literal and _FD_DUPLICATION.fullmatch(target):
            return _NONE
        if operator in _WRITES:
            if word.literal and target in HARMLESS_TARGETS:
                return _NONE
            self.unsafe(node, "redirection into a file")
            return _Redirections(writes=(target,))
        self.unsafe(node, f"an unusual redirection ({operator})")
        return _Redirections(writes=(target,), reads=(target,))

    def heredoc(self, node: Node) -> _Redirections:
        """A here-document: its body is input, unless an unquoted delimiter lets bash expand
        it; and it must end on the line where bash ends it, or a command could hide in it."""
        pieces: dict[str, Node] = {}
        redirections = _NONE
        for name, child in self.children(node):
            kind = child.type
            if kind in ("heredoc_start", "heredoc_body", "heredoc_end") and kind not in pieces:
                pieces[kind] = child
            elif kind in ("<<", "<<-") or name == "operator":
                continue
            elif kind == "file_redirect":
                redirections += self.redirect(child)
            elif name == "right" or (kind == "pipeline" and child.children[0].type in ("|", "|&")):
                redirections += _Redirections(then=(child,))  # `cat <<EOF && ls`, `| wc`
            elif name == "argument":
                redirections += _Redirections(arguments=(child,))
            else:
                self.unsupported(child, nested=True)
        start, end = pieces.get("heredoc_start"), pieces.get("heredoc_end")
        body = pieces.get("heredoc_body")
        if start is None or end is None:
            self.unsafe(node, "an unterminated here-document")
            return redirections
        delimiter, quoted = _heredoc_delimiter(_text(start))
        dashed = node.children[0].type == "<<-"
        if delimiter is None or not _ends_where_bash_does(
            self.source, start, end, delimiter.encode(), dashed=dashed
        ):
            self.unsafe(node, HEREDOC_END)
        if not quoted and body is not None:
            if any(c in (body.text or b"") for c in b"$`"):
                self.unsafe(node, "a here-document that expands")
            if b"`" in (body.text or b""):
                # tree-sitter reads a backquote there as text: its commands would go unlisted.
                self.unsafe(node, BACKQUOTED_HEREDOC)
            self.substitutions_of(body)
        return redirections


def _add_word(words: list[list[Node]], node: Node) -> None:
    """Add a word's node; one right after the previous one (`''\\a`) is the same word."""
    if words and words[-1][-1].end_byte == node.start_byte:
        words[-1].append(node)
    else:
        words.append([node])


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


_PLAIN_DELIMITER = re.compile(r"[A-Za-z0-9_.:+@%/-]+")


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


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogateescape")
