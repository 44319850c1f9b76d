"""Settings: command-line flags over config files over defaults.

Config files are TOML, read in order of rising precedence: user (`<config dir>/config.toml`),
project (`.agentcli/config.toml`), local (`.agentcli/config.local.toml`), then flags. Rule lists
(`allow`, `ask`, `deny`) accumulate across levels so that a deny at any level still wins; scalar
settings are overridden by the higher level. A broken file is a UsageError naming the file.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentcli.errors import UsageError

DEFAULT_MODEL = "claude-sonnet-4-5"
RULE_KEYS = ("allow", "ask", "deny")


def data_home() -> Path:
    """The data directory: `$AGENTCLI_HOME`, else the platform's user data dir."""
    override = os.environ.get("AGENTCLI_HOME")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("agentcli", appauthor=False))


def user_config_path() -> Path:
    override = os.environ.get("AGENTCLI_CONFIG_DIR")
    if override:
        return Path(override).expanduser() / "config.toml"
    from platformdirs import user_config_dir

    return Path(user_config_dir("agentcli", appauthor=False)) / "config.toml"


def project_config_paths(workspace: Path) -> tuple[Path, Path]:
    return workspace / ".agentcli" / "config.toml", workspace / ".agentcli" / "config.local.toml"


@dataclass(kw_only=True)
class FileConfig:
    """What the config files say, merged."""

    values: dict[str, Any] = field(default_factory=dict)
    """Scalar settings, top-level and per table (e.g. `model`, `acceptance.commands`)."""
    rules: dict[str, list[str]] = field(default_factory=lambda: {k: [] for k in RULE_KEYS})
    sources: list[Path] = field(default_factory=list)
    origins: dict[str, Path] = field(default_factory=dict)
    """The file each value in `values` came from (for error messages)."""

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


def load_file_config(workspace: Path) -> FileConfig:
    config = FileConfig()
    for path in (user_config_path(), *project_config_paths(workspace)):
        if not path.is_file():
            continue
        flat = _flatten(read_toml(path))
        for key in RULE_KEYS:
            for name in (key, f"permissions.{key}"):
                rules = flat.pop(name, None)
                if rules is None:
                    continue
                if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
                    raise UsageError(f"{path}: `{name}` must be a list of rule strings")
                config.rules[key].extend(rules)
        config.values.update(flat)
        config.origins.update(dict.fromkeys(flat, path))
        config.sources.append(path)
    return config
