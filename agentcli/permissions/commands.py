"""What a shell command does, judged from its parsed words: read-only, destructive, reading
which files, or needing more than the sandbox gives (network, writes to `.git`). Whether it
writes where agentcli keeps its own state is `agentcli.permissions.protected`.

These are code, not the model's opinion. The read-only set is a small allow-list of programs
and options (`agentcli.permissions.readonly`); destructive detection looks through wrappers such
as `env`, `sudo`, `xargs`, `bash -c` and `find -exec`. Obfuscation through expansions can hide a
destructive command from these checks; in auto mode the OS sandbox is the boundary.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from agentcli.permissions.readonly import GIT_SUBCOMMANDS, PROGRAMS, is_read_only_part
from agentcli.permissions.shell import (
    ParsedCommand,
    SimpleCommand,
    parse_command,
    rough_commands,
)

GIT_READS_REPOSITORY = frozenset(
    {
        *GIT_SUBCOMMANDS,
        *("blame", "ls-files", "ls-tree", "rev-parse", "rev-list", "describe", "grep"),
        *("shortlog", "cat-file", "show-ref", "for-each-ref", "merge-base", "name-rev"),
        *("version", "help", "check-ignore", "var"),
    }
)
"""git subcommands that only read the repository (they run with `.git` read-only)."""
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
_WRAPPERS = frozenset({"sudo", "doas", "env", "nice", "nohup", "time", "timeout", "command"})
_WRAPPERS_MORE = frozenset({"exec", "builtin", "stdbuf", "ionice", "chronic", "xargs"})
_WRAPPER_ARG_OPTIONS = frozenset({"-u", "-g", "-n", "-I", "-L", "-P", "-d", "-E", "-s", "-a"})
_NETWORK_TOOLS = frozenset(
    {"curl", "wget", "ssh", "scp", "sftp", "rsync", "nc", "ncat", "telnet", "ftp", "http"}
)
_NETWORK_SUBCOMMANDS = {
    "git": {"fetch", "pull", "push", "clone", "ls-remote", "submodule"},
    "pip": {"install", "download"},
    "pip3": {"install", "download"},
    "uv": {"add", "sync", "lock", "pip"},
    "npm": {"install", "i", "ci", "update", "add", "publish"},
    "pnpm": {"install", "i", "add", "update", "publish"},
    "yarn": {"install", "add", "upgrade", "publish"},
    "cargo": {"install", "fetch", "update", "publish", "add"},
    "go": {"get", "install", "mod"},
    "gem": {"install"},
    "bundle": {"install", "update"},
    "docker": {"pull", "push", "login"},
}


def is_read_only(command: str) -> bool:
    """True when every part of `command` is a built-in read-only command, with nothing that
    writes or runs anything else (no substitution, no redirection into a file)."""
    parsed = parse_command(command)
    return parsed.narrow_matchable and all(is_read_only_part(part) for part in parsed.parts)


FILE_READERS = frozenset(
    {"cat", "head", "tail", "wc", "grep", "ls", "find", "rg", "nl", "sort", "uniq", "cut"}
    | {"sed", "stat"}
)
"""Read-only commands that read the files their arguments name."""


def read_paths(part: SimpleCommand, workspace: Path) -> tuple[list[str], bool]:
    """The workspace-relative paths a built-in reader's arguments may name (option values
    included), and any command's input redirections (`< FILE`), and whether one may lie
    outside the workspace: an absolute path elsewhere, `~`, `..` out of it, a symlink out of
    it, or a `$` expansion bash fills in only later."""
    words = part.argv[1:] if Path(part.name).name in FILE_READERS else ()
    root = os.path.realpath(workspace)
    paths, outside = [], False
    attached = _ATTACHED_VALUE.get(Path(part.name).name, "")
    for word in (*words, *part.file_reads):
        value = word.split("=", 1)[1] if word.startswith("-") and "=" in word else word
        if attached and word.startswith("-") and not word.startswith("--"):
            value = _attached_value(word, attached) or value
        if not value or value.startswith("-"):
            continue
        if "$" in value or value.startswith("~"):
            outside = True
            continue
        full = os.path.realpath(os.path.join(root, value))  # noqa: PTH118 - strings on purpose
        if full == root or full.startswith(root + os.sep):
            paths.append(os.path.relpath(full, root))
        else:
            outside = True
    return paths, outside


_ATTACHED_VALUE = {name: PROGRAMS[name].valued for name in FILE_READERS if name in PROGRAMS}
"""Short options that take a value, which may be attached (`-fsecrets/key`, `-rnfFILE`)."""


def _attached_value(word: str, takes_value: str) -> str | None:
    """The value attached to a short-option cluster (`-rnfFILE` → `FILE`), if any: what follows
    the first letter that takes a value."""
    for index, letter in enumerate(word[1:], start=2):
        if letter in takes_value:
            return word[index:] or None
    return None


def reads_by_pattern(part: SimpleCommand) -> bool:
    """Whether a built-in reader reads files the shell picks by a pattern (`cat secre*/key`,
    `head {a,b}/key`, `wc < *.env`): which files those are is known only once bash expands
    it, through symbolic links too, so no path can be checked against a rule beforehand."""
    reader = Path(part.name).name in FILE_READERS and any(part.globbed[1:])
    return reader or any(c in target for target in part.file_reads for c in "*?[")


def searched_dirs(part: SimpleCommand, workspace: Path) -> list[str]:
    """The workspace-relative directories a built-in reader descends into (`rg`, `find`,
    `grep -r`, `ls -R`): those its arguments name, or `.` when it names no existing path. A
    reader that follows symbolic links (`grep -R`, `rg -L`, `find -L`) may reach any directory
    through a link the repository holds, so it searches `.` whatever it names."""
    name = Path(part.name).name
    if not _recursive(name, _options(part.argv[1:])):
        return []
    if _follows_links(name, part.argv[1:]):
        return ["."]
    paths = read_paths(part, workspace)[0]
    existing = [p for p in paths if (workspace / p).exists()]
    return [p for p in existing if (workspace / p).is_dir()] if existing else ["."]


def _recursive(name: str, options: list[str]) -> bool:
    if name in ("rg", "find"):
        return True
    if name not in ("grep", "ls"):
        return False
    # GNU options take any unambiguous prefix (`--recur`); grep also recurses with
    # `-d recurse` / `--directories=recurse`: any `-d` or `--directories` counts, whatever its
    # value (the value may be the next word, or abbreviated).
    longs: tuple[str, ...] = ("--recursive",)
    longs += ("--dereference-recursive", "--directories") if name == "grep" else ()
    for option in options:
        if option.startswith("--"):
            if len(option) > 2 and any(o.startswith(option.split("=", 1)[0]) for o in longs):
                return True
        elif "R" in option or (name == "grep" and ("r" in option or "d" in option)):
            return True
    return False


def _follows_links(name: str, args: Sequence[str]) -> bool:
    options = _options(args)
    if name == "grep":
        return any(
            (o.startswith("--") and "--dereference-recursive".startswith(o))
            or (not o.startswith("--") and "R" in o)
            for o in options
        )
    if name == "rg":
        return any(
            (o.startswith("--") and len(o) > 2 and "--follow".startswith(o))
            or (not o.startswith("--") and "L" in o)
            for o in options
        )
    if name == "ls":  # ls -RL lists what links point to
        return any(
            (o.startswith("--") and len(o) > 5 and "--dereference".startswith(o))
            or (not o.startswith("--") and "L" in o)
            for o in options
        )
    # find's -L/-H/-follow are options of their own, never clustered.
    return name == "find" and any(a in ("-L", "-H", "-follow") for a in args)


GIT_PRINTS_FILES = frozenset(
    {"show", "diff", "blame", "grep", "cat-file", "archive", "format-patch", "whatchanged"}
    # blame's twin, the plumbing diffs, and commands that print or pack whole histories
    | {"annotate", "diff-tree", "diff-index", "diff-files", "range-diff", "difftool"}
    | {"fast-export", "merge-tree", "bundle"}
)
"""git subcommands that print (or pack) file contents from the repository's history."""
_GIT_LOG_CONTENT = (
    *("-p", "-u", "-U", "-c", "-m", "-W", "-L", "-S", "-G", "--cc", "--patch", "--unified"),
    *("--binary", "--word-diff", "--color-words", "--function-context", "--diff-merges"),
    *("--pickaxe", "--dd", "--remerge-diff"),
)
"""`git log` options that print file contents (`-U3` and `--binary` imply `--patch`), or
(pickaxe) tell which commits contain a text."""


