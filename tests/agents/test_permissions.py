"""Nothing a subagent does escapes its parent's permissions: the same rules, the same mode or a
narrower one (a definition's `yolo` never widens), its questions to the same prompter labelled
with it (denied without a terminal), the parent's MCP tools filtered by `tools`, the same hooks
(told `agent_id` and `agent_type`)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentcli.agents.boundaries import child_policy
from agentcli.mcp.hub import McpHub, process_hub
from agentcli.model import ModelRequest, ModelResponse
from agentcli.permissions import Answer, PermissionRequest, PromptAnswer
from agentcli.permissions.setup import build_policy
from agentcli.testing import respond, text, tool_use
from agentcli.vocabulary import Decision, PermissionMode, PermissionTarget, Risk
from tests.agents.conftest import agent_of, definition, open_session, results
from tests.mcp.conftest import DEMO, stdio, write_servers

MODES = tuple(PermissionMode)
STRICTNESS = {Decision.ALLOW: 0, Decision.ASK: 1, Decision.DENY: 2}
WIDTH = ["read-only", "default", "accept-edits", "auto", "yolo"]
"""The modes, narrowest first: written out here, apart from the code's own ordering."""
TARGETS = [
    (Risk.READ, PermissionTarget("read", "src/a.py", "read src/a.py")),
    (Risk.READ, PermissionTarget("read", ".env", "read .env")),
    (Risk.WRITE, PermissionTarget("write", "src/a.py", "write src/a.py")),
    (Risk.WRITE, PermissionTarget("write", ".git/config", "write .git/config")),
    (Risk.EXECUTE, PermissionTarget("shell", "ls", "run ls")),
    (Risk.EXECUTE, PermissionTarget("shell", "pytest -q", "run pytest -q")),
    (Risk.EXECUTE, PermissionTarget("shell", "rm -rf build", "run rm -rf build")),
    (Risk.EXECUTE, PermissionTarget("shell", "curl x | sh", "run curl")),
    (Risk.EXTERNAL, PermissionTarget("mcp__demo__echo", "*", "echo")),
    (Risk.DELEGATE, PermissionTarget("agent", "explore", "delegate")),
]


def policy(mode: PermissionMode, workspace: Path) -> object:
    return build_policy(
        mode=mode,
        flag_allow=["shell(pytest *)"],
        flag_deny=["read(.env)"],
        workspace=workspace,
        sandbox_available=True,
        persist=False,
    )


@pytest.mark.parametrize(("parent", "asked"), list(itertools.product(MODES, [None, *MODES])))
def test_a_subagent_is_never_allowed_more_than_its_parent(
    parent: PermissionMode, asked: PermissionMode | None, workspace: Path
) -> None:
    """The oracle is the parent's own decision and, where the definition's mode is narrower,
    a policy built in that mode from scratch: the child's is at least as strict as both."""
    parents = policy(parent, workspace)
    child = child_policy(parents, asked)  # type: ignore[arg-type]
    narrower = asked is not None and WIDTH.index(asked.value) < WIDTH.index(parent.value)
    assert child.mode is (asked if narrower else parent)
    fresh = policy(asked, workspace) if narrower and asked is not None else parents
    for risk, target in TARGETS:
        got = child.decide(risk, target).decision
        floor = max(
            STRICTNESS[parents.decide(risk, target).decision],  # type: ignore[attr-defined]
            STRICTNESS[fresh.decide(risk, target).decision],  # type: ignore[attr-defined]
        )
        assert STRICTNESS[got] >= floor, (parent, asked, target)


def delegating(agent_input: dict[str, object]):  # type: ignore[no-untyped-def]
    def parent(request: ModelRequest) -> ModelResponse:
        if not results(request):
            return respond(tool_use("agent", agent_input, id="p1"))
        return respond(text("done"))

    return parent


async def test_a_read_only_definition_denies_a_write_its_parent_could_do(
    workspace: Path,
) -> None:
    definition(workspace, "reviewer", "description: reviews\npermissionMode: plan")

    def answer(request: ModelRequest) -> ModelResponse:
        if agent_of(request) == "reviewer":
            if not results(request):
                return respond(tool_use("write_file", {"path": "child.txt", "content": "x"}))
            return respond(text(results(request)[0].content))
        if not results(request):
            return respond(
                tool_use("write_file", {"path": "parent.txt", "content": "y"}),
                tool_use("agent", {"description": "r", "prompt": "p", "subagent_type": "reviewer"}),
            )
        return respond(text("done"))

    live, _model = open_session(workspace, answer, permission_mode="accept-edits")
    try:
        result = await live.run_task("go")
    finally:
        await live.close()
    assert (workspace / "parent.txt").exists()
    assert not (workspace / "child.txt").exists()
    denied = [d for d in result.permission_denials if d.get("agent") == "reviewer"]
    assert [(d["tool"], "read-only mode" in d["reason"]) for d in denied] == [("write_file", True)]
    assert result.changed_files == ["parent.txt"]


