"""Finding the git repository that holds a workspace, by reading its files as data.

git's own discovery would read the repository's config (and every file it includes) on the way,
so it is done here instead: walk up from the workspace to the first `.git` directory or
`gitdir:` file, follow a linked worktree's `commondir`, and read the few config values that
matter (`core.bare`, `core.worktree`, `extensions.objectFormat`, stat-cache settings,
`core.excludesFile`) with `git config --file … --no-includes`, which parses a file and runs
nothing. Like git, a repository owned by another user is not used unless the user's protected
config lists it in `safe.directory`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from agentcli.owngit.command import NO_REPOSITORY, GitError, run_git
from agentcli.safe_read import read_bytes

_GITFILE = re.compile(r"gitdir: *(.+?)\s*$")
_GITFILE_MAX_BYTES = 4096

Config = dict[str, list[str | None]]
"""Lower-cased `section.key` (subsection kept as written) -> every value, in file order; None
for a key written without `=` (a boolean true)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Found:
    """A `.git` found above the workspace, before its config was looked at."""

    directory: Path
    """The directory holding the `.git` entry (resolved)."""
    git_dir: Path
    """This work tree's own git dir: its index and HEAD."""
    common_dir: Path
    """Objects, `info/exclude` and `config`: the same as git_dir except in a linked worktree."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    work_tree: Path
    """The top of the working copy (resolved)."""
    git_dir: Path
    common_dir: Path
    config: Config
    """The repository's config file, as data (no includes)."""


def locate(workspace: Path) -> Found | None:
    """The `.git` that governs `workspace`, as git's discovery would find it (files only, no
    config read); None outside git, inside a bare repository or a `.git` directory, or behind a
    broken `gitdir:` file."""
    start = workspace.resolve()
    for directory in (start, *start.parents):
        dotgit = directory / ".git"
        if dotgit.is_file():
            git_dir = _gitfile_target(dotgit)
            if git_dir is None or not _is_git_dir(git_dir):
                return None  # git stops here too ("invalid gitfile format")
            return Found(directory=directory, git_dir=git_dir, common_dir=_common_dir(git_dir))
        if dotgit.is_dir() and _is_git_dir(dotgit):
            git_dir = dotgit.resolve()
            return Found(directory=directory, git_dir=git_dir, common_dir=_common_dir(git_dir))
        if _is_git_dir(directory):
            return None
    return None


def settle(found: Found, workspace: Path, git: str) -> Layout | None:
    """The repository `found` as a work tree holding `workspace`, after its config (read as
    data): None for a bare repository, a `core.worktree` elsewhere, or a repository another user
    owns that the user's protected config does not list in `safe.directory`."""
    config = read_config(found.common_dir / "config", git)
    work_tree = found.directory
    if found.git_dir == found.common_dir:  # the main work tree: its config may move or drop it
        if config_bool(config, "core.bare"):
            return None
        configured = last_value(config, "core.worktree")
        if configured:
            work_tree = (found.common_dir / Path(configured).expanduser()).resolve()
            if not workspace.resolve().is_relative_to(work_tree):
                return None
    if not all(_owned(path, git) for path in (work_tree, found.git_dir, found.common_dir)):
        return None
    return Layout(
        work_tree=work_tree, git_dir=found.git_dir, common_dir=found.common_dir, config=config
    )


def _gitfile_target(dotgit: Path) -> Path | None:
    try:  # a regular file, never a pipe (`agentcli.safe_read`); its first line is all git reads
        data = read_bytes(dotgit, inside=None, limit=_GITFILE_MAX_BYTES, cut=True)
    except OSError:
        return None
    head = data.decode(errors="surrogateescape")
    found = _GITFILE.match(head.splitlines()[0] if head else "")
    if found is None:
        return None
    target = Path(found.group(1))
    return (target if target.is_absolute() else dotgit.parent / target).resolve()


def _common_dir(git_dir: Path) -> Path:
    pointer = git_dir / "commondir"
    try:  # never a FIFO planted there (it would block), never more than a path's worth
        data = read_bytes(pointer, inside=None, limit=_GITFILE_MAX_BYTES, cut=True)
    except OSError:
        return git_dir
    value = data.decode(errors="surrogateescape").strip()
    target = Path(value)
    return (target if target.is_absolute() else git_dir / target).resolve()


def _is_git_dir(path: Path) -> bool:
    common = _common_dir(path)
    head = path / "HEAD"
    return (
        (head.is_file() or head.is_symlink())
        and (common / "objects").is_dir()
        and (common / "refs").is_dir()
    )


def read_config(path: Path, git: str) -> Config:
    """A config file's values, parsed by git without following includes; {} when it cannot
    be read. Parsed once per process for as long as the file is unchanged (its stat): every
    session decision reads the user's config files, and the REPL and `undo` decide again."""
    try:
        st = path.stat()
    except OSError:
        return {}
    if not path.is_file():
        return {}
    key = (git, str(path))
    stamp = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    known = _PARSED.get(key)
    if known is not None and known[0] == stamp:
        return {name: list(values) for name, values in known[1].items()}
    try:
        done = run_git(
            git,
            ["config", "--file", str(path), "--no-includes", "--null", "--list"],
            git_dir=NO_REPOSITORY,
            cwd=Path("/"),
        )
    except GitError:
        return {}
    config: Config = {}
    for entry in done.stdout.decode(errors="surrogateescape").split("\0"):
        if entry:
            name, newline, value = entry.partition("\n")
            config.setdefault(name, []).append(value if newline else None)
    _PARSED[key] = (stamp, config)
    return {name: list(values) for name, values in config.items()}


_PARSED: dict[tuple[str, str], tuple[tuple[int, ...], Config]] = {}


def last_value(config: Config, key: str) -> str | None:
    values = config.get(key)
    return values[-1] if values else None


def config_bool(config: Config, key: str) -> bool:
    if key not in config:
        return False
    value = config[key][-1]
    return value is None or value.strip().lower() in ("true", "yes", "on", "1")


def user_config_files() -> list[Path]:
    """The user's protected config files (system, then global), as git would find them."""
    env = os.environ
    files = []
    if not env.get("GIT_CONFIG_NOSYSTEM"):
        files.append(Path(env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"))
    if env.get("GIT_CONFIG_GLOBAL"):
        files.append(Path(env["GIT_CONFIG_GLOBAL"]))
    else:
        xdg = env.get("XDG_CONFIG_HOME") or str(Path("~/.config").expanduser())
        files += [Path(xdg) / "git" / "config", Path("~/.gitconfig").expanduser()]
    return files


def user_config(git: str) -> Config:
    merged: Config = {}
    for path in user_config_files():
        for key, values in read_config(path, git).items():
            merged.setdefault(key, []).extend(values)
    return merged


def _owned(path: Path, git: str) -> bool:
    """Whether git would trust `path` by owner (its `ensure_valid_ownership`), or the user's
    protected config lists it in `safe.directory`."""
    try:
        owner = path.stat().st_uid
    except OSError:
        return False
    me = os.geteuid()
    sudo = os.environ.get("SUDO_UID", "")
    if owner == me or (me == 0 and sudo.isdigit() and owner == int(sudo)):
        return True
    safe: list[str] = []
    for value in user_config(git).get("safe.directory", []):
        safe = [] if not value else [*safe, value]  # an empty value resets the list
    return any(entry == "*" or Path(entry).expanduser().resolve() == path for entry in safe)