def git_prints_files(part: SimpleCommand) -> bool:
    """Whether a git command may print committed file contents: such files are out of reach of a
    path a `read(...)` rule can match (`git show HEAD:secrets/key`, `git log -p`)."""
    if Path(part.name).name != "git":
        return False
    sub, args = git_subcommand(part)
    if sub in GIT_PRINTS_FILES:
        return True
    if sub == "stash":  # `stash show` prints a patch with -p, or with stash.showPatch set
        return args[:1] in (["show"], ["list"])
    if sub not in ("log", "reflog"):
        return False
    return any(arg.startswith(_GIT_LOG_CONTENT) for arg in args)


def git_subcommand(part: SimpleCommand) -> tuple[str | None, list[str]]:
    """The git subcommand and its arguments, skipping global options (`-C dir`, `-c k=v`)."""
    args = list(part.argv[1:])
    while args and args[0].startswith("-"):
        option = args.pop(0)
        if option in _GIT_GLOBAL_VALUE and args:
            args.pop(0)
    return (args[0], args[1:]) if args else (None, [])


_GIT_GLOBAL_VALUE = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env"}
    | {"--attr-source"}
)
"""git's global options that take the next word as their value (`git --git-dir .git show`):
that word is not the subcommand."""


def unwrapped(part: SimpleCommand, depth: int = 0) -> Iterator[SimpleCommand]:
    """The command itself and what it runs through wrappers (`sudo`, `env`, `xargs`,
    `bash -c`, `eval`, `find -exec`), recursively."""
    yield part
    if depth > 4 or not part.argv:
        return
    name = Path(part.name).name
    args = list(part.argv[1:])
    if name in _WRAPPERS or name in _WRAPPERS_MORE:
        while args and (args[0].startswith("-") or "=" in args[0] or _is_duration(args[0])):
            option = args.pop(0)
            if option in _WRAPPER_ARG_OPTIONS and args:
                args.pop(0)
        if args:
            # The wrapped command's words keep whether bash expands them (`env cat secre*`).
            start = len(part.argv) - len(args)
            inner = SimpleCommand(
                assignments=(),
                argv=tuple(args),
                globbed=part.globbed[start:],
                computed=part.computed[start:],
            )
            yield from unwrapped(inner, depth + 1)
    elif name in _SHELLS:
        flag = next((a for a in args[:-1] if re.fullmatch(r"-[a-zA-Z]*c[a-zA-Z]*", a)), None)
        if flag is not None:
            yield from _commands_in(args[args.index(flag) + 1], depth)
    elif name == "eval" and args:
        yield from _commands_in(" ".join(args), depth)
    elif name == "find":
        for index, arg in enumerate(args):
            if arg in ("-exec", "-execdir", "-ok", "-okdir") and index + 1 < len(args):
                expands = part.globbed or (False,) * len(part.argv)
                words = [
                    (a, g)
                    for a, g in zip(args[index + 1 :], expands[index + 2 :], strict=True)
                    if a not in (";", "+", "{}")
                ]
                inner = SimpleCommand(
                    assignments=(),
                    argv=tuple(a for a, _ in words),
                    globbed=tuple(g for _, g in words),
                )
                yield from unwrapped(inner, depth + 1)


