"""Saving "always" answers: append a rule to the `allow` list of `.agentcli/config.local.toml`.

The file is edited as text so that the user's comments and layout survive; the result is parsed
again before it replaces the file. Concurrent agentcli sessions serialize on a lock of the
`.agentcli` directory and replace the file atomically.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from agentcli.errors import UsageError

_HEADER = re.compile(r"^[ \t]*\[", re.MULTILINE)


def append_allow_rule(path: Path, rule: str) -> bool:
    """Add `rule` to the file's `allow` list (creating file and list as needed).

    Returns False when the rule was already there. Raises UsageError when the file is not
    valid TOML (it is left untouched) and OSError when it cannot be written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(directory, fcntl.LOCK_EX)
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        data = _parse(text, path)
        if rule in _allow_list(data):
            return False
        updated = _with_rule(text, data, rule)
        if rule not in _allow_list(_parse(updated, path)):
            raise UsageError(f"could not add {rule!r} to {path}", hint="add it by hand")
        _replace(path, updated)
        return True
    finally:
        os.close(directory)


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


def _with_rule(text: str, data: dict[str, Any], rule: str) -> str:
    value = json.dumps(rule)  # JSON string escapes are valid TOML basic-string escapes
    first_table = _HEADER.search(text)
    top_end = first_table.start() if first_table else len(text)
    if isinstance(data.get("allow"), list):
        found = re.compile(r"^[ \t]*allow[ \t]*=[ \t]*\[", re.MULTILINE).search(text, 0, top_end)
        if found:
            return _insert_into_array(text, found.end() - 1, value)
    permissions = data.get("permissions")
    if isinstance(permissions, dict) and isinstance(permissions.get("allow"), list):
        header = re.compile(r"^[ \t]*\[[ \t]*permissions[ \t]*\]", re.MULTILINE).search(text)
        if header:
            found = re.compile(r"^[ \t]*allow[ \t]*=[ \t]*\[", re.MULTILINE).search(
                text, header.end()
            )
            if found:
                return _insert_into_array(text, found.end() - 1, value)
    # Top-level keys must come before the first table: a new list goes at the very top.
    return f"allow = [{value}]\n{text}"


def _insert_into_array(text: str, open_index: int, value: str) -> str:
    last_significant, index = open_index, open_index + 1
    while index < len(text):
        char = text[index]
        if char == "#":
            index = text.find("\n", index) if "\n" in text[index:] else len(text)
            continue
        if char in "\"'":
            index = _string_end(text, index)
            last_significant = index - 1
            continue
        if char == "]":
            break
        if char == "[":  # a nested array: skip it whole
            index = _array_end(text, index)
            last_significant = index - 1
            continue
        if not char.isspace():
            last_significant = index
        index += 1
    at = last_significant + 1
    before = text[last_significant]
    insertion = value if before == "[" else f" {value}," if before == "," else f", {value}"
    return text[:at] + insertion + text[at:]


def _array_end(text: str, open_index: int) -> int:
    depth, index = 0, open_index
    while index < len(text):
        char = text[index]
        if char in "\"'":
            index = _string_end(text, index)
            continue
        if char == "#":
            index = text.find("\n", index) if "\n" in text[index:] else len(text)
            continue
        depth += {"[": 1, "]": -1}.get(char, 0)
        index += 1
        if depth == 0:
            return index
    return index


def _string_end(text: str, start: int) -> int:
    """The index just past the string literal that starts at `start`."""
    quote = text[start]
    delimiter = quote * 3 if text.startswith(quote * 3, start) else quote
    index = start + len(delimiter)
    while index < len(text):
        if quote == '"' and text[index] == "\\":
            index += 2
            continue
        if text.startswith(delimiter, index):
            return index + len(delimiter)
        index += 1
    return index


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
