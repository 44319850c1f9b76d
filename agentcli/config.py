"""Resolving `Settings` (`agentcli.settings`) from config files, environment and flags, once.

Config files are TOML, read in order of rising precedence: user (`<config dir>/config.toml`),
project (`.agentcli/config.toml`), local (`.agentcli/config.local.toml`), and the "always"
answers agentcli keeps in the data dir for a workspace the user has not trusted; then the
environment (`AGENTCLI_MODEL`), then flags. Lists marked `ACCUMULATES` (the `allow` / `ask` /
`deny` rules, `sandbox.deny_read`, `sandbox.env_scrub`) add up across levels, so a deny at any
level still wins; the `[models."ID"]` tables merge key by key; every other value is overridden by
a higher level.

Each file is checked on its own, so an error names it: a key the model does not know is a
UsageError naming the file, the key and the closest known key; a value of the wrong type names
the file and the key. A broken file is an error, never silently skipped.

The two in-repo files come with the repository, so until the user trusts the workspace
(`agentcli.trust`) what they may set is decided by each field's `Untrusted` mark on the model:
a field without one (any field added later, too) is dropped from such a file, and the user is
told what was dropped (`untrusted_notice`). The user's file and the kept "always" answers are
the user's own.

In a workspace the user trusts (in the trust store: not `--trust-project`, which vouches for the
files as they are for one run), the settings marked `StartsPrograms(needs_approval=True)`
(`[mcp_servers]`) apply only as the user approved them, by content (`agentcli.approvals`):
changed or never approved, they are left out and recorded in `Provenance.held`.
"""

from __future__ import annotations

import difflib
import functools
import json
import os
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from agentcli import trust
from agentcli.errors import ConfigError, UsageError
from agentcli.hook_entry import Handler, MatcherGroup
from agentcli.mcp_entry import ServerEntry
from agentcli.paths import data_home, project_config_paths, resolve_workspace, user_config_path
from agentcli.programs import hold_unapproved
from agentcli.safe_read import MAX_CONFIG_BYTES, Inside, Unreadable, read_bytes, size_text
from agentcli.setting_marks import leaf_fields, mark_of, section_model
from agentcli.settings import (
    ALIASES,
    Accumulates,
    ByName,
    Env,
    ModelEntry,
    Origin,
    Provenance,
    Settings,
    Untrusted,
)

__all__ = [  # data_home and resolve_workspace are re-exported for modules that look here
    "Flag",
    "data_home",
    "describe_ignored",
    "flags_of",
    "leaf_fields",
    "load_settings",
    "may_set_untrusted",
    "read_level",
    "resolve_workspace",
    "untrusted_notice",
]


@dataclass(frozen=True, slots=True)
class Flag:
    """One command-line option that sets a setting."""

    key: str
    """The setting's dotted name (`acceptance.retries`)."""
    value: Any
    name: str
    """The option as typed (`--accept-retries`), for error messages."""


def load_settings(
    workspace: Path,
    *,
    flags: Iterable[Flag] = (),
    trusted: bool | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """The settings for `workspace`; `trusted` None asks the trust store."""
    vouched = trusted is True  # --trust-project: the user vouches for the files as they are
    if trusted is None:
        trusted = trust.is_trusted(workspace)
    provenance = Provenance(trusted=trusted, vouched=vouched)
    merged: dict[str, Any] = {}
    in_repo = project_config_paths(workspace)
    for path in (user_config_path(), *in_repo, trust.user_rules_path(workspace)):
        if not _present(path):
            continue
        level = read_level(path, Inside.of(workspace) if path in in_repo else None)
        if path in in_repo and not trusted:
            dropped = _drop_untrusted(level, merged)
            if dropped:
                provenance.ignored[path] = [
                    f"{_display_key(key)} = {json.dumps(value, default=str)}"
                    for key, value in dropped.items()
                ]
                provenance.withheld[path] = dropped
        elif path in in_repo and not vouched:
            provenance.held += hold_unapproved(level, path, workspace)
        _merge(merged, level, Origin(str(path), path), provenance)
        provenance.sources.append(path)
    environ = os.environ if environ is None else environ
    for key, variable in _env_variables().items():
        if environ.get(variable):
            _merge(merged, {key: environ[variable]}, Origin(variable), provenance)
    for flag in flags:
        _merge(merged, {flag.key: flag.value}, Origin(flag.name), provenance)
    if not merged:  # nothing to check: the defaults as they are (no validator built, ~15 ms)
        return Settings.model_construct().with_provenance(provenance)
    return Settings.model_validate(_nest(merged)).with_provenance(provenance)


def _present(path: Path) -> bool:
    """Whether there is a config file at `path` to read: something there that is not a file
    (a directory, a dangling link, a file where its directory should be) is a broken config
    file, not an absent one; `read_toml` says what is wrong with it."""
    try:
        path.lstat()
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return True


def read_toml(path: Path, inside: Inside | None = None) -> dict[str, Any]:
    """A config file's table. A file that came with the workspace (`inside`) is read only as a
    regular file inside it, and any as a regular file of at most `MAX_CONFIG_BYTES`
    (`agentcli.safe_read`): a link to `/dev/zero`, a pipe or a huge file is refused at once."""
    try:
        data = read_bytes(path, inside=inside, limit=MAX_CONFIG_BYTES)
    except Unreadable as exc:
        raise ConfigError(
            f"config file {path} is not read: {exc.why}",
            hint=f"agentcli reads a config file only as a regular file of at most "
            f"{size_text(MAX_CONFIG_BYTES)}"
            + (f" inside {inside.name}" if inside is not None else "")
            + "; fix or remove it",
        ) from exc
    except OSError as exc:
        raise ConfigError(
            f"cannot read config file {path}: {exc.strerror or exc}", hint="fix or remove it"
        ) from exc
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config file {path} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
            f"{exc.start})",
            hint="TOML files are UTF-8: convert or fix the file",
        ) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"config file {path} is not valid TOML: {exc}", hint="fix or remove the file"
        ) from exc


