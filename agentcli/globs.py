"""Glob patterns as regular expressions: one translation for permission rules and for the
search tools' patterns (`glob`, grep's `glob`, with or without ripgrep); and permission-rule
globs as ripgrep globs.

`**/` spans zero or more directories, `**` anything, `*` and `?` stay inside one path segment.
With `extended` the glob is read as ripgrep reads its globs, so the search tools' own matcher and
ripgrep pick the same files: `{a,b}` alternatives, `[...]` classes (`[!...]` negated), `\\`
escapes, and `**` spans directories only as a whole segment (`a**` is `a*`); a malformed glob
raises `GlobSyntaxError` with ripgrep's wording. Without it those are literal characters
(permission rules name paths as written).

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


class GlobSyntaxError(ValueError):
    """A malformed extended glob (say, an unclosed `{`); the message is ripgrep's reason."""


def glob_to_regex(pattern: str, *, extended: bool = False) -> str:
    """The regex (for `fullmatch`) of a glob, `/`-separated."""
    if extended:
        return _extended_regex(pattern)
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
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def _extended_regex(glob: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(glob):
        char = glob[i]
        if char == "\\":
            if i + 1 == len(glob):
                raise GlobSyntaxError("dangling '\\'")
            out.append(re.escape(glob[i + 1]))
            i += 2
        elif char == "*":
            i = _stars(glob, i, out)
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[":
            i = _char_class(glob, i, out)
        elif char == "{":
            i = _alternatives(glob, i, out)
        else:
            out.append(re.escape(char))
            i += 1
    return "".join(out)


def _stars(glob: str, i: int, out: list[str]) -> int:
    """Translate the `*` or `**` at `i`; return the index after it."""
    if not glob.startswith("**", i):
        out.append("[^/]*")
        return i + 1
    if (i and glob[i - 1] != "/") or (i + 2 < len(glob) and glob[i + 2] != "/"):
        out.append("[^/]*")  # inside a segment ripgrep reads `**` as `*`
    elif i + 2 < len(glob):
        out.append("(?:.*/)?")
        return i + 3
    else:
        out.append(".*")
    return i + 2


def _char_class(glob: str, i: int, out: list[str]) -> int:
    """Translate the `[...]` at `i` (a `]` first in it is literal); return the index after it."""
    negated = glob[i + 1 : i + 2] in ("!", "^")
    j = i + 2 if negated else i + 1
    items: list[str] = []
    while j < len(glob) and (glob[j] != "]" or not items):
        if glob[j + 1 : j + 2] == "-" and glob[j + 2 : j + 3] not in ("", "]"):
            low, high = glob[j], glob[j + 2]
            if low > high:
                raise GlobSyntaxError(f"invalid range; '{low}' > '{high}'")
            items.append(f"{re.escape(low)}-{re.escape(high)}")
            j += 3
        else:
            items.append(re.escape(glob[j]))
            j += 1
    if j >= len(glob):
        raise GlobSyntaxError("unclosed character class; missing ']'")
    # Like `*` and `?`, a negated class never matches the separator.
    out.append(f"[^/{''.join(items)}]" if negated else f"[{''.join(items)}]")
    return j + 1


def _alternatives(glob: str, i: int, out: list[str]) -> int:
    """Translate the `{a,b}` at `i`; return the index after it."""
    options: list[str] = []
    start = j = i + 1
    while j < len(glob):
        char = glob[j]
        if char == "\\":
            j += 2
            continue
        if char == "[":
            j = _char_class(glob, j, [])
            continue
        if char == "{":
            raise GlobSyntaxError("nested alternate groups are not allowed")
        if char in ",}":
            options.append(glob[start:j])
            start = j + 1
        if char == "}":
            out.append("(?:" + "|".join(_extended_regex(o) for o in options) + ")")
            return j + 1
        j += 1
    raise GlobSyntaxError("unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)")


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
