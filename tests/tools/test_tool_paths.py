"""Workspace confinement: `..`, absolute paths outside and symlinks that resolve outside are
`permission_denied`, on the resolved real path, for every file tool."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcli.call_records import CallStatus
from agentcli.errors import ToolError, ToolErrorKind
from agentcli.tools.paths import display_path, resolve_confined


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A workspace with a subdirectory, a symlink inside and one to outside, and an outside dir."""
    base = tmp_path_factory.mktemp("confine")
    workspace, outside = base / "ws", base / "outside"
    (workspace / "a" / "b").mkdir(parents=True)
    outside.mkdir()
    (workspace / "a" / "file.txt").write_text("in\n")
    (outside / "secret.txt").write_text("out\n")
    (workspace / "in_link").symlink_to(workspace / "a")
    (workspace / "out_link").symlink_to(outside)
    (workspace / "a" / "secret_link.txt").symlink_to(outside / "secret.txt")
    return workspace, outside


components = st.lists(
    st.sampled_from(["a", "b", "..", ".", "in_link", "out_link", "file.txt", "new", "ws"]),
    min_size=1,
    max_size=7,
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=components, absolute=st.booleans())
def test_a_path_is_allowed_exactly_when_its_real_path_is_inside(
    tree: tuple[Path, Path], parts: list[str], absolute: bool
) -> None:
    workspace, _ = tree
    raw = "/".join(parts)
    if absolute:
        raw = str(workspace.parent / raw)
    # Oracle, independent of the implementation: walk the components one by one, following
    # symlinks with the OS.
    current = workspace.parent if absolute else workspace
    for part in parts:
        current = Path(os.path.realpath(current / part))
    inside = current == workspace or workspace in current.parents
    try:
        resolved = resolve_confined(raw, workspace)
    except ToolError as exc:
        assert exc.kind is ToolErrorKind.PERMISSION_DENIED
        assert not inside, f"{raw} is inside but was refused"
        return
    assert inside, f"{raw} resolves to {resolved}, outside, but was allowed"
    assert resolved == current


def test_examples(tree: tuple[Path, Path]) -> None:
    workspace, outside = tree
    assert resolve_confined("a/file.txt", workspace) == workspace / "a" / "file.txt"
    assert resolve_confined("in_link/file.txt", workspace) == workspace / "a" / "file.txt"
    assert resolve_confined(str(workspace / "a"), workspace) == workspace / "a"
    for bad in ("../outside/secret.txt", str(outside), "out_link/secret.txt", "a/secret_link.txt"):
        with pytest.raises(ToolError) as info:
            resolve_confined(bad, workspace)
        assert info.value.kind is ToolErrorKind.PERMISSION_DENIED
        assert "outside the workspace" in info.value.message
    assert resolve_confined("../outside/secret.txt", workspace, [outside]) == outside / "secret.txt"
    with pytest.raises(ToolError) as info:
        resolve_confined("a/\x00", workspace)
    assert info.value.kind is ToolErrorKind.INVALID_ARGUMENTS
    assert display_path(workspace / "a" / "file.txt", workspace) == "a/file.txt"
    assert display_path(outside, workspace) == str(outside)


FILE_CALLS = [
    ("read_file", {"path": "{p}"}),
    ("write_file", {"path": "{p}", "content": "x"}),
    ("edit_file", {"path": "{p}", "old_string": "out", "new_string": "pwned"}),
    ("glob", {"pattern": "*", "path": "{p}"}),
    ("grep", {"pattern": "out", "path": "{p}"}),
]


@pytest.mark.parametrize(("name", "template"), FILE_CALLS)
@pytest.mark.parametrize("where", ["../outside", "/outside", "out_link"])
async def test_every_file_tool_refuses_paths_outside(
    harness: Any, workspace: Path, name: str, template: dict[str, str], where: str
) -> None:
    outside = workspace.parent / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "secret.txt").write_text("out\n")
    if not (workspace / "out_link").exists():
        (workspace / "out_link").symlink_to(outside)
    target = {"../outside": "../outside", "/outside": str(outside), "out_link": "out_link"}[where]
    if name in ("read_file", "write_file", "edit_file"):
        target += "/secret.txt"
    args = {k: v.replace("{p}", target) for k, v in template.items()}
    record = await harness.call(name, **args)
    assert record.status is CallStatus.DENIED, record.result_text
    assert record.error_kind is ToolErrorKind.PERMISSION_DENIED
    assert (outside / "secret.txt").read_text() == "out\n"
