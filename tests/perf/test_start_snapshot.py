"""The start snapshot is taken while the first request is on its way (not before it), yet it
still precedes every change a tool makes: the loop gets the first response only once the
snapshot is done."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agentcli.conversation import ConversationManager
from agentcli.events import Event
from agentcli.model import ModelRequest, ModelResponse
from agentcli.permissions import NonInteractivePrompter, PermissionMode
from agentcli.permissions.basic import ModePolicy
from agentcli.store import MemoryJournal
from agentcli.testing import FunctionModel, respond, text, tool_use
from agentcli.tools.base import ToolContext
from agentcli.tools.write_file import WriteFile


def git_workspace(path: Path) -> Path:
    for args in (["init", "-q"], ["config", "user.email", "t@e"], ["config", "user.name", "t"]):
        subprocess.run(["git", *args], cwd=path, check=True)
    (path / "old.txt").write_text("old\n")
    subprocess.run(["git", "add", "-A"], cwd=path, check=True)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=path, check=True)
    return path


@pytest.mark.parametrize("in_git", [True, False], ids=["git", "plain"])
async def test_a_write_in_the_first_response_counts_as_a_change(
    workspace: Path, in_git: bool
) -> None:
    if in_git:
        git_workspace(workspace)
    events: list[Event] = []

    def script(request: ModelRequest) -> ModelResponse:
        # Answers at once, so without the hold the write would race the snapshot thread.
        if request.messages[-1].text.startswith("write"):
            return respond(tool_use("write_file", {"path": "new.txt", "content": "hi\n"}))
        return respond(text("done"))

    manager = ConversationManager(
        model=FunctionModel(script),
        tools=[WriteFile()],
        tool_context=ToolContext(workspace=workspace, data_dir=workspace.parent / "data"),
        policy=ModePolicy(mode=PermissionMode.YOLO),
        prompter=NonInteractivePrompter(),
        journal=MemoryJournal(),
        system="sys",
        events=events.append,
    )
    for round_ in range(3):
        target = workspace / "new.txt"
        target.unlink(missing_ok=True)
        result = await manager.run_task(f"write new.txt ({round_})")
        assert result.changed_files == ["new.txt"], result
        assert result.artifact_version is not None
        assert result.artifact_version.startswith("git:" if in_git else "files:")
