"""A subagent is journaled as a child task of its parent task (its messages, calls, usage and how
it ended), apart from the session's own history and totals; `sessions show` nests it under its
`agent` call; its writes are the parent task's changes (`changed_files`, undo, the acceptance
checks)."""

from __future__ import annotations

import io
from pathlib import Path

from agentcli.model import ModelRequest, ModelResponse
from agentcli.session import records
from agentcli.store import queries
from agentcli.store.db import connect
from agentcli.testing import respond, text, tool_use
from agentcli.ui.sessions import sessions_show
from tests.agents.conftest import agent_of, open_session, results
from tests.inprocess import decoded, run_in_process

EDIT = "new"


def writer(path: str) -> object:
    def answer(request: ModelRequest) -> ModelResponse:
        if agent_of(request):
            if not results(request):
                return respond(
                    text("writing"), tool_use("write_file", {"path": path, "content": "new\n"})
                )
            return respond(text(f"wrote {path}"))
        if not results(request):
            return respond(
                tool_use("agent", {"description": "write it", "prompt": f"write {path}"}, id="p1")
            )
        return respond(text("done"))

    return answer


async def test_a_child_task_is_recorded_under_its_parent(workspace: Path) -> None:
    live, _model = open_session(workspace, writer("out.txt"), permission_mode="accept-edits")  # type: ignore[arg-type]
    try:
        result = await live.run_task("delegate the write")
        totals = live.totals()
    finally:
        await live.close()
    conn = connect()
    (child,) = queries.load_child_tasks(conn, live.session_id)
    assert (child.parent_task_id, child.parent_call_id) == (result.task_id, "p1")
    assert (child.agent_type, child.description, child.prompt) == (
        "general",
        "write it",
        "write out.txt",
    )
    assert (child.state, child.reason, child.turns) == ("completed", "completed", 2)
    assert child.final_text == "wrote out.txt"
    assert child.cost_usd == result.subagents[0]["cost_usd"]
    assert child.usage.total_tokens == result.subagents[0]["usage"]["input_tokens"] + 40
    roles = [m["role"] for m in queries.child_message_rows(conn, child.id)]
    assert roles == ["user", "assistant", "user", "assistant"]
    calls = queries.load_calls(conn, live.session_id)
    assert {(c.name, c.task_id) for c in calls} == {
        ("agent", result.task_id),
        ("write_file", child.id),
    }
    # The session's own records: one task, its history, totals counted once.
    (row,) = queries.list_sessions(conn, str(workspace))
    assert (row.tasks, row.title, row.last_state) == (1, "delegate the write", "unverified")
    assert [m.role for m in live.messages] == ["user", "assistant", "user", "assistant"]
    assert totals.cost_usd == result.cost_usd and totals.usage == result.usage


async def test_sessions_show_nests_the_child_and_export_holds_it(workspace: Path) -> None:
    live, _model = open_session(workspace, writer("out.txt"), permission_mode="accept-edits")  # type: ignore[arg-type]
    try:
        await live.run_task("delegate the write")
    finally:
        await live.close()
    out = io.StringIO()
    sessions_show(live.session_id, out)
    lines = out.getvalue().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  -> agent "))
    assert lines[at + 1].startswith("     == subagent general ")
    assert "[completed (completed)] write it" in lines[at + 1]
    nested = lines[at + 2 : at + 7]
    assert nested[0] == "     user: write out.txt"
    assert any(line.startswith("       -> write_file ") for line in nested)
    exported = records.export(live.session_id)
    (child,) = exported["subagents"]
    assert child["agent_type"] == "general" and len(child["messages"]) == 4


async def test_a_childs_writes_are_the_parent_tasks_changes_and_undone_with_it(
    workspace: Path,
) -> None:
    (workspace / "out.txt").write_text("old\n")

    def answer(request: ModelRequest) -> ModelResponse:
        if agent_of(request):
            if not results(request):
                return respond(tool_use("read_file", {"path": "out.txt"}))
            if len(request.messages) == 3:
                return respond(
                    tool_use(
                        "edit_file", {"path": "out.txt", "old_string": "old", "new_string": "new"}
                    ),
                    tool_use("shell", {"command": "echo made > made.txt"}),
                )
            return respond(text("changed both"))
        if not results(request):
            return respond(tool_use("agent", {"description": "change", "prompt": "change"}))
        return respond(text("done"))

    live, _model = open_session(
        workspace, answer, permission_mode="yolo", accept=["grep -q new out.txt"]
    )
    try:
        result = await live.run_task("change things")
    finally:
        await live.close()
    # The checks ran on the final workspace, after the child's changes: they decide.
    assert result.state.value == "succeeded"
    assert result.changed_files == ["made.txt", "out.txt"]
    assert result.subagents[0]["changed_files"] == ["made.txt", "out.txt"]
    undone = decoded(run_in_process("undo", cwd=workspace))
    assert undone.returncode == 0, undone.stderr
    assert (workspace / "out.txt").read_text() == "old\n"
    assert not (workspace / "made.txt").exists()
