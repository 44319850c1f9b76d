"""Glob patterns as regular expressions: one translation for permission rules and for the
search tools' pure-Python fallback; and permission-rule globs as ripgrep globs.

`**/` spans zero or more directories, `**` anything, `*` and `?` stay inside one path segment.
With `extended`, `{a,b}` alternatives and `[...]` classes (`[!...]` negated) work as in
ripgrep's globs; without it they are literal characters (permission rules name paths as written).

A rule's glob is relative to the workspace; ripgrep matches its globs relative to the directory
it runs in (`/`-anchored, `**` a whole segment, `*` inside one, `[`, `{` and `\\` special).
`globs_under` rebases a rule's glob onto a directory below the workspace and `rg_glob` escapes
the result. Where the two syntaxes differ (a `**` inside a segment is `*` to ripgrep) the ripgrep
glob matches fewer paths, never more: callers that must not miss a path also check the results
with the rule itself.
"""

from __future__ import annotations

import functools
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


def globs_under(pattern: str, base: str) -> list[str]:
    """The globs, relative to the directory `base`, of the paths under `base` that `pattern`
    matches (both `/`-separated and workspace-relative, `.` the workspace itself, or both
    absolute): `src/gen/**` under `src` is `gen/**`, `**/.env` stays `**/.env`, and `docs/*`
    under `src` is nothing. A `**` inside a segment only matches within its segment here."""
    if pattern.startswith("/") != base.startswith("/"):
        return []
    base_parts = () if base in (".", "") else tuple(base.removeprefix("./").split("/"))
    rests = _rests(tuple(pattern.removeprefix("./").split("/")), base_parts)
    return sorted({"/".join(rest) for rest in rests if rest})


@functools.lru_cache(maxsize=256)
def _rests(parts: tuple[str, ...], base: tuple[str, ...]) -> frozenset[tuple[str, ...]]:
    """What is left of a glob's segments `parts` after they consumed the directories `base`."""
    if not base:
        return frozenset({parts})
    if not parts:
        return frozenset()
    head, rest = parts[0], parts[1:]
    if head == "**":  # spans none of base's directories, or one more of them
        return _rests(rest, base) | _rests(parts, base[1:])
    if re.fullmatch(glob_to_regex(head), base[0], re.DOTALL):
        return _rests(rest, base[1:])
    return frozenset()


def rg_glob(pattern: str) -> str:
    """A permission-rule glob as a ripgrep glob anchored at rg's directory: the characters
    ripgrep treats specially and rules take literally are escaped."""
    return "/" + re.sub(r"([\\\[\]{}])", r"\\\1", pattern)
