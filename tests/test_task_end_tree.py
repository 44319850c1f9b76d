"""Each state of the working copy is written as a git tree once: the undo checkpoint's end
commit records the tree of the end snapshot (the task's artifact version), which on a large
repository was half of the wait between the answer and the exit; the listing before a task's
first command is the start checkpoint's tree, written just before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
from agentcli.tools.shell import Shell
from agentcli.tools.write_file import WriteFile
from tests.perf.test_start_snapshot import git_workspace


@pytest.mark.parametrize(
    ("call", "trees"),
    [
        # The start snapshot, the checkpoint before the write, the end snapshot.
        (tool_use("write_file", {"path": "new.txt", "content": "hi\n"}), 3),
        # The same, and the listing after the command (the one before it is the checkpoint's).
        (tool_use("shell", {"command": "echo hi > new.txt"}), 4),
    ],
    ids=["write_file", "shell"],
)
async def test_each_state_is_written_once(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, call: dict[str, Any], trees: int
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
                respond(call),
                respond(text("done")),
            ]
        ),
        tools=[WriteFile(), Shell()],
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
    assert len(written) == trees
    end = decision.repo.run("rev-parse", f"{REF_PREFIX}{result.task_id}^{{tree}}")
    assert f"git:{end.stdout.decode().strip()}" == result.artifact_version
