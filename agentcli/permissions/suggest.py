"""The narrowest rule that will match what the model issues next time.

An "always" answer must not degrade into asking the same question again and again, and it must
not grant more than needed. So a command becomes its prefix up to the subcommand
(`git diff HEAD~1` → `shell(git diff *)`, `npm run test -- -x` → `shell(npm run test *)`,
`python -m pytest -q` → `shell(python -m pytest *)`), never the exact argv; a write becomes
its directory (`src/app/x.py` → `write(src/app/**)`), or the file itself at the workspace root.
"""

from __future__ import annotations

import re

from agentcli.permissions.rules import command_pattern_matches
from agentcli.permissions.shell import SimpleCommand

_SAFE_WORD = re.compile(r"^[A-Za-z0-9_./:@%+=,~-]+$")
_WITH_SUBCOMMAND = frozenset(
    {
        *("git", "npm", "pnpm", "yarn", "bun", "cargo", "go", "docker", "kubectl", "uv"),
        *("poetry", "pip", "pip3", "make", "just", "dotnet", "mvn", "gradle", "./gradlew"),
        *("terraform", "helm", "gh", "brew", "apt", "apt-get", "conda", "pipenv", "hatch"),
        *("rye", "pdm", "nox", "tox", "deno", "mix", "rake", "bundle", "composer", "swift"),
    }
)
_RUNNERS = frozenset({"run", "exec", "x"})
"""Subcommands whose next word names what runs (`npm run test`, `uv run pytest`)."""
_INTERPRETERS = frozenset({"python", "python3", "node", "ruby", "perl", "bash", "sh", "php"})


def command_rule(part: SimpleCommand) -> str | None:
    """`shell(PREFIX *)` for one simple command, or None when no safe prefix exists."""
    words = [*part.assignments, *_prefix(part.argv)]
    if not words or not all(_SAFE_WORD.match(w) for w in words):
        return None
    rule = f"shell({' '.join(words)} *)"
    return rule if command_pattern_matches(f"{' '.join(words)} *", part.text) else None


def _prefix(argv: tuple[str, ...]) -> list[str]:
    words = list(argv)
    if not words:
        return []
    safe = _take_while_safe(words)
    if not safe:
        return []
    name = safe[0]
    if name in _INTERPRETERS or re.fullmatch(r"python3\.\d+", name):
        if safe[1:2] == ["-m"] and len(safe) > 2:
            return safe[:3]
        return safe[:2] if len(safe) > 1 else safe[:1]
    if name in ("npx", "bunx", "pnpx"):
        return safe[:2]
    if name in _WITH_SUBCOMMAND and len(safe) > 1 and not safe[1].startswith("-"):
        if safe[1] in _RUNNERS and len(safe) > 2 and not safe[2].startswith("-"):
            return safe[:3]
        return safe[:2]
    return safe[:1]


def _take_while_safe(words: list[str]) -> list[str]:
    safe = []
    for word in words:
        if not _SAFE_WORD.match(word):
            break
        safe.append(word)
    return safe


def path_rule(rule_class: str, subject: str) -> str:
    """`write(dir/**)` for a file in a directory, `write(file)` at the workspace root."""
    subject = subject.removeprefix("./")
    if "/" not in subject.strip("/"):
        return f"{rule_class}({subject})"
    directory = subject.rsplit("/", 1)[0]
    return f"{rule_class}({directory}/**)"
