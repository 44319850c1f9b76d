"""Tool input schemas kept between runs (issue 35): what the model API is sent must be exactly
what pydantic generates for the input model (the oracle), from the kept copy or not."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from agentcli.agents.tool import AgentInput
from agentcli.skills.tool import SkillInput
from agentcli.tools import input_schema as kept_schemas
from agentcli.tools.base import ToolInput
from agentcli.tools.builtin import builtin_tools
from agentcli.tools.todo_write import TodoWriteInput

MODELS: list[type[BaseModel]] = [
    *(tool.input_model for tool in builtin_tools()),
    AgentInput,
    SkillInput,
    TodoWriteInput,
]


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A data dir of its own, and nothing kept in this process yet."""
    home = tmp_path / "data"
    home.mkdir()
    monkeypatch.setenv("AGENTCLI_HOME", str(home))
    kept_schemas._kept.cache_clear()
    yield home / kept_schemas.CACHE_FILE
    kept_schemas._kept.cache_clear()


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_a_kept_schema_is_what_pydantic_generates(fresh: Path, model: type[BaseModel]) -> None:
    generated = kept_schemas.input_schema(model)  # not kept yet: generated and kept
    assert generated == model.model_json_schema()
    assert fresh.exists()
    kept_schemas._kept.cache_clear()  # the next run of the same code reads the file
    assert kept_schemas.input_schema(model) == model.model_json_schema()
    assert issubclass(model, ToolInput)


def test_the_schemas_of_other_code_are_not_used(fresh: Path) -> None:
    model = MODELS[0]
    fresh.write_text(
        json.dumps({"key": "another version", "schemas": {_name(model): {"type": "bogus"}}})
    )
    assert kept_schemas.input_schema(model) == model.model_json_schema()
    kept = json.loads(fresh.read_text())
    assert kept["key"] == kept_schemas._code_key()  # replaced by this code's


@pytest.mark.parametrize("content", [b"", b"{not json", b"[]", b'{"key": 1, "schemas": []}'])
def test_a_broken_cache_is_a_miss(fresh: Path, content: bytes) -> None:
    fresh.write_bytes(content)
    model = MODELS[1]
    assert kept_schemas.input_schema(model) == model.model_json_schema()


def test_a_caller_cannot_change_the_kept_copy(fresh: Path) -> None:
    model = MODELS[0]
    first = kept_schemas.input_schema(model)
    first["properties"] = {}
    assert kept_schemas.input_schema(model) == model.model_json_schema()


def test_an_input_model_validates_without_a_schema_built_beforehand() -> None:
    """Validators are built when a call is first validated (`defer_build`): a bad input is
    still refused and a good one accepted."""
    model = TodoWriteInput
    with pytest.raises(ValueError):
        model.model_validate({"todos": [{"content": "", "status": "pending"}]})
    assert model.model_validate({"todos": []}).todos == []


def _name(model: type[BaseModel]) -> str:
    return f"{model.__module__}.{model.__qualname__}"


def _sources_digest(root: Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    kept_schemas._digest_sources(str(root), digest.update)
    return digest.hexdigest()


def test_the_key_changes_with_any_source_file_and_only_with_source_files(tmp_path: Path) -> None:
    """The oracle: which files were touched. Any `.py` file, however deep, changes the key; byte
    code and other files do not."""
    root = tmp_path / "agentcli"
    (root / "tools" / "deep").mkdir(parents=True)
    (root / "__pycache__").mkdir()
    (root / "a.py").write_text("A = 1\n")
    (root / "tools" / "deep" / "b.py").write_text("B = 1\n")
    (root / "__pycache__" / "a.cpython-311.py").write_text("")
    first = _sources_digest(root)
    assert _sources_digest(root) == first  # stable
    (root / "__pycache__" / "a.cpython-311.py").write_text("changed")
    (root / "notes.txt").write_text("not a source")
    assert _sources_digest(root) == first
    (root / "tools" / "deep" / "b.py").write_text("B = 22\n")  # another size
    second = _sources_digest(root)
    assert second != first
    (root / "tools" / "c.py").write_text("")  # a new module
    assert _sources_digest(root) != second
