"""`--resume [ID]`: the one option whose value may be left out. Without an id, the REPL shows a
picker of the workspace's sessions; without a terminal to show it on (and in `run`, which never
asks which session), that is a usage error naming the ways to say which.

The parser has no options with an optional value, so `pick_when_bare` gives a bare `--resume`
the value PICK before parsing. "Bare" means nothing follows it, or another option does
(`agentcli --resume -m opus`): an id never starts with `-`.
"""

from __future__ import annotations

from agentcli.errors import UsageError
from agentcli.session.options import PICK

OPTION = "--resume"


def pick_when_bare(args: list[str]) -> list[str]:
    """`args` with every bare `--resume` (up to a `--`) given PICK as its value."""
    given: list[str] = []
    for index, arg in enumerate(args):
        if arg == "--":
            return [*given, *args[index:]]
        following = args[index + 1] if index + 1 < len(args) else None
        bare = arg == OPTION and (following is None or following.startswith("-"))
        given.append(f"{OPTION}={PICK}" if bare else arg)
    return given


def no_picker_here() -> UsageError:
    """Why `--resume` without an id cannot be answered: no terminal, or `run`."""
    return UsageError(
        "--resume without an id picks a session in the REPL, on a terminal; here it needs an id",
        hint="--resume ID (`agentcli sessions list` shows the ids), "
        "or --continue for the latest session in this workspace",
    )