def _is_duration(word: str) -> bool:
    return bool(re.fullmatch(r"\d+(\.\d+)?[smhd]?", word))


def _commands_in(source: str, depth: int) -> Iterator[SimpleCommand]:
    parsed = parse_command(source)
    for part in parsed.commands() if parsed.ok else rough_commands(source):
        yield from unwrapped(part, depth + 1)


def every_command(parsed: ParsedCommand) -> list[SimpleCommand]:
    """Every simple command the string may run, nested and wrapped ones included; a rough
    split when parsing failed. For deny rules and destructive checks."""
    base = parsed.commands() if parsed.ok else rough_commands(parsed.source)
    return [inner for part in base for inner in unwrapped(part)]


def destructive_reason(part: SimpleCommand) -> str | None:
    """Why this command is destructive (loses work that cannot be recovered), or None."""
    if not part.argv:
        return None
    name = Path(part.name).name
    if name == "rm" and _has_flag(_options(part.argv[1:]), "f", "--force"):
        return "forced rm"
    if name != "git":
        return None
    sub, args = git_subcommand(part)
    options = _options(args)
    if sub == "reset" and "--hard" in options:
        return "git reset --hard"
    if sub == "clean" and _has_flag(options, "f", "--force"):
        return "git clean -f"
    if sub == "checkout" and ("--" in args or "." in args or _has_flag(options, "f", "--force")):
        return "git checkout that discards changes"
    if sub == "restore":
        return "git restore"
    if sub == "push" and (
        _has_flag(options, "f", "--force")
        or any(o.startswith(("--force", "--mirror", "--delete")) for o in options)
        or any(a.startswith(("+", ":")) for a in args if not a.startswith("-"))
    ):
        return "git push --force"
    if sub == "branch" and (
        _has_flag(options, "D")
        or (_has_flag(options, "d", "--delete") and _has_flag(options, "f", "--force"))
    ):
        return "git branch -D"
    if sub == "stash" and args[:1] in (["drop"], ["clear"]):
        return f"git stash {args[0]}"
    return None


def _options(args: Iterable[str]) -> list[str]:
    options = []
    for arg in args:
        if arg == "--":
            break
        if arg.startswith("-") and arg != "-":
            options.append(arg)
    return options


def _has_flag(options: list[str], short: str, long: str | None = None) -> bool:
    """Is `-<short>` given, alone or in a cluster such as `-rf`, or the long form?"""
    return any(
        option == long or (not option.startswith("--") and short in option[1:])
        for option in options
    )


def needs_git_write(part: SimpleCommand) -> bool:
    """A git command that changes the repository (so needs `.git` writable)."""
    if part.assignments or Path(part.name).name != "git":
        return False
    sub, _ = git_subcommand(part)
    return sub is not None and sub not in GIT_READS_REPOSITORY


def needs_network(part: SimpleCommand) -> bool:
    """A command known to need the network (package installs, git fetch/push, curl, ...)."""
    if not part.argv:
        return False
    name = Path(part.name).name
    if name in _NETWORK_TOOLS:
        return True
    if name.startswith("python") and part.argv[1:3] == ("-m", "pip"):
        return len(part.argv) > 3 and part.argv[3] in _NETWORK_SUBCOMMANDS["pip"]
    sub = git_subcommand(part)[0] if name == "git" else _first_word(part.argv[1:])
    return sub is not None and sub in _NETWORK_SUBCOMMANDS.get(name, ())


def _first_word(args: Iterable[str]) -> str | None:
    return next((a for a in args if not a.startswith("-")), None)
