"""A program's options, read getopt_long style: `Syntax` says which options a program may take
(flags, options with a value, long options with a required or an attached-only value), and
`operands` reads argv against it, or refuses.

Options with values are read as such (`-n 5`, `-n5`, `--lines=5`, `--lines 5`, `-A 3`), so a
value is never taken for an option or a path, nor an option for a value. Long options count only
spelled out in full: `--pr` would be `--pre` to a GNU-style parser, so an abbreviation is an
unknown option. The read-only allow-list (`readonly`) is written in these terms.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class Syntax:
    """A program's allowed options, getopt_long style."""

    flags: str = ""
    """Short options without a value; they may be clustered (`-rn`)."""
    valued: str = ""
    """Short options with a value, attached (`-n5`) or the next word (`-n 5`)."""
    attached: str = ""
    """Short options with an optional value that can only be attached (git's `-uno`, `-M50%`)."""
    long_flags: frozenset[str] = frozenset()
    long_valued: frozenset[str] = frozenset()
    """Long options with a required value: `--lines=5` or `--lines 5`."""
    long_optional: frozenset[str] = frozenset()
    """Long options whose value may only be attached: `--color`, `--color=never`."""
    digits: bool = False
    """`-5` (a number as an option: head/tail line count, grep context)."""
    max_operands: int | None = None
    globs: bool = True
    """May an operand be a glob? Only where every option the program has is harmless: a glob
    can expand into a file named like an option (`-o`, `--pre=sh`)."""


def operands(syntax: Syntax, args: list[str], globbed: list[bool]) -> list[str] | None:
    """The operands of `args` when every option is one `syntax` allows, else None."""
    found: list[str] = []
    index = 0
    only_operands = False
    while index < len(args):
        arg, glob = args[index], globbed[index]
        index += 1
        if glob and (not syntax.globs or arg.startswith("-")):
            return None
        if only_operands or arg == "-" or not arg.startswith("-"):
            found.append(arg)
            continue
        if arg == "--":
            only_operands = True
            continue
        taken = takes_next_word(syntax, arg)
        if taken is None:
            return None
        if taken:  # the value is the next word
            # One that looks like an option asks: should the program not take it as a value
            # after all (`git diff -U --output=x`), it would be an option.
            if index >= len(args) or globbed[index] or args[index].startswith("-"):
                return None
            index += 1
    if syntax.max_operands is not None and len(found) > syntax.max_operands:
        return None
    return found


def takes_next_word(syntax: Syntax, arg: str) -> bool | None:
    """Whether the option `arg` takes the next word as its value; None if not allowed."""
    if arg.startswith("--"):
        name, equals, _ = arg.partition("=")
        if name in syntax.long_flags:
            return None if equals else False
        if name in syntax.long_optional:
            return False
        if name in syntax.long_valued:
            return not equals
        return None
    if syntax.digits and arg[1:].isdigit():
        return False
    for index, letter in enumerate(arg[1:], start=2):
        if letter in syntax.valued:
            return index == len(arg)  # `-n5`: attached; `-n`: the next word
        if letter in syntax.attached:
            return False
        if letter not in syntax.flags:
            return None
    return False