async def test_yolo_in_a_definition_never_widens(workspace: Path) -> None:
    definition(workspace, "wild", "description: wild\npermissionMode: bypassPermissions")

    def answer(request: ModelRequest) -> ModelResponse:
        if agent_of(request):
            if not results(request):
                return respond(tool_use("shell", {"command": "touch made.txt"}))
            return respond(text(results(request)[0].content))
        return delegating({"description": "w", "prompt": "p", "subagent_type": "wild"})(request)

    live, _model = open_session(workspace, answer)  # default mode, no terminal
    try:
        result = await live.run_task("go")
    finally:
        await live.close()
    assert not (workspace / "made.txt").exists()
    (denial,) = result.permission_denials
    assert denial["agent"] == "wild" and "no terminal" in denial["reason"]


class Recording:
    """A person who answers every question with `answer`, and remembers what was asked."""

    asks_a_person = True

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.asked: list[PermissionRequest] = []

    async def ask(self, request: PermissionRequest) -> PromptAnswer:
        self.asked.append(request)
        return PromptAnswer(self.answer)


@pytest.mark.parametrize("answer", [Answer.YES, Answer.NO])
async def test_a_childs_question_reaches_the_prompter_labelled(
    workspace: Path, answer: Answer
) -> None:
    def model(request: ModelRequest) -> ModelResponse:
        if agent_of(request):
            if not results(request):
                return respond(tool_use("write_file", {"path": "asked.txt", "content": "x"}))
            return respond(text("ok"))
        return delegating({"description": "e", "prompt": "p", "subagent_type": "general"})(request)

    person = Recording(answer)
    live, _model = open_session(workspace, model, prompter=person)
    try:
        await live.run_task("go")
    finally:
        await live.close()
    (request,) = person.asked
    assert request.tool == "[general] write_file"
    assert (workspace / "asked.txt").exists() is (answer is Answer.YES)


async def test_dont_ask_denies_without_asking(workspace: Path) -> None:
    definition(workspace, "quiet", "description: quiet\npermissionMode: dontAsk")

    def model(request: ModelRequest) -> ModelResponse:
        if agent_of(request):
            if not results(request):
                return respond(tool_use("shell", {"command": "touch made.txt"}))
            return respond(text("ok"))
        return delegating({"description": "q", "prompt": "p", "subagent_type": "quiet"})(request)

    person = Recording(Answer.YES)
    live, _model = open_session(workspace, model, prompter=person)
    try:
        result = await live.run_task("go")
    finally:
        await live.close()
    assert person.asked == [] and not (workspace / "made.txt").exists()
    assert "dontAsk" in result.permission_denials[0]["reason"]


@pytest.mark.parametrize("rule", ["agent(explore)", "Task(Explore)", "Agent"])
async def test_a_deny_rule_on_the_agent_tool(workspace: Path, rule: str) -> None:
    def model(request: ModelRequest) -> ModelResponse:
        assert agent_of(request) is None, "no subagent may start"
        return delegating({"description": "e", "prompt": "p", "subagent_type": "explore"})(request)

    live, _model = open_session(workspace, model, deny=[rule])
    try:
        result = await live.run_task("go")
    finally:
        await live.close()
    assert result.subagents == []
    assert result.tool_calls[0]["status"] == "denied"


async def test_the_parents_deny_rules_hold_in_the_child(workspace: Path) -> None:
    (workspace / "secret").mkdir()
    (workspace / "secret" / "key").write_text("k\n")

    def model(request: ModelRequest) -> ModelResponse:
        if agent_of(request):
            if not results(request):
                return respond(
                    tool_use("read_file", {"path": "secret/key"}),
                    tool_use("write_file", {"path": "secret/new", "content": "x"}),
                )
            return respond(text(" | ".join(r.content for r in results(request))))
        return delegating({"description": "g", "prompt": "p"})(request)

    live, _model = open_session(
        workspace, model, permission_mode="yolo", deny=["read(secret/**)", "write(secret/**)"]
    )
    try:
        result = await live.run_task("go")
    finally:
        await live.close()
    assert not (workspace / "secret" / "new").exists()
    assert {d["tool"] for d in result.permission_denials} == {"read_file", "write_file"}


@pytest.fixture
def mcp_hub() -> Iterator[McpHub]:
    """The process's MCP hub, closed after the test: its servers stopped."""
    made = process_hub()
    try:
        yield made
    finally:
        made.close()


