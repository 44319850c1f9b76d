"""Which model a subagent runs on (the call's `model`, else its definition's, else its
parent's: `inherit`), priced as its own; a model whose price is unknown is refused where a cost
limit must hold. And `[agents]` limits: a repository's config may lower them, never raise
them."""

from __future__ import annotations

from pathlib import Path

from agentcli.events import Event
from agentcli.model import ModelRequest, ModelResponse
from agentcli.paths import user_config_path
from agentcli.session.options import SessionOptions
from agentcli.testing import FunctionModel, respond, text, tool_use
from agentcli.ui.run import open_run_session
from tests.agents.conftest import agent_of, definition, results


async def run(workspace: Path, agent_input: dict[str, object], **options: object):  # type: ignore[no-untyped-def]
    used: dict[str, str] = {}
    made: list[str] = []

    def factory(name: str) -> FunctionModel:
        made.append(name)

        def answer(request: ModelRequest) -> ModelResponse:
            agent = agent_of(request) or "parent"
            used[agent] = name
            if agent != "parent":
                return respond(text(f"{agent} on {name}"))
            if not results(request):
                return respond(tool_use("agent", agent_input, id="p1"))
            return respond(text(results(request)[0].content))

        return FunctionModel(answer, model=name)

    events: list[Event] = []
    live = open_run_session(
        SessionOptions(task="x", cwd=workspace, model="haiku", **options),  # type: ignore[arg-type]
        events.append,
        model_factory=factory,
    )
    try:
        result = await live.run_task("go")
    finally:
        await live.close()
    return result, used, made


async def test_a_definitions_model_and_the_calls_model(workspace: Path) -> None:
    definition(workspace, "cheap", "description: d\nmodel: sonnet")
    result, used, made = await run(
        workspace, {"description": "d", "prompt": "p", "subagent_type": "cheap"}
    )
    assert used == {"parent": "claude-haiku-5-5", "cheap": "claude-sonnet-5-5"}
    assert made == ["claude-haiku-5-5", "claude-sonnet-5-5"]
    assert result.subagents[0]["model"] == "claude-sonnet-5-5"
    result, used, _made = await run(
        workspace, {"description": "d", "prompt": "p", "subagent_type": "cheap", "model": "opus"}
    )
    assert used["cheap"] == "claude-opus-5-5"


async def test_inherit_uses_the_parents_client(workspace: Path) -> None:
    definition(workspace, "same", "description: d\nmodel: inherit")
    _result, used, made = await run(
        workspace, {"description": "d", "prompt": "p", "subagent_type": "same"}
    )
    assert used == {"parent": "claude-haiku-5-5", "same": "claude-haiku-5-5"}
    assert made == ["claude-haiku-5-5"]


async def test_a_model_without_a_price_is_refused_under_a_cost_limit(workspace: Path) -> None:
    result, used, _made = await run(
        workspace,
        {"description": "d", "prompt": "p", "model": "claude-unknown-9"},
        max_cost=1.0,
    )
    assert "general" not in used and result.subagents == []
    (call,) = result.tool_calls
    assert call["is_error"]
    assert "the price of model 'claude-unknown-9' is unknown" in str(result.final_text)


async def test_a_repository_may_lower_the_limits_but_not_raise_them(workspace: Path) -> None:
    user = user_config_path()
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text("[agents]\nmax_turns = 5\nmax_concurrent = 2\n")
    project = workspace / ".agentcli" / "config.toml"
    project.parent.mkdir()
    project.write_text("[agents]\nmax_turns = 50\nmax_concurrent = 1\nmax_depth = 3\n")
    live = open_run_session(
        SessionOptions(task="x", cwd=workspace),
        lambda _event: None,
        model_factory=lambda name: FunctionModel(lambda _r: respond(text("x")), model=name),
    )
    try:
        limits = live.settings.agents
        ignored = "\n".join(str(v) for v in live.settings.provenance.ignored.values())
    finally:
        await live.close()
    assert (limits.max_turns, limits.max_concurrent, limits.max_depth) == (5, 1, 1)
    assert "max_turns = 50" in ignored and "max_depth = 3" in ignored
