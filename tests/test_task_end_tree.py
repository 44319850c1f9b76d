"""A task's end is written as a git tree once: the undo checkpoint's end commit records the
tree of the end snapshot (the task's artifact version) instead of writing the working copy's
tree again, which on a large repository was half of the wait between the answer and the exit."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcli.checkpoints import REF_PREFIX, Checkpointer
from agentcli.conversation import ConversationManager
from agentcli.ids import new_id
from agentcli.owngit import OwnRepo, decide
from agentcli.permissions import NonInteractivePrompter, PermissionMode
from agentcli.permissions.basic import ModePolicy
from agentcli.store.db import connect
from agentcli.store.sqlite import SqliteJournal
from agentcli.testing import ScriptedModel, respond, text, tool_use
from agentcli.tools.base import ToolContext
from agentcli.tools.write_file import WriteFile
from tests.perf.test_start_snapshot import git_workspace


async def test_the_checkpoint_ends_on_the_end_snapshot_tree(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git_workspace(workspace)
    decision = decide(workspace)
    assert decision.repo is not None
    written: list[str] = []
    write_tree = OwnRepo.write_tree

    def counted(repo: OwnRepo) -> str:
        written.append(write_tree(repo))
        return written[-1]

    monkeypatch.setattr(OwnRepo, "write_tree", counted)
    manager = ConversationManager(
        model=ScriptedModel(
            [
                respond(tool_use("write_file", {"path": "new.txt", "content": "hi\n"})),
                respond(text("done")),
            ]
        ),
        tools=[WriteFile()],
        tool_context=ToolContext(workspace=workspace, data_dir=workspace.parent / "data"),
        policy=ModePolicy(mode=PermissionMode.YOLO),
        prompter=NonInteractivePrompter(),
        journal=SqliteJournal.create(new_id(), workspace=workspace, model="m"),
        system="sys",
        events=lambda _event: None,
        git=decision,
        checkpoints=Checkpointer(connect(), decision),
    )
    result = await manager.run_task("write new.txt")
    assert result.changed_files == ["new.txt"]
    # The start snapshot, the checkpoint before the write, the end snapshot: nothing more.
    assert len(written) == 3
    end = decision.repo.run("rev-parse", f"{REF_PREFIX}{result.task_id}^{{tree}}")
    assert f"git:{end.stdout.decode().strip()}" == result.artifact_version
