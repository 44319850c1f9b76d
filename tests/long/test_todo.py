"""The todo list: `todo_write` with Claude Code's `TodoWrite` input, exactly; a bad list is a
tool error naming the problem; the list is shown (events, result), re-sent after a compaction,
and found again by a resumed session."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from agentcli.events import TodoUpdated
from agentcli.permissions import PermissionMode
from agentcli.store.db import connect
from agentcli.store.queries import latest_todos
from agentcli.testing import ScriptedModel, respond, text, tool_use
from agentcli.testing.fake_api import FakeMessagesServer, stream_message
from agentcli.todo import TodoBoard, TodoItem, TodoStatus, checklist
from agentcli.tools.todo_write import TodoWrite
from tests.inprocess import decoded, run_in_process
from tests.long.harness import conversation
from tests.long.scripts import Worker

SNAPSHOT = Path(__file__).parents[1] / "tools" / "snapshots" / "todo_write.json"
PLAN = [
    {"content": "Read the code", "status": "completed", "activeForm": "Reading the code"},
    {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
    {"content": "Run the tests", "status": "pending", "activeForm": "Running the tests"},
]


def test_the_schema_is_todowrites_and_matches_its_snapshot() -> None:
    spec = TodoWrite(TodoBoard()).spec()
    actual = json.dumps(spec.to_wire(), indent=2, sort_keys=True) + "\n"
    if os.environ.get("AGENTCLI_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(actual)
    assert actual == SNAPSHOT.read_text()
    schema = spec.input_schema
    assert schema["required"] == ["todos"] and schema["additionalProperties"] is False
    item = schema["$defs"]["TodoEntry"]
    assert set(item["properties"]) == {"content", "status", "activeForm"}
    assert set(item["required"]) == {"content", "status", "activeForm"}
    assert item["properties"]["status"]["enum"] == ["pending", "in_progress", "completed"]
    assert item["additionalProperties"] is False


async def run_calls(workspace: Path, *inputs: dict[str, Any]) -> tuple[Any, Any]:
    steps = [respond(tool_use("todo_write", given, id=f"c{n}")) for n, given in enumerate(inputs)]
    model = ScriptedModel([*steps, respond(text("done"))])
    talk = conversation(workspace, model)
    result = await talk.manager.run_task("plan it")
    return talk, result


async def test_a_list_replaces_the_whole_list_and_is_said_saved(workspace: Path) -> None:
    first = {"todos": PLAN}
    second = {"todos": [dict(PLAN[2], status="in_progress")]}
    talk, result = await run_calls(workspace, first, second)
    assert [c["status"] for c in result.tool_calls] == ["succeeded", "succeeded"]
    results = [m.tool_results[0].content for m in talk.manager.messages if m.tool_results]
    assert results[0] == (
        "The todo list was saved (1/3 done · now: Fixing the bug). Keep it current as you work."
    )
    assert result.todos == second["todos"]
    assert [e.todos for e in talk.of(TodoUpdated)] == [PLAN, second["todos"]]
    assert talk.board.items == (
        TodoItem(
            content="Run the tests", status=TodoStatus.IN_PROGRESS, active_form="Running the tests"
        ),
    )


@pytest.mark.parametrize(
    ("todos", "problem"),
    [
        (
            [dict(PLAN[1]), dict(PLAN[2], status="in_progress")],
            "the list was not saved: 2 items are in_progress (items 1, 2); at most one may be",
        ),
        (
            [{"content": "x", "status": "done", "activeForm": "x-ing"}],
            "field 'todos.0.status': Input should be 'pending', 'in_progress' or 'completed'",
        ),
        (
            [{"content": "x", "status": "pending"}],
            "missing required field 'todos.0.activeForm'",
        ),
        (
            [{"content": "", "status": "pending", "activeForm": "x"}],
            "field 'todos.0.content': String should have at least 1 character",
        ),
        (
            [{"content": "x", "status": "pending", "activeForm": "x", "priority": "high"}],
            "unknown field 'todos.0.priority'",
        ),
    ],
)
async def test_a_bad_list_is_a_tool_error_naming_the_problem_and_changes_nothing(
    workspace: Path, todos: list[dict[str, str]], problem: str
) -> None:
    talk, result = await run_calls(workspace, {"todos": PLAN}, {"todos": todos})
    (call_ok, call_bad) = result.tool_calls
    assert call_ok["status"] == "succeeded"
    assert call_bad["status"] == "failed" and call_bad["is_error"]
    error = [m.tool_results[0] for m in talk.manager.messages if m.tool_results][1]
    assert error.is_error
    assert problem in error.content
    assert result.todos == PLAN  # the earlier list stands
    assert len(talk.of(TodoUpdated)) == 1


async def test_the_list_is_pinned_after_a_compaction(workspace: Path) -> None:
    worker = Worker(turns=40)
    talk = conversation(workspace, worker.model())
    talk.board.replace([TodoItem.from_json(item) for item in PLAN if TodoItem.from_json(item)])  # type: ignore[misc]
    await talk.manager.run_task("read every file")
    after = next(r for r in worker.requests if "<summary>" in r.messages[0].text)
    assert (
        '<pinned kind="todo" title="Your todo list, as todo_write last saved it">\n'
        "1. [completed] Read the code\n2. [in_progress] Fix the bug\n3. [pending] Run the tests\n"
        "</pinned>"
    ) in after.messages[0].text


def test_the_checklist_shows_the_active_form_of_the_item_in_progress() -> None:
    items = [i for i in map(TodoItem.from_json, PLAN) if i is not None]
    assert checklist(items) == "☒ Read the code\n▶ Fixing the bug\n☐ Run the tests"


def test_todo_write_runs_in_every_mode_but_a_deny_rule_refuses_it(workspace: Path) -> None:
    from agentcli.permissions.policy import RulePolicy
    from agentcli.permissions.rules import RuleKind
    from agentcli.vocabulary import Decision, Risk

    tool = TodoWrite(TodoBoard())
    for mode in PermissionMode:
        policy = RulePolicy(mode=mode)
        target = tool.permission_target(tool.input_model.model_validate({"todos": []}), None)  # type: ignore[arg-type]
        assert policy.decide(Risk.READ, target).decision is Decision.ALLOW
    policy = RulePolicy(mode=PermissionMode.DEFAULT)
    policy.add_rule(RuleKind.DENY, "todo_write")
    assert policy.decide(Risk.READ, target).decision is Decision.DENY


# -- through the command line: journaled, resumed, shown ------------------------------------
def run(server: FakeMessagesServer, workspace: Path, *args: str) -> Any:
    env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test"}
    return decoded(run_in_process("run", "-C", str(workspace), *args, cwd=workspace, env=env))


def test_stream_json_text_progress_and_resume_see_the_list(workspace: Path) -> None:
    with FakeMessagesServer() as server:
        server.push(
            stream_message([tool_use("todo_write", {"todos": PLAN})]),
            stream_message([text("planned")]),
        )
        done = run(server, workspace, "plan it", "--output-format", "stream-json")
        assert done.returncode == 0, done.stderr
        events = [json.loads(line) for line in done.stdout.splitlines()]
        assert "todo_write" in events[0]["tools"]
        (updated,) = [e for e in events if e["type"] == "todo_updated"]
        assert updated["todos"] == PLAN
        assert events[-1]["todos"] == PLAN
        session = events[-1]["session_id"]
        assert latest_todos(connect(), session) == tuple(
            i for i in map(TodoItem.from_json, PLAN) if i is not None
        )
        # Resumed: the list is there (in the next task's result) without a new todo_write.
        server.push(stream_message([text("still planned")]))
        again = run(server, workspace, "--resume", session, "go on", "--output-format", "json")
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["todos"] == PLAN
        # Text progress: one line per change, on stderr.
        server.push(
            stream_message(
                [tool_use("todo_write", {"todos": [dict(PLAN[2], status="completed")]})]
            ),
            stream_message([text("all done")]),
        )
        text_run = run(server, workspace, "--resume", session, "finish")
        assert text_run.returncode == 0, text_run.stderr
        assert "todo 1/1 done\n" in text_run.stderr
        assert text_run.stdout == "all done\n"


def test_tools_todo_false_leaves_the_tool_out(workspace: Path) -> None:
    (workspace / ".agentcli").mkdir()
    (workspace / ".agentcli" / "config.toml").write_text("[tools]\ntodo = false\n")
    with FakeMessagesServer() as server:
        server.push(stream_message([text("hi")]))
        done = run(server, workspace, "hi", "--output-format", "stream-json")
        assert done.returncode == 0, done.stderr
        events = [json.loads(line) for line in done.stdout.splitlines()]
        assert "todo_write" not in events[0]["tools"]
        assert "todo_write" not in json.dumps(server.requests[0].body["tools"])
        assert events[-1]["todos"] == []


async def test_a_conversation_built_with_the_tool_alone_keeps_its_list(workspace: Path) -> None:
    from agentcli.conversation import ConversationManager
    from agentcli.permissions import NonInteractivePrompter
    from agentcli.permissions.basic import ModePolicy
    from agentcli.store import MemoryJournal
    from agentcli.tools.base import ToolContext

    events: list[Any] = []
    model = ScriptedModel([respond(tool_use("todo_write", {"todos": PLAN})), respond(text("ok"))])
    manager = ConversationManager(
        model=model,
        tools=[TodoWrite()],
        tool_context=ToolContext(workspace=workspace, data_dir=workspace.parent / "data"),
        policy=ModePolicy(),
        prompter=NonInteractivePrompter(),
        journal=MemoryJournal(),
        system="sys",
        events=events.append,
    )
    result = await manager.run_task("plan")
    assert result.todos == PLAN
    assert [e.todos for e in events if isinstance(e, TodoUpdated)] == [PLAN]
    assert [item.to_json() for item in manager.todos] == PLAN
