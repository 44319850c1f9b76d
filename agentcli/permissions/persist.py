"""Saving "always" answers: append a rule to the `allow` list of `.agentcli/config.local.toml`
(a personal file: the repository is told to ignore it, `keep_out_of_git`).

The file is edited with tomlkit, which keeps the user's comments and layout; the result is
parsed again before it replaces the file. Concurrent agentcli sessions serialize on a lock of
the `.agentcli` directory and replace the file atomically.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from agentcli.errors import UsageError
from agentcli.owngit.discover import locate
from agentcli.private import private_dir
from agentcli.safe_read import MAX_CONFIG_BYTES, Inside, Unreadable, read_bytes
from agentcli.safe_write import pinned_parent, replace_file


def append_allow_rule(path: Path, rule: str) -> bool:
    """Add `rule` to the file's `allow` list (creating file and list as needed).

    Returns False when the rule was already there. Raises UsageError when the file is not
    valid TOML (it is left untouched) and OSError when it cannot be written.
    """
    private_dir(path.parent)
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(directory, fcntl.LOCK_EX)
        text = _current(path)
        if rule in _allow_list(_parse(text, path)):
            return False
        updated = _with_rule(text, rule, path)
        if rule not in _allow_list(_parse(updated, path)):
            raise UsageError(f"could not add {rule!r} to {path}", hint="add it by hand")
        _replace(path, updated)
        return True
    finally:
        os.close(directory)


def _current(path: Path) -> str:
    """The file's text now ("" when there is none), read as config is read
    (`agentcli.safe_read`: a regular file, bounded, never a pipe or a device, and inside the
    directory that holds its own: the workspace for `.agentcli/config.local.toml`, the data
    dir for the answers kept for an untrusted workspace)."""
    if not os.path.lexists(path):
        return ""
    inside = Inside.of(path.parent.parent)
    try:
        return read_bytes(path, inside=inside, limit=MAX_CONFIG_BYTES).decode("utf-8")
    except Unreadable as exc:
        raise UsageError(f"config file {path} is not read: {exc.why}") from exc
    except UnicodeDecodeError as exc:
        raise UsageError(f"config file {path} is not UTF-8 text") from exc


def _parse(text: str, path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"config file {path} is not valid TOML: {exc}") from exc


def _allow_list(data: dict[str, Any]) -> list[Any]:
    top = data.get("allow")
    permissions = data.get("permissions")
    nested = permissions.get("allow") if isinstance(permissions, dict) else None
    return [*(top if isinstance(top, list) else []), *(nested if isinstance(nested, list) else [])]


def _with_rule(text: str, rule: str, path: Path) -> str:
    """`text` with `rule` appended to the `allow` list it has (top level first, then
    `[permissions]`), or to a new top-level one (which tomlkit puts before the first table)."""
    import tomlkit  # only when a rule is saved: ~10 ms at every start otherwise
    from tomlkit.exceptions import TOMLKitError

    try:
        document = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise UsageError(f"config file {path} is not valid TOML: {exc}") from exc
    permissions = document.get("permissions")
    if isinstance(document.get("allow"), list):
        document["allow"].append(rule)
    elif isinstance(permissions, dict) and isinstance(permissions.get("allow"), list):
        permissions["allow"].append(rule)
    else:
        document.add("allow", [rule])
    return tomlkit.dumps(document)


def _replace(path: Path, text: str) -> None:
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".config.local.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        if path.exists():
            Path(temp).chmod(path.stat().st_mode & 0o777)
        Path(temp).replace(path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def keep_out_of_git(path: Path) -> bool:
    """Make `path` (a personal file agentcli wrote in the workspace, as
    `.agentcli/config.local.toml`) ignored by the repository that holds it: its line goes to
    the repository's own `info/exclude` (personal, never committed, unlike a `.gitignore`), so
    `git status` never offers it for a commit. True when the line was added; nothing happens
    outside git or when the line is there already. Written as agentcli writes every file it
    did not create (`safe_write`: no link in the way is followed)."""
    found = locate(path.parent)
    if found is None:
        return False
    try:
        line = "/" + path.resolve().relative_to(found.directory).as_posix()
    except ValueError:
        return False
    info = found.common_dir / "info"
    exclude = info / "exclude"
    current = ""
    if os.path.lexists(exclude):
        try:
            data = read_bytes(exclude, inside=Inside.of(found.common_dir), limit=MAX_CONFIG_BYTES)
        except Unreadable:
            return False  # not a file we would write over
        current = data.decode("utf-8", "replace")
    if line in current.splitlines():
        return False
    comment = "# agentcli: personal settings, never committed\n"
    updated = current + ("" if not current or current.endswith("\n") else "\n") + comment + line
    with pinned_parent(exclude, [found.common_dir]) as directory:
        replace_file(directory, exclude.name, (updated + "\n").encode())
    return True