def read_level(path: Path, inside: Inside | None = None) -> dict[str, Any]:
    """One config file as dotted keys (the rule aliases first, as `permissions.*`); a key the
    model does not know is a UsageError naming the file. Values are checked when merged, after
    an untrusted file has lost what it may not set (a mode it may not set is dropped, whatever
    it says). `inside`: where a file that came with the workspace must lie (`read_toml`)."""
    data = read_toml(path, inside)
    level: dict[str, Any] = {}
    for alias, key in ALIASES.items():
        section = data.get("permissions")
        for written, found in (
            (alias, data.pop(alias, None)),
            (key, section.pop(alias, None) if isinstance(section, dict) else None),
        ):
            if found is None:
                continue
            if not isinstance(found, list) or not all(isinstance(r, str) for r in found):
                raise ConfigError(f"{path}: `{written}` must be a list of rule strings")
            level[key] = [*level.get(key, []), *found]
    unknown: list[str] = []
    _flatten(data, Settings, "", level, unknown)
    if unknown:
        raise ConfigError(
            f"{path}: " + "; ".join(_unknown_key(key) for key in unknown),
            hint="fix or remove the key in that file (README: Configuration)",
        )
    return level


def _flatten(
    data: Mapping[str, Any],
    model: type[BaseModel],
    prefix: str,
    into: dict[str, Any],
    unknown: list[str],
) -> None:
    for name, value in data.items():
        key = f"{prefix}{name}"
        info = model.model_fields.get(name)
        section = section_model(info) if info is not None else None
        if info is None:
            unknown.extend(_dotted(key, value))
        elif section is not None and isinstance(value, dict):
            _flatten(value, section, f"{key}.", into, unknown)
        else:
            into[key] = value


def _dotted(key: str, value: Any) -> list[str]:
    """`key`, or the dotted keys of the leaves of the table `value`."""
    if not isinstance(value, dict) or not value:
        return [key]
    return [leaf for name, inner in value.items() for leaf in _dotted(f"{key}.{name}", inner)]


@functools.cache
def _env_variables() -> dict[str, str]:
    """Dotted key → the environment variable that sets it (from the `Env` marks)."""
    return {key: mark.name for key in leaf_fields() if (mark := mark_of(key, Env)) is not None}


def _unknown_key(key: str) -> str:
    known = [*leaf_fields(), *ALIASES]
    table = key.rpartition(".")[0]
    if table.startswith("models."):  # a field of one `[models."ID"]` entry
        known = [f"{table}.{field}" for field in ModelEntry.model_fields]
    elif table.startswith("mcp_servers."):  # a key of one `[mcp_servers.NAME]` server
        known = [f"{table}.{field}" for field in ServerEntry.model_fields]
    elif table.startswith("hooks.") and table.count(".") == 1:  # a `[[hooks.EVENT]]` group
        known = [f"{table}.{field}" for field in MatcherGroup.model_fields]
    elif table.startswith("hooks."):  # one handler of a group
        known = [f"{table}.{field}" for field in Handler.model_fields]
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    return f"unknown key `{key}`" + (f" (did you mean `{close[0]}`?)" if close else "")


def _validate(level: Mapping[str, Any], origin: Origin) -> None:
    try:
        Settings.model_validate(_nest(level))
    except ValidationError as exc:
        # A flag's value is the command line's fault; a file's or a variable's, the setup's.
        kind = UsageError if origin.name.startswith("-") else ConfigError
        raise kind(
            "; ".join(_wrong_value(error, origin) for error in exc.errors()),
            hint="fix the value in that file" if origin.path else None,
        ) from exc


