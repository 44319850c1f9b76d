"""The bash syntax the shell walk (`shell_walk`) knows, by tree-sitter-bash's names.

This is the walk's allow-list: the node types that are statements, the node types made of
statements and the tokens allowed between them, the words inside them bash expands but never
runs, and bash's reserved words. A node type or token not listed here is never skipped: it is a
reason no narrow rule may match the command.
"""

from __future__ import annotations

STATEMENTS = frozenset(
    {
        *("command", "redirected_statement", "list", "pipeline", "subshell", "negated_command"),
        *("compound_statement", "if_statement", "while_statement", "for_statement"),
        *("case_statement", "function_definition", "variable_assignment"),
        *("variable_assignments", "declaration_command", "unset_command", "test_command"),
        "c_style_for_statement",
    }
)
"""Node types that are statements (each walked as one)."""
SEPARATORS = frozenset({";", "&", "\n"})
"""Tokens that end a statement wherever statements follow one another."""
CONTAINERS: dict[str, frozenset[str]] = {
    "list": frozenset({"&&", "||"}),
    "pipeline": frozenset({"|", "|&"}),
    "subshell": SEPARATORS | {"(", ")"},
    "negated_command": frozenset({"!"}),
    "if_statement": SEPARATORS | {"if", "then", "fi"},
    "elif_clause": SEPARATORS | {"elif", "then"},
    "else_clause": SEPARATORS | {"else"},
    "while_statement": SEPARATORS | {"while", "until"},
    "do_group": SEPARATORS | {"do", "done"},
    "for_statement": SEPARATORS | {"for", "in"},
    "case_statement": SEPARATORS | {"case", "in", "esac"},
    "case_item": SEPARATORS | {"(", ")", "|", ";;"},
    "command_substitution": SEPARATORS | {"$(", "`", ")"},
    "process_substitution": SEPARATORS | {"<(", ">(", ")"},
}
"""Node types made of statements, and the tokens allowed between them."""
BRACES = SEPARATORS | {"{", "}"}
CONTAINER_WORDS = frozenset(
    {("for_statement", "value"), ("case_statement", "value"), ("case_item", "value")}
)
"""Words inside containers that bash expands but never runs (loop lists, case patterns)."""
REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
"""Node types of redirections (read by `shell_redirects`)."""
KEYWORDS = frozenset(
    {"time", "coproc", "!", "[[", "]]", "{", "}", "function", "select", "in"}
    | {"case", "esac", "if", "then", "elif", "else", "fi", "for", "while", "until", "do", "done"}
)
"""Bash reserved words: where tree-sitter reads one as a command name (`time ls`), bash runs
something else than that argv."""
UNSUPPORTED = {
    "test_command": "a [[ … ]] test",
    "c_style_for_statement": "arithmetic",
    "compound_statement": "arithmetic",  # (( … )); `{ … }` is read as a container
}
"""Statements the walk does not read, and the reason it gives for each."""
TEST_EXPRESSIONS = frozenset({"binary_expression", "unary_expression"})
"""What tree-sitter builds inside `[ … ]` of words bash passes to the `[` builtin."""
COMMENT_BEFORE = frozenset(b" \t\n;&|(")
"""Unescaped bytes after which bash starts a comment at `#` (the start of a word; not `)`,
which may end `$(…)` inside a word)."""