async def test_mcp_tools_reach_a_child_filtered_by_its_tools(
    workspace: Path, mcp_hub: McpHub
) -> None:
    config = write_servers(workspace.parent / "servers.json", {"demo": stdio(DEMO)})
    definition(workspace, "echoer", "description: echoes\ntools: mcp__demo__echo, Read")
    definition(workspace, "nomcp", "description: no mcp\ndisallowedTools: [mcp__demo]")
    offered: dict[str, list[str]] = {}

    def model(request: ModelRequest) -> ModelResponse:
        agent = agent_of(request)
        if agent:
            offered[agent] = [t.name for t in request.tools]
            if agent == "echoer" and not results(request):
                return respond(tool_use("mcp__demo__echo", {"text": "hi from the child"}))
            return respond(text(results(request)[0].content if results(request) else "none"))
        if not results(request):
            return respond(
                tool_use("agent", {"description": "e", "prompt": "p", "subagent_type": "echoer"}),
                tool_use("agent", {"description": "n", "prompt": "p", "subagent_type": "nomcp"}),
            )
        return respond(text(" / ".join(r.content for r in results(request))))

    live, _model = open_session(workspace, model, mcp_config=[config], allow=["mcp__demo__echo"])
    try:
        result = await live.run_task("go")
    finally:
        await live.close()
    assert offered["echoer"] == ["read_file", "mcp__demo__echo"]
    assert not any(name.startswith("mcp__") for name in offered["nomcp"])
    assert "agent" not in offered["nomcp"]
    assert "hi from the child" in str(result.final_text)


async def test_a_childs_calls_go_through_the_same_hooks(workspace: Path) -> None:
    from tests.hooks.conftest import hook_table, python_hook, user_hooks

    log = workspace.parent / "hook.log"
    script = python_hook(
        workspace.parent / "hook.py",
        f"open({str(log)!r}, 'a').write(json.dumps(data) + '\\n')\n",
    )
    user_hooks(hook_table("PreToolUse", str(script), matcher="glob|Task"))

    def model(request: ModelRequest) -> ModelResponse:
        if agent_of(request):
            if not results(request):
                return respond(tool_use("glob", {"pattern": "*"}, id="child-glob"))
            return respond(text("ok"))
        return delegating({"description": "e", "prompt": "p", "subagent_type": "explore"})(request)

    live, _model = open_session(workspace, model)
    try:
        await live.begin()
        await live.run_task("go")
    finally:
        await live.close()
    seen = [json.loads(line) for line in log.read_text().splitlines()]
    by_call = {entry["tool_use_id"]: entry for entry in seen}
    assert set(by_call) == {"p1", "child-glob"}  # `Task` matches the agent tool
    assert "agent_type" not in by_call["p1"]
    assert by_call["child-glob"]["agent_type"] == "explore"
    assert by_call["child-glob"]["agent_id"]


async def test_what_a_hook_blocks_of_a_child_is_in_the_tasks_result(workspace: Path) -> None:
    from tests.hooks.conftest import hook_table, python_hook, user_hooks

    script = python_hook(
        workspace.parent / "block.py", "print('no shell here', file=sys.stderr)\nsys.exit(2)\n"
    )
    user_hooks(hook_table("PreToolUse", str(script), matcher="Bash"))

    def model(request: ModelRequest) -> ModelResponse:
        if agent_of(request):
            if not results(request):
                return respond(tool_use("shell", {"command": "touch made.txt"}, id="child-sh"))
            return respond(text(results(request)[0].content))
        return delegating({"description": "g", "prompt": "p"})(request)

    live, _model = open_session(workspace, model, permission_mode="yolo")
    try:
        result = await live.run_task("go")
    finally:
        await live.close()
    assert not (workspace / "made.txt").exists()
    (block,) = result.hook_blocks
    assert (block["event"], block["tool"], block["call_id"], block["agent"]) == (
        "PreToolUse",
        "shell",
        "child-sh",
        "general",
    )
    assert "no shell here" in block["reason"]


def test_a_grant_from_a_childs_own_work_never_reaches_its_parent(workspace: Path) -> None:
    """A skill's `allowed-tools`, loaded by a subagent, would grant an allow rule for the rest
    of the task: it must not widen the parent (an ask or a deny may narrow it)."""
    from agentcli.permissions.rules import RuleKind

    parent = policy(PermissionMode.DEFAULT, workspace)
    child = child_policy(parent, None)  # type: ignore[arg-type]
    target = PermissionTarget("shell", "make deploy", "run make deploy")
    assert parent.decide(Risk.EXECUTE, target).decision is Decision.ASK  # type: ignore[attr-defined]
    child.add_rule(RuleKind.ALLOW, "shell(make *)", "allowed-tools, this task")
    assert parent.decide(Risk.EXECUTE, target).decision is Decision.ASK  # type: ignore[attr-defined]
    assert child.decide(Risk.EXECUTE, target).decision is Decision.ASK
    child.add_rule(RuleKind.DENY, "shell(make *)", "allowed-tools, this task")
    assert child.decide(Risk.EXECUTE, target).decision is Decision.DENY


async def test_the_todo_list_stays_the_tasks_own(workspace: Path) -> None:
    offered: list[str] = []

    def model(request: ModelRequest) -> ModelResponse:
        if agent_of(request):
            offered.extend(t.name for t in request.tools)
            return respond(text("ok"))
        return delegating({"description": "g", "prompt": "p"})(request)

    live, _model = open_session(workspace, model)
    try:
        await live.run_task("go")
    finally:
        await live.close()
    assert "todo_write" in [t.name for t in live.tools] and "todo_write" not in offered
