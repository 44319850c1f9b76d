"""Glob patterns as regular expressions: one translation for permission rules and for the
search tools' pure-Python fallback.

`**/` spans zero or more directories, `**` anything, `*` and `?` stay inside one path segment.
With `extended`, `{a,b}` alternatives and `[...]` classes (`[!...]` negated) work as in
ripgrep's globs; without it they are literal characters (permission rules name paths as written).
"""

from __future__ import annotations

import re


def glob_to_regex(pattern: str, *, extended: bool = False) -> str:
    """The regex (for `fullmatch`) of a glob, `/`-separated."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif extended and pattern[i] == "{" and "}" in pattern[i:]:
            end = pattern.index("}", i)
            options = pattern[i + 1 : end].split(",")
            out.append("(?:" + "|".join(glob_to_regex(o, extended=True) for o in options) + ")")
            i = end + 1
        elif extended and pattern[i] == "[" and "]" in pattern[i + 1 :]:
            end = pattern.index("]", i + 1)
            out.append("[" + pattern[i + 1 : end].replace("!", "^", 1) + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)
