"""`SimpleCommand`: one simple command bash runs, as every permission check reads it.

The shell walk (`shell_walk`) reads them from a syntax tree, `shell.rough_commands` from a
command that could not be parsed, and the wrapper checks (`commands.unwrapped`) from what
`sudo`, `env` or `find -exec` run; the policy, the read-only allow-list, rule suggestions and
the sandbox's confinement only read them.
"""

from __future__ import annotations

from dataclasses import dataclass


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
