"""`[context] compaction = "server"`: on a model the catalogue says supports it, requests ask
the Messages API to compact the context itself (`compact_20260112`, with its beta header); the
`compaction` block it returns goes back verbatim, its usage iteration counts in the task's; a
compaction without a summary, or a model without the feature, leaves agentcli compacting."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentcli.model.stream import usage_from_wire
from agentcli.testing.fake_api import FakeMessagesServer, compaction, stream_message, text, tool_use
from agentcli.usage import Usage
from tests.inprocess import decoded, run_in_process

ITERATIONS = [
    {
        "type": "compaction",
        "input_tokens": 52_000,
        "output_tokens": 900,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    },
    {
        "type": "message",
        "input_tokens": 3_000,
        "output_tokens": 40,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    },
]


def test_the_compaction_iteration_is_counted_in_the_usage() -> None:
    raw = {"input_tokens": 3_000, "output_tokens": 40, "iterations": ITERATIONS}
    assert usage_from_wire(raw) == Usage(input_tokens=55_000, output_tokens=940)
    assert usage_from_wire({"input_tokens": 5, "iterations": "junk"}) == Usage(input_tokens=5)


def configure(workspace: Path, model: str) -> None:
    (workspace / ".agentcli").mkdir()
    (workspace / ".agentcli" / "config.toml").write_text(
        f'model = "{model}"\n[context]\ncompaction = "server"\nwindow_tokens = 60000\n'
    )
    (workspace / "a.txt").write_text("hello\n")


def run(server: FakeMessagesServer, workspace: Path, *more: str, **env: str | None) -> Any:
    given = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test", **env}
    done = decoded(
        run_in_process(
            *("run", "-C", str(workspace), "read a.txt", "--output-format", "stream-json", *more),
            cwd=workspace,
            env=given,
        )
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_the_api_compacts_and_its_block_goes_back_verbatim(workspace: Path) -> None:
    configure(workspace, "claude-opus-5")
    summary = "<summary>the user wants a.txt read</summary>"
    block = {**compaction(summary), "encrypted_content": "opaque-123"}
    with FakeMessagesServer() as server:
        server.push(
            stream_message(
                [block, tool_use("read_file", {"path": "a.txt"})],
                model="claude-opus-5",
                usage={"input_tokens": 3_000, "output_tokens": 40, "iterations": ITERATIONS},
            ),
            stream_message([text("it says hello")], model="claude-opus-5"),
        )
        events = run(server, workspace)
        first, second = (r for r in server.requests)
    for request in (first, second):
        assert "compact-2026-01-12" in request.headers["anthropic-beta"]
        (edit,) = request.body["context_management"]["edits"]
        assert edit["type"] == "compact_20260112"
        assert edit["trigger"] == {"type": "input_tokens", "value": 51_000}
        assert "Do not call any tools" in edit["instructions"]
        assert (
            '<pinned kind="task" title="The current task, as the user gave it">'
            in edit["instructions"]
        )
    # Sent back exactly as it came: the summary and the opaque metadata.
    assert second.body["messages"][1]["content"][0] == {
        "type": "compaction",
        "content": summary,
        "encrypted_content": "opaque-123",
    }
    result = events[-1]
    assert result["compactions"] == 1
    assert result["usage"]["input_tokens"] == 55_000 + 100  # the second response's 100
    finished = [e for e in events if e["type"] == "compaction_finished"]
    assert [(e["trigger"], e["summary_length"], e["error"]) for e in finished] == [
        ("auto", len(summary), None)
    ]


def test_a_compaction_without_a_summary_hands_back_to_agentcli(workspace: Path) -> None:
    configure(workspace, "claude-opus-5")
    with FakeMessagesServer() as server:
        server.push(
            stream_message(
                [compaction(None), tool_use("read_file", {"path": "a.txt"})],
                model="claude-opus-5",
            ),
            stream_message([text("it says hello")], model="claude-opus-5"),
        )
        events = run(server, workspace)
        first, second = server.requests
    assert "context_management" in first.body
    assert "context_management" not in second.body  # agentcli's own compaction from now on
    notices = [e["message"] for e in events if e["type"] == "notice"]
    assert any("the API's compaction returned no summary" in n for n in notices)
    assert events[-1]["compactions"] == 0


def test_a_model_without_it_is_compacted_by_agentcli(workspace: Path) -> None:
    configure(workspace, "claude-opus-5-5")
    with FakeMessagesServer() as server:
        server.push(stream_message([text("hi")]))
        run(server, workspace)
        (request,) = server.requests
    assert "context_management" not in request.body
    assert "anthropic-beta" not in request.headers


def test_the_sdk_transport_sends_it_too(workspace: Path) -> None:
    configure(workspace, "claude-opus-5")
    with FakeMessagesServer() as server:
        server.push(stream_message([text("hi")], model="claude-opus-5"))
        run(server, workspace, AGENTCLI_TRANSPORT="sdk")
        (request,) = server.requests
    assert "compact-2026-01-12" in request.headers["anthropic-beta"]
    assert request.body["context_management"]["edits"][0]["type"] == "compact_20260112"
