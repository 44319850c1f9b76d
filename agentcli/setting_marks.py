"""Reading the marks on the settings model (`agentcli.settings`: `Untrusted`, `Accumulates`,
`Env`, `StartsPrograms`…) by dotted key: what `agentcli.config` and `agentcli.programs` decide
with."""

from __future__ import annotations

import functools
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from agentcli.settings import Settings


def section_model(info: FieldInfo) -> type[BaseModel] | None:
    kind = info.annotation
    return kind if isinstance(kind, type) and issubclass(kind, BaseModel) else None


@functools.cache
def leaf_fields(model: type[BaseModel] = Settings, prefix: str = "") -> dict[str, FieldInfo]:
    """Every setting of `model` by dotted name (sections opened)."""
    found: dict[str, FieldInfo] = {}
    for name, info in model.model_fields.items():
        section = section_model(info)
        if section is not None:
            found.update(leaf_fields(section, f"{prefix}{name}."))
        else:
            found[f"{prefix}{name}"] = info
    return found


def mark_of(key: str, kind: type[Any], model: type[BaseModel] = Settings) -> Any:
    """The mark of type `kind` on dotted `key` of `model`, or None."""
    info = leaf_fields(model).get(key)
    return next((m for m in info.metadata if isinstance(m, kind)), None) if info else None
