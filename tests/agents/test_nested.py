"""With `[agents] max_depth` above 1, a subagent's own subagent is bounded by the subagent that
started it, not by the session: at most its tools, its permissions (a read-only subagent's child
is read-only too), its prompter (labelled with both), its model when it inherits."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from agentcli.agents.boundaries import child_policy
from agentcli.model import ModelRequest, ModelResponse
from agentcli.paths import user_config_path
from agentcli.permissions import Answer, PermissionRequest, PromptAnswer
from agentcli.testing import respond, text, tool_use
from agentcli.vocabulary import Decision, PermissionMode
from tests.agents.conftest import agent_of, definition, open_session, results
from tests.agents.test_permissions import STRICTNESS, TARGETS, policy

MODES = tuple(PermissionMode)


@pytest.fixture(autouse=True)
def deeper() -> None:
    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[agents]\nmax_depth = 2\n")


@pytest.mark.parametrize(
    ("parent", "first", "second"),
    [
        (p, f, s)
        for p, f, s in itertools.product(MODES, MODES, [None, *MODES])
        if p is PermissionMode.YOLO or f is PermissionMode.READ_ONLY
    ],
)
def test_a_childs_child_is_never_allowed_more_than_the_child(
    parent: PermissionMode, first: PermissionMode, second: PermissionMode | None, workspace: Path
) -> None:
    child = child_policy(policy(parent, workspace), first)  # type: ignore[arg-type]
    grandchild = child_policy(child, second)
    for risk, target in TARGETS:
        floor = STRICTNESS[child.decide(risk, target).decision]
        assert STRICTNESS[grandchild.decide(risk, target).decision] >= floor, (target, second)
        assert grandchild.decide(risk, target).decision is not Decision.ALLOW or (
            child.decide(risk, target).decision is Decision.ALLOW
        )


class Person:
    asks_a_person = True

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def ask(self, request: PermissionRequest) -> PromptAnswer:
        self.asked.append(request.tool)
        return PromptAnswer(Answer.NO, "no")


async def test_a_read_only_subagents_own_subagent(workspace: Path) -> None:
    front = "description: reviews\ntools: Read, Write, Agent\npermissionMode: plan"
    definition(workspace, "reviewer", front)
    offered: dict[str, list[str]] = {}

    def answer(request: ModelRequest) -> ModelResponse:
        job = str(request.messages[0].text)
        offered.setdefault(job, [t.name for t in request.tools])
        if results(request):
            return respond(text(" | ".join(r.content for r in results(request))))
        if job == "go":
            return respond(
                tool_use(
                    "agent", {"description": "r", "prompt": "review", "subagent_type": "reviewer"}
                )
            )
        if job == "review":
            return respond(tool_use("agent", {"description": "w", "prompt": "write"}))
        assert agent_of(request) == "general"
        return respond(
            tool_use("write_file", {"path": "w.txt", "content": "x"}),
            tool_use("read_file", {"path": "r.txt"}),
        )

    (workspace / "r.txt").write_text("r\n")
    person = Person()
    live, _model = open_session(workspace, answer, permission_mode="yolo", prompter=person)
    try:
        result = await live.run_task("go")
    finally:
        await live.close()
    assert offered["review"] == ["read_file", "write_file", "agent"]
    assert offered["write"] == ["read_file", "write_file"]  # the reviewer's, less `agent`
    # The session is in yolo mode, the reviewer read-only: so is the reviewer's own subagent.
    assert not (workspace / "w.txt").exists()
    assert person.asked == []  # denied by read-only mode: nothing to ask
    (denied,) = result.permission_denials
    assert (denied["tool"], denied["agent"]) == ("write_file", "general")
    assert "read-only mode" in denied["reason"]
    (reviewer,) = result.subagents
    assert reviewer["type"] == "reviewer" and reviewer["state"] == "completed"


async def test_questions_of_a_childs_child_are_labelled_with_both(workspace: Path) -> None:
    def answer(request: ModelRequest) -> ModelResponse:
        job = str(request.messages[0].text)
        if results(request):
            return respond(text("ok"))
        if job in ("go", "middle"):
            nxt = "middle" if job == "go" else "deepest"
            return respond(tool_use("agent", {"description": nxt, "prompt": nxt}))
        return respond(tool_use("shell", {"command": "touch deep.txt"}))

    person = Person()
    live, _model = open_session(workspace, answer, prompter=person)
    try:
        await live.run_task("go")
    finally:
        await live.close()
    assert person.asked == ["[general › general] shell"]
    assert not (workspace / "deep.txt").exists()
