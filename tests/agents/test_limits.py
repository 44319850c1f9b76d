"""Every limit stops a subagent, and the subagent hands back what it has with the reason, as the
`agent` call's result (never an error of its parent): its own turns, cost and time, the depth
of delegation, and its parent task's budget, which counts what the children spend as they
spend it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentcli.catalogue import CATALOGUE
from agentcli.messages import ToolResultBlock
from agentcli.model import ModelRequest, ModelResponse
from agentcli.paths import user_config_path
from agentcli.testing import respond, text, tool_use
from agentcli.usage import Usage, cost_usd
from tests.agents.conftest import MODEL, agent_of, definition, open_session, results

USAGE = Usage(input_tokens=1000, output_tokens=100)
STEP = cost_usd(CATALOGUE.lookup(MODEL).price, USAGE)
assert STEP is not None


def config(workspace: Path, text_: str) -> None:
    """The user's own config (a repository's may only lower the limits)."""
    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text_)


def busy_child(request: ModelRequest) -> ModelResponse:
    """A child that never stops working on its own."""
    n = len(request.messages)
    call = tool_use("glob", {"pattern": f"*{n}*"})  # a new call each time: progress, as far
    return respond(text(f"still looking ({n})"), call, usage=USAGE)  # as the guard can tell


def parent_then_done(request: ModelRequest, agent_input: dict[str, object]) -> ModelResponse:
    if not results(request):
        return respond(tool_use("agent", agent_input, id="p1"), usage=USAGE)
    return respond(text("done"), usage=USAGE)


def answer_of(request: ModelRequest) -> ToolResultBlock:
    (block,) = [b for b in results(request) if b.tool_use_id == "p1"]
    return block


async def run(workspace: Path, answer, **options: object):  # type: ignore[no-untyped-def]
    seen: list[ModelRequest] = []

    async def recording(request: ModelRequest) -> ModelResponse:
        seen.append(request)
        got = answer(request)
        return await got if asyncio.iscoroutine(got) else got

    live, _model = open_session(workspace, recording, **options)
    try:
        result = await live.run_task("go")
    finally:
        await live.close()
    return result, seen


async def test_max_turns_stops_a_child_which_hands_back_what_it_has(workspace: Path) -> None:
    config(workspace, "[agents]\nmax_turns = 3\n")

    def answer(request: ModelRequest) -> ModelResponse:
        if agent_of(request):
            return busy_child(request)
        return parent_then_done(request, {"description": "d", "prompt": "find it"})

    result, seen = await run(workspace, answer)
    children = [r for r in seen if agent_of(r)]
    assert len(children) == 3
    parent_last = [r for r in seen if not agent_of(r)][-1]
    block = answer_of(parent_last)
    assert block.content.startswith(
        "still looking (5)\n\n[subagent general stopped: max_turns (reached its limit of 3 turns)"
    )
    assert block.is_error  # the model must notice it did not finish; the parent goes on
    assert result.reason.value == "completed" and result.final_text == "done"
    (entry,) = result.subagents
    assert (entry["state"], entry["terminal_reason"], entry["turns"]) == (
        "budget_exhausted",
        "max_turns",
        3,
    )


async def test_a_definitions_max_turns_lowers_the_limit_never_raises_it(workspace: Path) -> None:
    config(workspace, "[agents]\nmax_turns = 4\n")
    definition(workspace, "quick", "description: quick one\nmaxTurns: 2")
    definition(workspace, "greedy", "description: greedy one\nmaxTurns: 50")
    turns: dict[str, int] = {}

    def answer(request: ModelRequest) -> ModelResponse:
        agent = agent_of(request)
        if agent:
            turns[agent] = turns.get(agent, 0) + 1
            return busy_child(request)
        if not results(request):
            return respond(
                tool_use("agent", {"description": "q", "prompt": "p", "subagent_type": "quick"}),
                tool_use("agent", {"description": "g", "prompt": "p", "subagent_type": "greedy"}),
            )
        return respond(text("done"))

    result, _seen = await run(workspace, answer)
    assert turns == {"quick": 2, "greedy": 4}
    assert {e["type"]: e["terminal_reason"] for e in result.subagents} == {
        "quick": "max_turns",
        "greedy": "max_turns",
    }


async def test_max_cost_stops_a_child(workspace: Path) -> None:
    config(workspace, f"[agents]\nmax_cost_usd = {STEP * 2.5}\n")

    def answer(request: ModelRequest) -> ModelResponse:
        if agent_of(request):
            return busy_child(request)
        return parent_then_done(request, {"description": "d", "prompt": "p"})

    result, seen = await run(workspace, answer)
    assert len([r for r in seen if agent_of(r)]) == 3  # checked before each call: 3 × STEP > 2.5
    (entry,) = result.subagents
    assert entry["terminal_reason"] == "budget_exceeded"
    content = answer_of(seen[-1]).content
    assert "[subagent general stopped: budget_exceeded (spent $" in content
    assert f"of its limit of ${STEP * 2.5:g})" in content


async def test_max_wall_stops_a_child_blocked_on_its_model(workspace: Path) -> None:
    config(workspace, "[agents]\nmax_wall_s = 0.2\n")
    never = asyncio.Event()

    async def answer(request: ModelRequest) -> ModelResponse:
        if agent_of(request):
            if len(request.messages) == 1:
                return respond(text("started"), tool_use("glob", {"pattern": "*"}))
            await never.wait()  # blocked until the child's time limit ends it
        return parent_then_done(request, {"description": "d", "prompt": "p"})

    result, seen = await run(workspace, answer)
    (entry,) = result.subagents
    assert (entry["state"], entry["terminal_reason"]) == ("budget_exhausted", "timeout")
    content = answer_of(seen[-1]).content
    assert content.startswith(
        "started\n\n[subagent general stopped: timeout (its time limit of 0.2s ran out)"
    )
    assert result.final_text == "done"


@pytest.mark.parametrize("depth", [0, 1, 2])
async def test_the_depth_limit(workspace: Path, depth: int) -> None:
    config(workspace, f"[agents]\nmax_depth = {depth}\n")
    offered: dict[str, list[str]] = {}

    def answer(request: ModelRequest) -> ModelResponse:
        level = request.messages[0].text
        offered.setdefault(str(level), [t.name for t in request.tools])
        if "agent" in offered[str(level)] and not results(request):
            return respond(tool_use("agent", {"description": "d", "prompt": f"{level}+"}))
        return respond(text(f"done at {level}"))

    result, _seen = await run(workspace, answer)
    with_agent = {level for level, tools in offered.items() if "agent" in tools}
    assert len(offered) == depth + 1  # the user's task, then one level per allowed depth
    assert len(with_agent) == depth  # the deepest level never gets the tool
    assert result.reason.value == "completed"
    assert len(result.subagents) == min(depth, 1)  # the task's own; deeper ones are theirs


async def test_the_agent_tool_refuses_beyond_the_depth_even_if_asked(workspace: Path) -> None:
    """A subagent that names the tool it was not given gets `unknown_tool`, never a child."""
    calls = 0

    def answer(request: ModelRequest) -> ModelResponse:
        nonlocal calls
        if agent_of(request):
            if not results(request):
                return respond(tool_use("agent", {"description": "deeper", "prompt": "p"}))
            return respond(text(results(request)[0].content))
        calls += 1
        return parent_then_done(request, {"description": "d", "prompt": "p"})

    result, seen = await run(workspace, answer)
    assert calls == 2 and len(result.subagents) == 1
    assert "[unknown_tool] there is no tool named 'agent'" in answer_of(seen[-1]).content


async def test_the_parents_max_turns_counts_the_childrens_turns(workspace: Path) -> None:
    def answer(request: ModelRequest) -> ModelResponse:
        if agent_of(request):
            return busy_child(request)
        return parent_then_done(request, {"description": "d", "prompt": "p"})

    result, seen = await run(workspace, answer, max_turns=4)
    # The parent's first call, then three of the child's: the fourth is the task's last.
    assert len([r for r in seen if agent_of(r)]) == 3
    (entry,) = result.subagents
    assert entry["terminal_reason"] == "max_turns" and "--max-turns 4" in str(entry["error"])
    assert result.reason.value == "max_turns" and result.turns == 4
    assert result.exit_code == 3


async def test_the_parents_max_cost_stops_its_children_as_they_spend(workspace: Path) -> None:
    def answer(request: ModelRequest) -> ModelResponse:
        if agent_of(request):
            return busy_child(request)
        return parent_then_done(request, {"description": "d", "prompt": "p"})

    result, seen = await run(workspace, answer, max_cost=STEP * 3.5)
    assert len([r for r in seen if agent_of(r)]) == 3  # 1 (parent) + 3 (child) > 3.5 steps
    assert result.reason.value == "budget_exceeded" and result.exit_code == 3
    assert result.subagents[0]["terminal_reason"] == "budget_exceeded"


async def test_the_cost_in_the_result_is_the_sum(workspace: Path) -> None:
    priced = {"a": Usage(input_tokens=1234, output_tokens=56), "b": Usage(input_tokens=10)}

    def answer(request: ModelRequest) -> ModelResponse:
        agent = agent_of(request)
        if agent:
            job = str(request.messages[0].text)
            if len(request.messages) == 1:
                return respond(tool_use("glob", {"pattern": "*"}), usage=priced[job])
            return respond(text(f"{job} done"), usage=priced[job])
        if not results(request):
            return respond(
                tool_use("agent", {"description": "a", "prompt": "a"}),
                tool_use("agent", {"description": "b", "prompt": "b"}),
                usage=USAGE,
            )
        return respond(text("done"), usage=USAGE)

    result, _seen = await run(workspace, answer)
    price = CATALOGUE.lookup(MODEL).price
    own = 2 * cost_usd(price, USAGE)  # type: ignore[operator]
    children = {e["description"]: e["cost_usd"] for e in result.subagents}
    expected = {job: 2 * cost_usd(price, usage) for job, usage in priced.items()}  # type: ignore[operator]
    assert children == pytest.approx(expected, abs=1e-6)
    assert result.cost_usd == pytest.approx(own + sum(expected.values()), abs=1e-6)
    assert result.cost_usd == pytest.approx(own + sum(children.values()), abs=1e-6)
    tokens = 2 * USAGE.total_tokens + 2 * sum(u.total_tokens for u in priced.values())
    assert result.usage.total_tokens == tokens
    assert result.turns == 2 + 4  # the task's model calls, its subagents' included
