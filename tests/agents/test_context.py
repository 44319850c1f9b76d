"""A subagent's context is its own: its system prompt (with the environment and the instruction
files), the delegation prompt, and nothing of its parent's history; its tools are filtered; its
answer comes back as one tool result with a line of what it spent."""

from __future__ import annotations

from pathlib import Path

from agentcli.events import Event, SubagentEvent, SubagentFinished, SubagentStarted
from agentcli.messages import Message
from agentcli.model import ModelRequest, ModelResponse
from agentcli.testing import respond, text, tool_use
from tests.agents.conftest import agent_of, last_text, open_session, results

SECRET = "the parent's secret 7f3a"


async def test_the_childs_request_holds_none_of_the_parents_history(workspace: Path) -> None:
    (workspace / "AGENTS.md").write_text("Always answer in haiku.\n")
    (workspace / "a.txt").write_text("alpha\n")
    seen: list[ModelRequest] = []

    def answer(request: ModelRequest) -> ModelResponse:
        seen.append(request)
        if agent_of(request) is not None:
            if len(request.messages) == 1:
                return respond(tool_use("read_file", {"path": "a.txt"}, id="c1"))
            return respond(text("a.txt says alpha"))
        if "first task" in last_text(request):
            return respond(text(f"noted: {SECRET}"))
        if not results(request):
            return respond(
                tool_use(
                    "agent",
                    {"description": "read a", "prompt": "What does a.txt say?"},
                    id="p1",
                ),
                tool_use(
                    "agent",
                    {
                        "description": "read a again",
                        "prompt": "Report a.txt.",
                        "subagent_type": "explore",
                    },
                    id="p2",
                ),
            )
        return respond(text("done"))

    events: list[Event] = []
    live, _model = open_session(workspace, answer, events=events, permission_mode="yolo")
    try:
        await live.run_task(f"first task: remember {SECRET}")
        result = await live.run_task("second task: delegate")
    finally:
        await live.close()

    children = [r for r in seen if agent_of(r) is not None]
    firsts = [r for r in children if len(r.messages) == 1]
    assert sorted(str(r.messages[0].text) for r in firsts) == [
        "Report a.txt.",
        "What does a.txt say?",
    ]
    for request in children:
        sent = "".join(str(m.to_wire()) for m in request.messages)
        assert SECRET not in sent and SECRET not in request.system
        assert "first task" not in sent and "second task" not in sent
        assert "Always answer in haiku." in request.system  # the instruction files
        assert str(workspace) in request.system  # the environment
    explore = next(r for r in firsts if agent_of(r) == "explore")
    assert [t.name for t in explore.tools] == ["read_file", "glob", "grep", "shell"]
    general = next(r for r in firsts if agent_of(r) == "general")
    assert [t.name for t in general.tools] == [
        "read_file",
        "write_file",
        "edit_file",
        "glob",
        "grep",
        "shell",
    ]  # all of the parent's, but no `agent`: a subagent cannot delegate (max_depth 1)

    # The answer is one tool result, with the line of what the subagent spent.
    parent_last = [r for r in seen if agent_of(r) is None][-1]
    answers = {r.tool_use_id: r for r in results(parent_last)}
    assert answers["p1"].content.startswith("a.txt says alpha\n\n[subagent general completed")
    assert "2 turns · 1 tool call ·" in answers["p1"].content
    assert "changed no files]" in answers["p1"].content
    assert not answers["p1"].is_error
    assert sorted(e["type"] for e in result.subagents) == ["explore", "general"]
    assert {e["state"] for e in result.subagents} == {"completed"}

    # Every event of a subagent is labelled with its `agent` call and type.
    labelled = [e for e in events if isinstance(e, SubagentEvent)]
    assert labelled and {e.parent_tool_use_id for e in labelled} == {"p1", "p2"}
    for event in labelled:
        data = event.to_json()
        assert data["parent_tool_use_id"] in ("p1", "p2")
        assert data["agent"] == {"p1": "general", "p2": "explore"}[data["parent_tool_use_id"]]
    starts = [e for e in events if isinstance(e, SubagentStarted)]
    ends = [e for e in events if isinstance(e, SubagentFinished)]
    assert sorted(e.parent_tool_use_id for e in starts) == ["p1", "p2"]
    assert sorted(e.parent_tool_use_id for e in ends) == ["p1", "p2"]


async def test_the_parents_history_is_its_own(workspace: Path) -> None:
    """What the subagent said and did is not in the parent's history: only its answer is."""

    def answer(request: ModelRequest) -> ModelResponse:
        if agent_of(request):
            if len(request.messages) == 1:
                return respond(text("thinking out loud"), tool_use("glob", {"pattern": "*"}))
            return respond(text("the answer"))
        if not results(request):
            return respond(tool_use("agent", {"description": "d", "prompt": "p"}, id="p1"))
        return respond(text("done"))

    live, _model = open_session(workspace, answer)
    try:
        await live.run_task("go")
        history: list[Message] = list(live.messages)
    finally:
        await live.close()
    words = "".join(str(m.to_wire()) for m in history)
    assert "thinking out loud" not in words and "glob" not in words
    assert "the answer" in words
