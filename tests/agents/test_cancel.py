"""Cancelling the task (Esc, Ctrl-C, SIGTERM, a timeout) cancels every subagent, and their
subagents, with their commands, before the task reports its end: no command a child started is
left running, every call of every child has its final record, and nothing more is spent."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from agentcli.call_records import CallStatus
from agentcli.model import ModelRequest, ModelResponse
from agentcli.paths import user_config_path
from agentcli.store import queries
from agentcli.store.db import connect
from agentcli.testing import respond, text, tool_use
from agentcli.tools.process_group import group_alive
from tests.agents.conftest import agent_of, open_session, results

GUARD_S = 60
SLEEPER = "echo $$ > {name}.pgid; sleep 60"


async def wait_for_file(path: Path) -> int:
    deadline = time.monotonic() + GUARD_S  # bounds a hang: a loaded machine starts shells slowly
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


def gone(pgid: int) -> bool:
    deadline = time.monotonic() + GUARD_S
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not group_alive(pgid)


async def test_cancel_stops_every_child_and_its_command(workspace: Path) -> None:
    asked_after_cancel: list[str] = []
    cancelled = False

    def answer(request: ModelRequest) -> ModelResponse:
        if cancelled:
            asked_after_cancel.append(str(request.messages[0].text))
        job = str(request.messages[0].text)
        if agent_of(request):
            name = job.split()[-1]
            return respond(tool_use("shell", {"command": SLEEPER.format(name=name)}))
        if not results(request):
            return respond(
                tool_use("agent", {"description": "one", "prompt": "sleep in one"}, id="a1"),
                tool_use("agent", {"description": "two", "prompt": "sleep in two"}, id="a2"),
            )
        return respond(text("done"))

    live, _model = open_session(workspace, answer, permission_mode="yolo")
    try:
        task = asyncio.create_task(live.run_task("go"))
        pgids = [await wait_for_file(workspace / f"{n}.pgid") for n in ("one", "two")]
        assert all(group_alive(pgid) for pgid in pgids)
        cancelled = True
        task.cancel()  # what Ctrl-C, Esc and SIGTERM do to the running task
        result = await task
    finally:
        await live.close()
    assert result.reason.value == "aborted"
    # Before the task reported its end, every child's command was stopped.
    assert all(gone(pgid) for pgid in pgids)
    assert asked_after_cancel == []
    assert sorted((e["description"], e["state"]) for e in result.subagents) == [
        ("one", "aborted"),
        ("two", "aborted"),
    ]
    conn = connect()
    calls = queries.load_calls(conn, live.session_id)
    assert {c.name: c.status for c in calls if c.name == "shell"} == {
        "shell": CallStatus.OUTCOME_UNKNOWN
    }
    assert not {CallStatus.PROPOSED, CallStatus.STARTED} & {c.status for c in calls}
    children = queries.load_child_tasks(conn, live.session_id)
    assert [c.state for c in children] == ["aborted", "aborted"]
    assert all(c.ended_at is not None for c in children)


async def test_the_tasks_time_limit_stops_its_children(workspace: Path) -> None:
    """`--timeout` cancels the task's calls, the subagents' too (here blocked on their model,
    which never answers): they end aborted, and the task ends with `timeout`."""
    never = asyncio.Event()
    child_calls = 0

    async def answer(request: ModelRequest) -> ModelResponse:
        nonlocal child_calls
        if agent_of(request):
            child_calls += 1
            await never.wait()
        if not results(request):
            return respond(
                tool_use("agent", {"description": "one", "prompt": "p1"}),
                tool_use("agent", {"description": "two", "prompt": "p2"}),
            )
        return respond(text("done"))

    live, _model = open_session(workspace, answer, timeout=0.5)
    try:
        result = await live.run_task("go")
    finally:
        await live.close()
    assert (result.reason.value, result.exit_code) == ("timeout", 3)
    assert child_calls == 2
    assert sorted((e["description"], e["state"]) for e in result.subagents) == [
        ("one", "aborted"),
        ("two", "aborted"),
    ]


async def test_cancel_reaches_a_subagents_own_subagent(workspace: Path) -> None:
    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[agents]\nmax_depth = 2\n")

    def answer(request: ModelRequest) -> ModelResponse:
        job = str(request.messages[0].text)
        if job == "deepest":
            return respond(tool_use("shell", {"command": SLEEPER.format(name="deep")}))
        if results(request):
            return respond(text("done"))
        nxt = {"go": "middle", "middle": "deepest"}[job]
        return respond(tool_use("agent", {"description": nxt, "prompt": nxt}))

    live, _model = open_session(workspace, answer, permission_mode="yolo")
    try:
        task = asyncio.create_task(live.run_task("go"))
        pgid = await wait_for_file(workspace / "deep.pgid")
        task.cancel()
        result = await task
    finally:
        await live.close()
    assert result.reason.value == "aborted"
    assert gone(pgid)
    children = queries.load_child_tasks(connect(), live.session_id)
    assert sorted((c.description, c.state) for c in children) == [
        ("deepest", "aborted"),
        ("middle", "aborted"),
    ]
