"""The JSON schema of a tool's input model, as the model API is sent it, kept between runs.

Generating it is the same work at every start for the same code: pydantic builds each input
model's core schema, imports its JSON-schema generator and walks the models (~30 ms of the time
to the first request). So the schemas are kept in the data dir (`tool-schemas.json`, private),
under a key of what they are derived from: every source file of agentcli (path, size, mtime) and
pydantic's version. Any edit or upgrade is a miss: generated again, and kept. The input models
build their validators when a call is first validated (`defer_build`), after the first request.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

import agentcli
from agentcli.paths import data_home
from agentcli.private import write_private

CACHE_FILE = "tool-schemas.json"


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """`model.model_json_schema()`, from the kept copy when the code it came from is the same."""
    name = f"{model.__module__}.{model.__qualname__}"
    kept = _kept()
    if name in kept:
        return copy.deepcopy(kept[name])
    schema = model.model_json_schema()
    kept[name] = copy.deepcopy(schema)
    with contextlib.suppress(OSError):
        path = data_home() / CACHE_FILE
        if path.parent.is_dir():
            write_private(path, json.dumps({"key": _code_key(), "schemas": kept}).encode())
    return schema


@functools.cache
def _kept() -> dict[str, Any]:
    """The kept schemas of this code (empty when there are none, or they are another code's);
    read once per process, and added to as schemas are generated."""
    try:
        data = json.loads((data_home() / CACHE_FILE).read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("key") != _code_key():
        return {}
    schemas = data.get("schemas")
    return schemas if isinstance(schemas, dict) else {}


@functools.cache
def _code_key() -> str:
    """What the schemas depend on: agentcli's sources as they are on disk, and pydantic.
    (`os.scandir` on strings: the same walk through pathlib took ~20 ms of every start.)"""
    import pydantic

    digest = hashlib.sha256(pydantic.VERSION.encode())
    _digest_sources(str(Path(agentcli.__file__).parent), digest.update)
    return digest.hexdigest()


def _digest_sources(directory: str, update: Callable[[bytes], object]) -> None:
    """Feed `update` every `.py` file under `directory` (path, size, mtime), in a stable
    order."""
    with os.scandir(directory) as entries:
        found = sorted(entries, key=lambda entry: entry.name)
    for entry in found:
        if entry.is_dir(follow_symlinks=False):
            if entry.name != "__pycache__":
                _digest_sources(entry.path, update)
        elif entry.name.endswith(".py"):
            st = entry.stat()
            update(f"{entry.path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
