"""What a user sees of subagents: stream-json events of a child carry `parent_tool_use_id` and
`agent`; text progress has a line when each starts and ends (its calls collapsed, its denials
shown); the result's `subagents`; the REPL's live line per running child; `/agents`; `/show` of
an `agent` call lists the child's calls."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from rich.console import Console

from agentcli.events import (
    Notice,
    SubagentEvent,
    SubagentFinished,
    SubagentStarted,
    ToolCallStarted,
    TurnStarted,
    UsageUpdated,
)
from agentcli.testing.fake_api import FakeMessagesServer, RecordedRequest, stream_message
from agentcli.testing.fake_api import text as say
from agentcli.testing.fake_api import tool_use as call
from agentcli.ui.repl.status import Status
from agentcli.ui.repl.stream import TaskView
from agentcli.usage import Usage
from tests.agents.conftest import agent_of_body
from tests.inprocess import decoded, run_in_process


def route(request: RecordedRequest) -> Any:
    body = request.body
    model = body["model"]
    messages = body["messages"]
    last = messages[-1]["content"]
    answered = isinstance(last, list) and any(b.get("type") == "tool_result" for b in last)
    if agent_of_body(body):
        if not answered:
            return stream_message(
                [say("looking"), call("shell", {"command": "touch nope.txt"}, id="c1")],
                model=model,
            )
        return stream_message([say("nothing to see")], model=model)
    if not answered:
        return stream_message(
            [call("agent", {"description": "look around", "prompt": "look"}, id="p1")],
            model=model,
        )
    return stream_message([say("all done")], model=model)


def run(workspace: Path, *args: str) -> Any:
    with FakeMessagesServer() as server:
        server.answer_by(route)
        done = decoded(
            run_in_process(
                *("run", "go", "-m", "haiku", *args),
                cwd=workspace,
                env={"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test"},
            )
        )
        assert server.pairing_problems() == []
    return done


def test_stream_json_labels_every_event_of_a_child(workspace: Path) -> None:
    done = run(workspace, "--output-format", "stream-json")
    events = [json.loads(line) for line in done.stdout.splitlines()]
    child = [e for e in events if e.get("parent_tool_use_id") == "p1"]
    kinds = [e["type"] for e in child]
    assert kinds[0] == "subagent_started" and kinds[-1] == "subagent_finished"
    assert {"turn_started", "permission_decided", "tool_call_finished", "usage"} <= set(kinds)
    assert all(e["agent"] == "general" for e in child)
    assert all("parent_tool_use_id" not in e for e in events if e not in child)
    denied = next(e for e in child if e["type"] == "tool_call_finished")
    assert (denied["call_id"], denied["status"]) == ("c1", "denied")
    result = events[-1]
    assert result["type"] == "result"
    (entry,) = result["subagents"]
    assert {k: entry[k] for k in ("type", "description", "state", "turns", "tool_calls")} == {
        "type": "general",
        "description": "look around",
        "state": "completed",
        "turns": 2,
        "tool_calls": 1,
    }
    assert entry["cost_usd"] > 0 and result["cost_usd"] > entry["cost_usd"]
    assert [d["agent"] for d in result["permission_denials"]] == ["general"]


def test_text_progress_has_a_line_per_child_and_its_denials(workspace: Path) -> None:
    done = run(workspace)
    assert done.stdout == "all done\n"
    lines = done.stderr.splitlines()
    assert "⤷ general: look around" in lines
    assert any(line.startswith("  [general] ⊘ shell · denied: no terminal") for line in lines)
    assert any(
        line.startswith("⤶ general: look around · completed · 2 turns · 1 tool call")
        for line in lines
    )
    # The child's calls are collapsed: no line of their own, as the parent's calls have.
    assert not any(line.startswith(("✓ shell", "⊘ shell", "✗ shell")) for line in lines)
    assert "✓ agent look around" in "\n".join(lines)
    # Its denied call is the task's: a task that changed nothing after a denial ends exit 4.
    assert done.returncode == 4


def test_the_repl_shows_a_live_line_per_running_child(tmp_path: Path) -> None:
    out = io.StringIO()
    view = TaskView(Console(file=out, width=100), Status(model="m", mode="default"), tmp_path)
    label = {"parent_tool_use_id": "p1", "agent": "explore"}
    view(SubagentStarted(description="find the config", task_id="T", model="m", **label))
    view(SubagentEvent(event=TurnStarted(turn=2), **label))
    view(SubagentEvent(event=UsageUpdated(usage=Usage(input_tokens=1500), cost_usd=0.01), **label))
    view(
        SubagentEvent(
            event=ToolCallStarted(call_id="c", name="grep", input={"pattern": "x"}), **label
        )
    )
    (line,) = view.subagents.lines(100)
    assert line.plain == (
        "  ⤷ explore: find the config · turn 2 · 1 call · 1.5k tokens · $0.0100 · grep x"
    )
    view(SubagentEvent(event=Notice(level="warning", message="careful"), **label))
    view(
        SubagentFinished(
            description="find the config",
            task_id="T",
            state="completed",
            reason="completed",
            turns=2,
            tool_calls=1,
            usage=Usage(input_tokens=1500),
            cost_usd=0.01,
            changed_files=[],
            error=None,
            **label,
        )
    )
    assert view.subagents.lines(100) == []
    printed = out.getvalue()
    assert "[explore] careful" in printed
    assert "⤶ explore: find the config · completed · 2 turns · 1 call · 1.5k tokens" in printed
