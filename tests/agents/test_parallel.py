"""Several `agent` calls in one response run at the same time, up to `[agents] max_concurrent`.
Overlap is proved by what the children wait for (each is held until the others are in flight),
never by timing."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

from agentcli.events import Event, ToolCallStarted
from agentcli.model import ModelRequest, ModelResponse
from agentcli.testing import fake_api, respond, text, tool_use
from agentcli.testing.fake_api import (
    FakeMessagesServer,
    FakeResponse,
    RecordedRequest,
    stream_message,
)
from tests.agents.conftest import agent_of, agent_of_body, open_session, results
from tests.inprocess import decoded, run_in_process

GUARD_S = 60
"""Bounds a wait that only a broken implementation would make long (never a timing claim)."""


def delegate(*ids: str) -> ModelResponse:
    return respond(
        *(
            tool_use("agent", {"description": f"job {i}", "prompt": f"do job {i}"}, id=i)
            for i in ids
        )
    )


async def test_children_of_one_response_run_together(workspace: Path) -> None:
    arrived: list[str] = []
    both = asyncio.Event()

    async def answer(request: ModelRequest) -> ModelResponse:
        if agent_of(request):
            arrived.append(str(request.messages[0].text))
            if len(arrived) == 2:
                both.set()
            # Each child's first request waits until the other's is in flight too: run one
            # after the other, the first would wait for ever (the guard ends the test).
            await asyncio.wait_for(both.wait(), GUARD_S)
            return respond(text(f"finished {request.messages[0].text}"))
        if not results(request):
            return delegate("a1", "a2")
        return respond(text("done"))

    live, _model = open_session(workspace, answer)
    try:
        result = await live.run_task("go")
    finally:
        await live.close()
    assert sorted(arrived) == ["do job a1", "do job a2"]
    assert [e["state"] for e in result.subagents] == ["completed", "completed"]
    assert result.state.value == "unverified" and result.reason.value == "completed"


async def test_no_more_than_max_concurrent_run_at_once(workspace: Path) -> None:
    config = workspace / ".agentcli" / "config.toml"
    config.parent.mkdir()
    config.write_text("[agents]\nmax_concurrent = 2\n")
    inflight = 0
    peak = 0
    release = asyncio.Event()
    calls_started: set[str] = set()
    all_asked = asyncio.Event()

    def sink(event: Event) -> None:
        if isinstance(event, ToolCallStarted) and event.name == "agent":
            calls_started.add(event.call_id)
            if len(calls_started) == 3:
                all_asked.set()

    async def answer(request: ModelRequest) -> ModelResponse:
        nonlocal inflight, peak
        if agent_of(request):
            inflight += 1
            peak = max(peak, inflight)
            await asyncio.wait_for(release.wait(), GUARD_S)
            inflight -= 1
            return respond(text("ok"))
        if not results(request):
            return delegate("b1", "b2", "b3")
        return respond(text("done"))

    live, _model = open_session(workspace, answer, sink=sink)

    async def hold_then_release() -> None:
        await asyncio.wait_for(all_asked.wait(), GUARD_S)
        # All three calls have started: an unlimited third child would reach the model within
        # a few turns of the event loop. Give it many, then let the held children go.
        for _ in range(200):
            await asyncio.sleep(0)
        release.set()

    try:
        releaser = asyncio.create_task(hold_then_release())
        result = await live.run_task("go")
        await releaser
    finally:
        await live.close()
    assert peak == 2
    assert [e["state"] for e in result.subagents] == ["completed"] * 3


def test_parallel_children_overlap_through_the_fake_api(workspace: Path) -> None:
    """End to end over HTTP: the fake Messages API answers each child's first request only
    once both are in the server at the same time."""
    barrier = threading.Barrier(2, timeout=GUARD_S)

    def route(request: RecordedRequest) -> FakeResponse | None:
        body = request.body
        agent = agent_of_body(body)
        messages = body["messages"]
        if agent is not None:
            if len(messages) == 1:
                barrier.wait()  # raises (and fails the run) unless the other child is here too
                prompt = messages[0]["content"]
                prompt = prompt if isinstance(prompt, str) else prompt[0]["text"]
                return stream_message([text(f"report for {prompt}")], model=body["model"])
            return None
        last = messages[-1]["content"]
        if isinstance(last, list) and any(b.get("type") == "tool_result" for b in last):
            return stream_message([text("done")], model=body["model"])
        return stream_message(
            [
                fake_api.tool_use("agent", {"description": "one", "prompt": "job one"}, id="x1"),
                fake_api.tool_use("agent", {"description": "two", "prompt": "job two"}, id="x2"),
            ],
            model=body["model"],
        )

    with FakeMessagesServer() as server:
        server.answer_by(route)
        done = decoded(
            run_in_process(
                *("run", "go", "--output-format", "json", "-m", "haiku"),
                cwd=workspace,
                env={"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test"},
            )
        )
        assert server.pairing_problems() == []
        children = [r for r in server.requests if agent_of_body(r.body)]
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert sorted(e["description"] for e in result["subagents"]) == ["one", "two"]
    assert len(children) == 2
    for request in children:  # nothing of the parent's conversation
        assert len(request.body["messages"]) == 1
        assert "go" not in json.dumps(request.body["messages"])
