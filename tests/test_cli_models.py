"""`agentcli run` against the strict fake Messages API: the default model, model switches in
both directions across `run --continue -m …`, legacy models, continuation after max_tokens, long
sessions with elision, an unknown model, and what users see of the model's thinking.

The fake (strict) refuses any request a model would refuse, and signs the thinking blocks it
serves for the model and transcript that produced them: a request that sent a thinking block
where it is bound to another model or another transcript would fail the run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text, thinking, tool_use
from agentcli.testing.strict import ModelRules
from tests.test_cli_run import cli, result_of


@pytest.fixture
def server() -> Iterator[FakeMessagesServer]:
    with FakeMessagesServer() as fake:
        yield fake
        assert fake.pairing_problems() == []


def thinking_blocks(request_body: dict[str, Any]) -> list[str]:
    return [
        block["thinking"]
        for message in request_body["messages"]
        if message["role"] == "assistant"
        for block in message["content"]
        if block["type"] == "thinking"
    ]


def one_task(server: FakeMessagesServer, workspace: Path, name: str, *args: str) -> dict[str, Any]:
    """A task that reads a file, thinking before each step; its thoughts are named `name`."""
    (workspace / "a.py").write_text("print('hi')\n")
    server.push(
        stream_message([thinking(f"{name}: read it"), tool_use("read_file", {"path": "a.py"})]),
        stream_message([thinking(f"{name}: answer"), text(f"{name} done")]),
    )
    proc = cli(
        "run", f"task {name}", "--output-format", "json", *args, server=server, cwd=workspace
    )
    assert proc.returncode == 0, proc.stderr
    return result_of(proc)


def test_the_default_request(server: FakeMessagesServer, workspace: Path) -> None:
    result = one_task(server, workspace, "a")
    body = server.requests[0].body
    assert body["model"] == "claude-opus-5-5"
    assert body["max_tokens"] == 128_000
    assert body["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert body["output_config"] == {"effort": "medium"}
    assert thinking_blocks(server.requests[1].body) == ["a: read it"]
    assert result["cost_usd"] == pytest.approx((2 * 100 * 4 + 2 * 20 * 20) / 1e6)


@pytest.mark.parametrize(
    ("first", "then"),
    [
        ("claude-sonnet-5-5", "claude-opus-5-5"),
        ("claude-opus-5-5", "claude-sonnet-5-5"),
        ("claude-opus-5-5", "claude-fable-5-1"),
        ("claude-fable-5-1", "opus"),
        ("claude-sonnet-4-5", "claude-opus-5-5"),
        ("claude-opus-5-5", "claude-haiku-4-5"),
        ("claude-opus-4-6", "claude-opus-5"),
    ],
)
def test_continuing_with_another_model_leaves_the_first_ones_thinking_behind(
    server: FakeMessagesServer, workspace: Path, first: str, then: str
) -> None:
    one_task(server, workspace, "one", "-m", first)
    one_task(server, workspace, "two", "--continue", "-m", then)
    second_task = [r.body for r in server.requests[2:]]
    assert [thinking_blocks(b) for b in second_task] == [[], ["two: read it"]]
    # And back: the first model gets its own thinking again, never the other one's.
    one_task(server, workspace, "three", "--continue", "-m", first)
    assert thinking_blocks(server.requests[4].body) == ["one: read it", "one: answer"]


def test_continuing_with_the_same_model_keeps_its_thinking(
    server: FakeMessagesServer, workspace: Path
) -> None:
    one_task(server, workspace, "one")
    one_task(server, workspace, "two", "--continue")
    assert thinking_blocks(server.requests[2].body) == ["one: read it", "one: answer"]


def test_changed_instructions_leave_earlier_thinking_behind(
    server: FakeMessagesServer, workspace: Path
) -> None:
    """A thinking block is bound to the system prompt before it: AGENTS.md changing between two
    runs (or the date in the prompt) must not get the session refused."""
    one_task(server, workspace, "one")
    (workspace / "AGENTS.md").write_text("Use tabs.\n")
    one_task(server, workspace, "two", "--continue")
    assert thinking_blocks(server.requests[2].body) == []


def test_text_cut_at_max_tokens_is_continued_by_a_user_message(
    server: FakeMessagesServer, workspace: Path
) -> None:
    server.push(
        stream_message([thinking("long"), text("Part one,")], stop_reason="max_tokens"),
        stream_message([text(" part two.")]),
    )
    proc = cli("run", "write", "--output-format", "json", server=server, cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    assert server.requests[1].body["messages"][-1]["role"] == "user"


def test_a_long_session_with_elided_results_stays_valid(
    server: FakeMessagesServer, workspace: Path
) -> None:
    """Old results are elided once the context passes half the window: every thinking block
    before that point stops being sent (its transcript changed), later ones are sent back."""
    (workspace / ".agentcli").mkdir()
    (workspace / ".agentcli" / "config.toml").write_text("[context]\nwindow_tokens = 10000\n")
    for turn in range(8):
        (workspace / f"big{turn}.txt").write_text("x" * 3_000 + "\n")
        server.push(
            stream_message(
                [thinking(f"step {turn}"), tool_use("read_file", {"path": f"big{turn}.txt"})],
                # Only the 5th response reports a context over half the window.
                usage={"input_tokens": 6_000 if turn == 4 else 1_000, "output_tokens": 50},
            )
        )
    server.push(stream_message([thinking("done"), text("Read it all.")]))
    proc = cli(
        "run", "read", "--output-format", "json", "--trust-project", server=server, cwd=workspace
    )
    assert proc.returncode == 0, proc.stderr
    last = server.requests[-1].body
    contents = [
        b.get("content") for m in last["messages"] for b in m["content"] if isinstance(b, dict)
    ]
    assert any(isinstance(c, str) and c.startswith("[elided") for c in contents)
    assert thinking_blocks(last) == ["step 5", "step 6", "step 7"]


def test_an_unknown_model_runs_with_its_cost_unknown(workspace: Path) -> None:
    with FakeMessagesServer(models={"claude-mystery-1": ModelRules(max_output=16_384)}) as fake:
        fake.push(stream_message([text("hello")]))
        proc = cli(
            "run",
            "hi",
            "-m",
            "claude-mystery-1",
            "--output-format",
            "stream-json",
            server=fake,
            cwd=workspace,
        )
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert events[-1]["type"] == "result" and events[-1]["cost_usd"] is None
    notices = [e["message"] for e in events if e["type"] == "notice"]
    assert any("claude-mystery-1" in n and "unknown" in n for n in notices)
    body = fake.requests[0].body
    assert "thinking" not in body and "output_config" not in body


def test_text_progress_shows_what_the_model_thought_between_tool_calls(
    server: FakeMessagesServer, workspace: Path
) -> None:
    (workspace / "a.py").write_text("x\n")
    server.push(
        stream_message([thinking("Checking a.py first."), tool_use("read_file", {"path": "a.py"})]),
        stream_message([text("Done.")]),
    )
    proc = cli("run", "look", server=server, cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Done.\n"
    assert "Checking a.py first." in proc.stderr


@pytest.mark.parametrize(
    ("args", "thinking", "output_config"),
    [
        (["--effort", "high"], {"type": "adaptive", "display": "summarized"}, {"effort": "high"}),
        (
            ["--effort", "max", "-m", "fable"],
            {"type": "adaptive", "display": "summarized"},
            {"effort": "max"},
        ),
        (["-m", "claude-opus-4-6", "--effort", "xhigh"], {"type": "adaptive"}, {"effort": "high"}),
        (
            ["-m", "claude-sonnet-4-5", "--effort", "low"],
            {"type": "enabled", "budget_tokens": 4000},
            None,
        ),
        (["-m", "claude-sonnet-4-5"], None, None),
        (["-m", "claude-3-5-haiku", "--effort", "max"], None, None),
    ],
)
def test_effort_is_sent_as_each_model_takes_it(
    server: FakeMessagesServer,
    workspace: Path,
    args: list[str],
    thinking: dict[str, Any] | None,
    output_config: dict[str, Any] | None,
) -> None:
    server.push(stream_message([text("ok")]))
    proc = cli("run", "hi", *args, server=server, cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    body = server.requests[0].body
    assert body.get("thinking") == thinking
    assert body.get("output_config") == output_config
    if "xhigh" in args:
        assert "has no effort level xhigh" in proc.stderr
    if "claude-3-5-haiku" in args:
        assert "takes no effort level" in proc.stderr


def test_effort_from_a_config_file(server: FakeMessagesServer, workspace: Path) -> None:
    (workspace / ".agentcli").mkdir()
    (workspace / ".agentcli" / "config.toml").write_text('effort = "low"\n')
    server.push(stream_message([text("ok")]))
    proc = cli("run", "hi", server=server, cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    assert server.requests[0].body["output_config"] == {"effort": "low"}


@pytest.mark.parametrize("where", ["flag", "config"])
def test_an_unknown_effort_is_a_usage_error_naming_where(workspace: Path, where: str) -> None:
    args = ["--effort", "extreme"] if where == "flag" else []
    if where == "config":
        (workspace / ".agentcli").mkdir()
        (workspace / ".agentcli" / "config.toml").write_text('effort = "extreme"\n')
    proc = cli("run", "hi", *args, server=None, cwd=workspace, ANTHROPIC_API_KEY="k")
    assert proc.returncode == 2
    assert "unknown effort 'extreme'" in proc.stderr
    assert ("--effort" if where == "flag" else "config.toml") in proc.stderr