def _wrong_value(error: Any, origin: Origin) -> str:
    parts = [str(p) for p in error["loc"] if isinstance(p, str)]
    items = [p for p in error["loc"] if isinstance(p, int)]
    key = _display_key(".".join(parts))
    where = f" (item {items[0] + 1})" if items else ""
    got = repr(error.get("input"))
    if error["type"] == "enum":
        expected = error.get("ctx", {}).get("expected", "")
        noun = parts[-1].replace("_", " ")
        return f"{origin}: unknown {noun} {got} for `{key}` (one of {expected})"
    if error["type"] == "extra_forbidden":
        return f"{origin}: {_unknown_key(key)}"
    message = str(error["msg"])
    if error["type"] == "value_error":
        return f"{origin}: `{key}`: {message.removeprefix('Value error, ')}"
    if message.startswith("Input should be "):
        problem = "must be " + message.removeprefix("Input should be ")
    else:
        problem = "is invalid: " + message[:1].lower() + message[1:]
    return f"{origin}: `{key}`{where} {problem} (got {got})"


def _display_key(key: str) -> str:
    return next((alias for alias, full in ALIASES.items() if full == key), key)


def _drop_untrusted(level: dict[str, Any], in_force: Mapping[str, Any]) -> dict[str, Any]:
    """Remove from `level` what an untrusted file may not set (its allow rules and loosening
    settings, and every setting without an `Untrusted` mark); return it (dotted key → value)."""
    return {
        key: level.pop(key)
        for key in [k for k, v in level.items() if not may_set_untrusted(k, v, in_force)]
    }


def may_set_untrusted(
    key: str, value: Any, in_force: Mapping[str, Any], model: type[BaseModel] = Settings
) -> bool:
    """Can an untrusted in-repo file set dotted `key` of `model` to `value`, given the values
    in force below it? Only if the field's `Untrusted` mark says so; no mark: never."""
    mark: Untrusted | None = mark_of(key, Untrusted, model)
    return mark is not None and mark.allows(value, in_force)


def _merge(
    merged: dict[str, Any], level: Mapping[str, Any], origin: Origin, provenance: Provenance
) -> None:
    _validate(level, origin)
    for key, value in level.items():
        if mark_of(key, Accumulates) is not None:
            merged[key] = [*merged.get(key, []), *value]
            provenance.contributions.setdefault(key, []).append((origin, list(value)))
        elif mark_of(key, ByName) is not None:
            merged[key] = {**merged.get(key, {}), **value}
            for name in value:
                provenance.origins[f"{key}.{name}"] = origin
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merged_tables(merged[key], value)
        else:
            merged[key] = value
        provenance.origins[key] = origin


def _merged_tables(lower: Mapping[str, Any], higher: Mapping[str, Any]) -> dict[str, Any]:
    """A table of tables (`[models."ID"]`) over the levels: each key a higher level gives
    replaces the lower one's, so the user's file can describe one model and the project's
    another (or change one field of it)."""
    out = dict(lower)
    for name, value in higher.items():
        below = out.get(name)
        both = isinstance(value, dict) and isinstance(below, dict)
        out[name] = _merged_tables(below, value) if both else value  # type: ignore[arg-type]
    return out


def _nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    nested: dict[str, Any] = {}
    for key, value in flat.items():
        *sections, name = key.split(".")
        target = nested
        for section in sections:
            target = target.setdefault(section, {})
        target[name] = value
    return nested


def describe_ignored(settings: Settings) -> str:
    """The dropped settings, one file a line; empty when nothing was dropped."""
    return "\n".join(
        f"  {path}: {'; '.join(items)}" for path, items in settings.provenance.ignored.items()
    )


def untrusted_notice(settings: Settings) -> str | None:
    """What to tell the user once when in-repo settings were ignored, or None."""
    if not settings.provenance.ignored:
        return None
    return (
        "this workspace is not trusted, so agentcli ignored what its own config files would "
        f"allow:\n{describe_ignored(settings)}\n"
        "If you trust this repository's config, run `agentcli trust` here (undo: "
        "`agentcli trust --revoke`), or pass --trust-project for one run or REPL."
    )


def flags_of(
    *,
    model: str | None = None,
    effort: str | None = None,
    permission_mode: str | None = None,
    allow: Sequence[str] = (),
    deny: Sequence[str] = (),
    accept: Sequence[str] = (),
    accept_retries: int | None = None,
    provider: str | None = None,
) -> list[Flag]:
    """The settings the common command-line options set (unset options set nothing)."""
    given = [
        ("model", model, "--model"),
        ("effort", effort, "--effort"),
        ("permission_mode", permission_mode, "--permission-mode"),
        ("permissions.allow", list(allow), "--allow"),
        ("permissions.deny", list(deny), "--deny"),
        ("acceptance.commands", list(accept), "--accept"),
        ("acceptance.retries", accept_retries, "--accept-retries"),
        ("provider", provider, "--provider"),
    ]
    # An empty option (`-m ""`, or an empty AGENTCLI_MODEL typer read for --model) is unset.
    return [Flag(key, value, name) for key, value, name in given if value not in (None, "", [])]
