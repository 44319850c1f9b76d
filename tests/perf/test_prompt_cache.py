"""Prompt caching: every request carries its breakpoints where intended, and never more than the
API's limit of 4 — on tool-result turns, pause_turn continuations and resumed sessions alike.

Intended: the last tool definition, the system prompt, and the last block of the latest user
turn. A request with a breakpoint too many is rejected by the API (400), so this is a
correctness property as much as a cost one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcli.conversation import ConversationManager
from agentcli.messages import Message, ToolResultBlock, block_from_wire
from agentcli.model import ModelClient, ModelRequest, ToolSpec
from agentcli.model.anthropic import AnthropicModel, build_request_params
from agentcli.model.http import HttpAnthropicModel
from agentcli.permissions import NonInteractivePrompter, PermissionMode
from agentcli.permissions.basic import ModePolicy
from agentcli.store import MemoryJournal
from agentcli.testing import respond, text, tool_use
from agentcli.testing.fake_api import FakeMessagesServer, raw_sse, stream_message
from agentcli.tools.base import ToolContext
from agentcli.tools.builtin import builtin_tools

API_LIMIT = 4
TOOLS = [
    ToolSpec(name="read_file", description="r", input_schema={"type": "object"}),
    ToolSpec(name="shell", description="s", input_schema={"type": "object"}),
]


def breakpoints(body: dict[str, Any]) -> list[str]:
    """Where a request body carries `cache_control`, as readable positions."""
    found = [f"system[{i}]" for i, b in enumerate(body.get("system", [])) if "cache_control" in b]
    found += [f"tools[{b['name']}]" for b in body.get("tools", []) if "cache_control" in b]
    for index, message in enumerate(body["messages"]):
        content = message["content"]
        if isinstance(content, list):
            found += [
                f"messages[{index}].{message['role']}[{position}]"
                for position, block in enumerate(content)
                if "cache_control" in block
            ]
    return found


def params(messages: list[Message]) -> dict[str, Any]:
    request = ModelRequest(system="sys", messages=messages, tools=TOOLS)
    return build_request_params("claude-sonnet-4-5", request)


def test_a_new_task_marks_tools_system_and_the_task() -> None:
    body = params([Message.user("fix the bug")])
    assert breakpoints(body) == ["system[0]", "tools[shell]", "messages[0].user[0]"]


def test_a_tool_result_turn_marks_its_last_block_only() -> None:
    call = respond(text("looking"), tool_use("read_file", {"path": "a"}, id="t1")).message
    results = Message(
        role="user",
        content=(
            ToolResultBlock(tool_use_id="t1", content="1\tx"),
            block_from_wire({"type": "text", "text": "a nudge"}),
        ),
    )
    body = params([Message.user("task"), call, results])
    assert breakpoints(body) == ["system[0]", "tools[shell]", "messages[2].user[1]"]


def test_a_paused_turn_keeps_the_breakpoint_on_the_latest_user_turn() -> None:
    paused = Message(
        role="assistant",
        content=(
            block_from_wire({"type": "text", "text": "searching"}),
            block_from_wire({"type": "server_tool_use", "id": "s1", "name": "web_search"}),
        ),
    )
    body = params([Message.user("search"), paused])
    assert breakpoints(body) == ["system[0]", "tools[shell]", "messages[0].user[0]"]


def test_breakpoints_in_the_history_are_dropped_not_added_to() -> None:
    """An imported or hand-edited history may carry `cache_control`; sending it on would
    exceed the limit."""
    marked = {"cache_control": {"type": "ephemeral"}}
    history = [
        Message(role="user", content=(block_from_wire({"type": "text", "text": "a", **marked}),)),
        Message(
            role="assistant", content=(block_from_wire({"type": "text", "text": "b", **marked}),)
        ),
        Message(role="user", content=(block_from_wire({"type": "text", "text": "c", **marked}),)),
        Message(
            role="assistant", content=(block_from_wire({"type": "text", "text": "d", **marked}),)
        ),
        Message.user("e"),
    ]
    body = params(history)
    assert breakpoints(body) == ["system[0]", "tools[shell]", "messages[4].user[0]"]
    assert "cache_control" in history[0].to_wire()["content"][0]  # the history is untouched


def test_a_resumed_session_sends_the_same_breakpoints(workspace: Path) -> None:
    from agentcli.session.opening import find_resumed, open_session
    from agentcli.store.sqlite import SqliteJournal

    journal = SqliteJournal.create("CACHE-RESUME", workspace=workspace, model="m")
    journal.task_started("T1", "task")
    sent = [
        Message.user("task"),
        respond(tool_use("read_file", {"path": "a"}, id="t1")).message,
        Message(role="user", content=(ToolResultBlock(tool_use_id="t1", content="x"),)),
        respond(text("done")).message,
    ]
    for message in sent:
        journal.message_appended(message)
    journal.conn.close()
    opened = open_session(
        find_resumed("CACHE-RESUME", False, workspace), workspace=workspace, model="m"
    )
    body = params([*opened.messages, Message.user("and now the tests")])
    assert breakpoints(body) == ["system[0]", "tools[shell]", "messages[4].user[0]"]
    opened.journal.conn.close()


@pytest.fixture
def server() -> Iterator[FakeMessagesServer]:
    with FakeMessagesServer() as fake:
        yield fake


@pytest.fixture(params=[HttpAnthropicModel, AnthropicModel], ids=["http", "sdk"])
async def model(
    server: FakeMessagesServer, request: pytest.FixtureRequest
) -> AsyncIterator[HttpAnthropicModel | AnthropicModel]:
    client = request.param("claude-sonnet-4-5", api_key="test", base_url=server.base_url)
    yield client
    await client.aclose()


async def test_every_request_of_real_tasks_stays_within_the_limit(
    server: FakeMessagesServer, model: ModelClient, workspace: Path, recordings: Path
) -> None:
    """Two tasks through each transport: a tool call, a recorded pause_turn and its continuation, an
    answer; then a follow-up task on the same history."""
    (workspace / "a.py").write_text("x = 1\n")
    paused = (recordings / "12a_pai_stream_pause_turn_web_search.interaction0.sse").read_text()
    server.push(
        stream_message([tool_use("read_file", {"path": "a.py"})]),
        raw_sse(paused),
        stream_message([text("found it")]),
        stream_message([text("and the follow-up")]),
    )
    manager = ConversationManager(
        model=model,
        tools=builtin_tools(),
        tool_context=ToolContext(workspace=workspace, data_dir=workspace.parent / "data"),
        policy=ModePolicy(mode=PermissionMode.DEFAULT),
        prompter=NonInteractivePrompter(),
        journal=MemoryJournal(),
        system="sys",
        events=lambda _event: None,
    )
    first = await manager.run_task("look at a.py and search the web")
    second = await manager.run_task("one more thing")
    assert (first.turns, second.turns) == (3, 1)
    assert server.pairing_problems() == []
    for request in server.requests:
        marks = breakpoints(request.body)
        assert len(marks) <= API_LIMIT, marks
        last_user = max(i for i, m in enumerate(request.body["messages"]) if m["role"] == "user")
        assert marks[:2] == ["system[0]", "tools[shell]"]
        assert marks[2:] == [
            f"messages[{last_user}].user[{len(request.body['messages'][last_user]['content']) - 1}]"
        ]
    continuation = server.requests[2].body["messages"]
    assert continuation[-1]["role"] == "assistant"  # the paused turn, sent back to continue
