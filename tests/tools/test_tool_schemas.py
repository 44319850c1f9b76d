"""Snapshot tests of what the model sees of each built-in tool: name, description and the JSON
schema derived from the input model. These are prompt text: a change here must be deliberate.
Regenerate with `AGENTCLI_UPDATE_SNAPSHOTS=1 pytest tests/tools/test_tool_schemas.py` and review
the diff."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentcli.tools.builtin import builtin_tools

SNAPSHOTS = Path(__file__).parent / "snapshots"
TOOL_NAMES = ["read_file", "write_file", "edit_file", "glob", "grep", "shell"]


def test_the_builtin_tools_and_their_order() -> None:
    assert [tool.name for tool in builtin_tools()] == TOOL_NAMES


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_spec_matches_snapshot(name: str) -> None:
    (tool,) = [t for t in builtin_tools() if t.name == name]
    actual = json.dumps(tool.spec().to_wire(), indent=2, sort_keys=True) + "\n"
    path = SNAPSHOTS / f"{name}.json"
    if os.environ.get("AGENTCLI_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(actual)
    assert path.exists(), f"no snapshot for {name}; run with AGENTCLI_UPDATE_SNAPSHOTS=1"
    assert actual == path.read_text(), (
        f"the spec of {name} changed; review it and rerun with AGENTCLI_UPDATE_SNAPSHOTS=1"
    )


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_schema_rejects_unknown_fields_and_has_no_title(name: str) -> None:
    (tool,) = [t for t in builtin_tools() if t.name == name]
    schema = tool.spec().input_schema
    assert schema["additionalProperties"] is False
    assert "title" not in schema
    for field in schema["properties"].values():
        assert field.get("description"), f"{name}: every field needs a description"
