"""Settings: command-line flags over config files over defaults.

Config files are TOML, read in order of rising precedence: user (`<config dir>/config.toml`),
project (`.agentcli/config.toml`), local (`.agentcli/config.local.toml`), then flags. Rule lists
(`allow`, `ask`, `deny`) accumulate across levels so that a deny at any level still wins; scalar
settings are overridden by the higher level. A broken file is a UsageError naming the file.

The two in-repo files come with the repository, so until the user trusts the workspace
(`agentcli.trust`) they may only narrow what runs unasked: see `_untrusted_may_set`. The user's
file, and the "always" answers agentcli kept for the workspace in the data dir, are the user's.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentcli import trust
from agentcli.errors import UsageError
from agentcli.paths import data_home, project_config_paths, user_config_path

__all__ = ["data_home", "project_config_paths", "user_config_path"]  # re-exported

DEFAULT_MODEL = "claude-sonnet-4-5"
RULE_KEYS = ("allow", "ask", "deny")


def resolve_workspace(cwd: Path | None) -> Path:
    """The workspace `-C/--cwd` names (default: the current directory), resolved; a usage error
    when it is not a directory, so no command reports on, or records against, a typo."""
    workspace = (cwd or Path.cwd()).expanduser()
    if not workspace.is_dir():
        raise UsageError(f"--cwd {workspace} is not a directory")
    return workspace.resolve()


@dataclass(kw_only=True)
class FileConfig:
    """What the config files say, merged."""

    values: dict[str, Any] = field(default_factory=dict)
    """Scalar settings, top-level and per table (e.g. `model`, `acceptance.commands`)."""
    rules: dict[str, list[str]] = field(default_factory=lambda: {k: [] for k in RULE_KEYS})
    sources: list[Path] = field(default_factory=list)
    origins: dict[str, Path] = field(default_factory=dict)
    """The file each value in `values` came from (for error messages)."""
    trusted: bool = True
    """The workspace's in-repo files were taken whole (the user trusts the workspace)."""
    ignored: dict[Path, list[str]] = field(default_factory=dict)
    """Per in-repo file of an untrusted workspace, the settings dropped, as `key = value`."""

    def get(self, dotted: str, default: Any = None) -> Any:
        return self.values.get(dotted, default)

    def string(self, dotted: str) -> str | None:
        """A text setting, or None when unset."""
        value = self.values.get(dotted)
        if value is not None and not isinstance(value, str):
            raise self._wrong_type(dotted, "a string")
        return value

    def strings(self, dotted: str) -> list[str]:
        """A list-of-text setting (empty when unset)."""
        value = self.values.get(dotted, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self._wrong_type(dotted, "a list of strings")
        return value

    def integer(self, dotted: str, default: int, *, minimum: int = 0) -> int:
        """A whole-number setting of at least `minimum`."""
        value = self.values.get(dotted, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self._wrong_type(dotted, f"a whole number of at least {minimum}")
        return value

    def number(self, dotted: str, default: float) -> float:
        """A positive number setting (integer or float)."""
        value = self.values.get(dotted, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise self._wrong_type(dotted, "a positive number")
        return float(value)

    def fraction(self, dotted: str, default: float) -> float:
        """A number above 0 and at most 1 (integer or float)."""
        value = self.values.get(dotted, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
            raise self._wrong_type(dotted, "a number above 0 and at most 1")
        return float(value)

    def _wrong_type(self, dotted: str, expected: str) -> UsageError:
        where = self.origins.get(dotted)
        return UsageError(
            f"{where or 'config'}: `{dotted}` must be {expected} (got {self.values.get(dotted)!r})",
            hint="fix the value in that file",
        )


def read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(
            f"config file {path} is not valid TOML: {exc}", hint="fix or remove the file"
        ) from exc
    except OSError as exc:
        raise UsageError(f"cannot read config file {path}: {exc.strerror}") from exc


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def load_file_config(workspace: Path, *, trusted: bool | None = None) -> FileConfig:
    """The merged config for `workspace`; `trusted` None asks the trust store."""
    if trusted is None:
        trusted = trust.is_trusted(workspace)
    config = FileConfig(trusted=trusted)
    in_repo = project_config_paths(workspace)
    for path in (user_config_path(), *in_repo, trust.user_rules_path(workspace)):
        if not path.is_file():
            continue
        rules, flat = _read_level(path)
        if path in in_repo and not trusted:
            dropped = _drop_loosening(rules, flat, config.values)
            if dropped:
                config.ignored[path] = dropped
        for key in RULE_KEYS:
            config.rules[key].extend(rules[key])
        config.values.update(flat)
        config.origins.update(dict.fromkeys(flat, path))
        config.sources.append(path)
    return config


def _read_level(path: Path) -> tuple[dict[str, list[str]], dict[str, Any]]:
    flat = _flatten(read_toml(path))
    rules: dict[str, list[str]] = {key: [] for key in RULE_KEYS}
    for key in RULE_KEYS:
        for name in (key, f"permissions.{key}"):
            found = flat.pop(name, None)
            if found is None:
                continue
            if not isinstance(found, list) or not all(isinstance(r, str) for r in found):
                raise UsageError(f"{path}: `{name}` must be a list of rule strings")
            rules[key].extend(found)
    return rules, flat


# Only bound the work, never let anything run unasked (limits apply whatever their value).
_HARMLESS = frozenset(
    {
        "model",
        "permissions.denial_limit",
        "convergence.repeat_limit",
        "convergence.failure_limit",
        "acceptance.retries",
        "acceptance.timeout_s",
        # What the model is sent of old tool results, never what runs.
        "context.window_tokens",
        "context.elide_at",
        "context.keep_recent",
    }
)
# Every mode not listed lets more run unasked than `default`.
_MODE_STRICTNESS = {"read-only": 0, "default": 1}


def _untrusted_may_set(key: str, value: Any, in_force: dict[str, Any]) -> bool:
    """Can an untrusted in-repo file set `key` to `value`? Only if it narrows what runs
    unasked, or is harmless. A key not named here (including any added later) cannot."""
    if key in _HARMLESS:
        return True
    if key == "permission_mode":
        current = in_force.get("permission_mode", "default")
        limit = _MODE_STRICTNESS.get(current, 2) if isinstance(current, str) else 2
        return isinstance(value, str) and _MODE_STRICTNESS.get(value, 3) <= limit
    if key == "sandbox.enabled":
        return value is True
    if key == "sandbox.network":
        return value is False
    # Hiding more from commands, or scrubbing more of their environment, only narrows.
    return key in ("sandbox.deny_read", "sandbox.env_scrub")


def _drop_loosening(
    rules: dict[str, list[str]], flat: dict[str, Any], in_force: dict[str, Any]
) -> list[str]:
    """Remove what an untrusted file may not set (its allow rules and loosening settings) from
    `rules` and `flat`; return it as `key = value` lines. Ask and deny rules always apply."""
    dropped = [f"allow = {json.dumps(rules['allow'])}"] if rules["allow"] else []
    rules["allow"] = []
    for key in [k for k, v in flat.items() if not _untrusted_may_set(k, v, in_force)]:
        dropped.append(f"{key} = {json.dumps(flat.pop(key), default=str)}")
    return dropped


def describe_ignored(config: FileConfig) -> str:
    """The dropped settings, one file a line; empty when nothing was dropped."""
    return "\n".join(
        f"  {path}: {'; '.join(settings)}" for path, settings in config.ignored.items()
    )


def untrusted_notice(config: FileConfig) -> str | None:
    """What to tell the user once when in-repo settings were ignored, or None."""
    if not config.ignored:
        return None
    return (
        "this workspace is not trusted, so agentcli ignored what its own config files would "
        f"allow:\n{describe_ignored(config)}\n"
        "If you trust this repository's config, run `agentcli trust` here (undo: "
        "`agentcli trust --revoke`), or pass --trust-project to `agentcli run` for one run."
    )
