"""Protected paths: `.git/`, `.agentcli/`, the files that name programs agentcli starts
(`.mcp.json`, and the scripts hooks run), agentcli's own config and data directories (the user
config, the trust store, kept "always" answers) and, for the file tools, agentcli's own
installation (`agentcli.own_install`); and the shell commands that may write there: a
redirection into one, a program given one as an argument (or, for agentcli's own directories
and the hook scripts, spelling one out anywhere in an argument, as a `python -c` program may),
`git config`, or `agentcli trust` and `agentcli hooks approve` (a repository must not be able
to trust itself, or approve its own hooks).

A path is resolved as the shell would (`~`, `$VARS`, symbolic links, relative to the command's
working directory) before it is compared. The policy (`policy.RulePolicy`) always asks before
any of these runs; only `--permission-mode yolo` runs them without asking.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from agentcli.permissions.commands import git_subcommand
from agentcli.permissions.readonly import is_read_only_part
from agentcli.permissions.shell import SimpleCommand
from agentcli.truncation import shorten

PROTECTED_DIRS = (".git", ".agentcli")
PROGRAM_FILES = (".mcp.json",)
"""Files that name programs agentcli starts unconfined (MCP servers): writes ask like writes
to `.agentcli/`, and sandboxed commands cannot change them (`agentcli.sandbox.runner`)."""


def is_protected_path(
    path: str,
    agentcli_dirs: Sequence[Path] = (),
    cwd: Path | None = None,
    install_dirs: Sequence[Path] = (),
) -> bool:
    """Does `path` (a word from a command, or a tool's target) name something under `.git/`,
    `.agentcli/`, a file that names programs agentcli starts (`.mcp.json`), or something in
    one of `agentcli_dirs` (agentcli's own config and data directories: the user config, the
    trust store, kept "always" answers) or `install_dirs` (agentcli's own installation: given
    for the file tools' targets; for commands the sandbox keeps it read-only)? A relative path
    is taken from `cwd`; `~`, `$VARS` and symlinks are resolved as the shell would."""
    for piece in path.split("="):
        components = [c for c in re.split(r"[/\\]", piece) if c]
        if any(c in PROTECTED_DIRS for c in components):
            return True
        if components and components[-1] in PROGRAM_FILES:
            return True
        own = (*agentcli_dirs, *install_dirs)
        if own and piece and _inside(_resolved(piece, cwd), own):
            return True
    return False


def is_one_of(path: str, files: Sequence[Path], cwd: Path | None = None) -> bool:
    """Does `path` (resolved as the shell would, from `cwd`) name one of `files` (e.g. the
    scripts hooks run)?"""
    return bool(files) and _inside(_resolved(path, cwd), files)


def _resolved(word: str, cwd: Path | None) -> str:
    # os.path, not Path: Path.expanduser raises on an unknown `~user`, which is just a word.
    expanded = os.path.expandvars(os.path.expanduser(word))  # noqa: PTH111
    if cwd is None and not expanded.startswith("/"):
        return expanded
    return os.path.realpath(os.path.join(cwd or "/", expanded))  # noqa: PTH118


def _inside(path: str, directories: Sequence[Path]) -> bool:
    for directory in directories:
        for root in {str(directory).rstrip("/"), os.path.realpath(directory)}:
            if path == root or path.startswith(root + "/"):
                return True
    return False


def _mentions(word: str, directories: Sequence[Path]) -> bool:
    """Does `word` (e.g. a `python -c` program) spell out one of `directories` anywhere in it,
    absolute or from `~`? A path inside a program is not a path word, but it still writes."""
    expanded = os.path.expandvars(word)
    home = os.path.expanduser("~")  # noqa: PTH111 - a string to compare strings with
    for directory in directories:
        spellings = {str(directory).rstrip("/"), os.path.realpath(directory)}
        spellings |= {"~" + s[len(home) :] for s in spellings if s.startswith(home + "/")}
        # The whole directory name: `/data` must not be found in `/database`.
        if any(re.search(re.escape(s) + r"(?![^/\s'\"),;:])", expanded) for s in spellings):
            return True
    return False


def runs_agentcli_trust(part: SimpleCommand) -> bool:
    """Does this command run `agentcli trust` or `agentcli hooks approve` (however agentcli
    is spelled: a path to the binary, `python -m agentcli`, `uv run agentcli`) or call the
    trust store's code?"""
    words = part.argv
    for index, word in enumerate(words):
        if any(code in word for code in ("agentcli.trust", "set_trusted", "agentcli.approvals")):
            return True
        module = words[index + 1] if word == "-m" and index + 1 < len(words) else ""
        if word.startswith("-magentcli"):
            module = word[2:]
        if Path(word).name == "agentcli" or module.split(".")[0] == "agentcli":
            rest = words[index + 1 :]
            return "trust" in rest or ("hooks" in rest and "approve" in rest)
    return False


def protected_write_reason(
    part: SimpleCommand, agentcli_dirs: Sequence[Path] = (), cwd: Path | None = None
) -> str | None:
    """Why this command may write to `.git/` or agentcli's own config or data (the trust
    store above all: a repository must not be able to trust itself), or None."""
    for target in part.file_writes:
        if is_protected_path(target, agentcli_dirs, cwd):
            return f"a redirection into {target}"
    if not part.argv or is_read_only_part(part):
        return None
    if runs_agentcli_trust(part):
        return "agentcli trust or hooks approve (only the user decides what to trust)"
    if Path(part.name).name == "git":
        sub, args = git_subcommand(part)
        if sub == "config" and not any(a.startswith(("--get", "--list", "-l")) for a in args):
            return "git config (writes .git/config)"
        return None  # git itself maintains .git; its destructive forms are checked separately
    for word in part.argv[1:]:
        if is_protected_path(word, agentcli_dirs, cwd) or _mentions(word, agentcli_dirs):
            return f"{part.name} on {shorten(word, 80, marker='...')}"
    return None
