"""Black-box tests of `agentcli run` (the real binary) against the fake Messages API server.

These are the command-line contract of SPEC §7: the JSON result, stream-json, text mode
stdout/stderr split, exit codes 0/1/2/3/4/130, stdin handling.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcli.testing.fake_api import (
    FakeMessagesServer,
    HangResponse,
    SseResponse,
    error_response,
    message_events,
    raw_sse,
    stream_message,
    text,
    tool_use,
)

RESULT_KEYS = {
    "session_id",
    "task_id",
    "task_state",
    "terminal_reason",
    "final_text",
    "turns",
    "duration_s",
    "usage",
    "cost_usd",
    "acceptance",
    "artifact_version",
    "changed_files",
    "tool_calls",
    "permission_denials",
    "error",
}


@pytest.fixture
def server() -> Iterator[FakeMessagesServer]:
    with FakeMessagesServer() as fake:
        yield fake
        assert fake.pairing_problems() == []


def cli_env(server: FakeMessagesServer | None, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    if server is not None:
        env.update(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="test")
    env.update(extra)
    return env


def agentcli(
    *args: str,
    server: FakeMessagesServer | None,
    cwd: Path,
    stdin: str | None = None,
    **env: str,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentcli", *args],
        cwd=cwd,
        env=cli_env(server, **env),
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        text=True,
        timeout=60,
    )


def result_of(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, proc.stdout
    data: dict[str, Any] = json.loads(lines[0])
    assert set(data) == RESULT_KEYS
    return data


def test_json_result_contract(server: FakeMessagesServer, workspace: Path) -> None:
    (workspace / "a.py").write_text("print('hi')\n")
    server.push(
        stream_message([text("Reading."), tool_use("read_file", {"path": "a.py"}, id="t1")]),
        stream_message(
            [text("It prints hi.")],
            usage={"input_tokens": 50, "output_tokens": 7, "cache_read_input_tokens": 30},
        ),
    )
    proc = agentcli(
        "run", "what does a.py do", "--output-format", "json", server=server, cwd=workspace
    )
    assert proc.returncode == 0, proc.stderr
    data = result_of(proc)
    assert data["task_state"] == "unverified" and data["terminal_reason"] == "completed"
    assert data["final_text"] == "It prints hi."
    assert data["turns"] == 2
    assert data["usage"]["cache_read_input_tokens"] == 30
    assert data["cost_usd"] is not None and data["cost_usd"] > 0
    assert data["tool_calls"] == [
        {
            "id": "t1",
            "name": "read_file",
            "input": {"path": "a.py"},
            "status": "succeeded",
            "is_error": False,
        }
    ]
    assert data["error"] is None and data["permission_denials"] == []
    assert server.requests[0].body["model"] == "claude-sonnet-4-5"


def test_text_mode_prints_only_the_answer_on_stdout(
    server: FakeMessagesServer, workspace: Path
) -> None:
    (workspace / "a.py").write_text("x\n")
    server.push(
        stream_message([text("Let me look."), tool_use("read_file", {"path": "a.py"})]),
        stream_message([text("The answer.")]),
    )
    proc = agentcli("run", "q", server=server, cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "The answer.\n"
    assert "read_file a.py" in proc.stderr and "unverified" in proc.stderr


def test_stream_json_ends_with_the_result(server: FakeMessagesServer, workspace: Path) -> None:
    server.push(stream_message([text("hello world")]))
    proc = agentcli("run", "hi", "--output-format", "stream-json", server=server, cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert events[-1]["type"] == "result" and set(events[-1]) == RESULT_KEYS | {"type"}
    types = [e["type"] for e in events]
    assert types[0] == "task_started" and "text_delta" in types and "usage" in types
    assert "".join(e["text"] for e in events if e["type"] == "text_delta") == "hello world"


def test_task_from_stdin_and_stdin_as_context(server: FakeMessagesServer, workspace: Path) -> None:
    server.push(stream_message([text("one")]), stream_message([text("two")]))
    assert (
        agentcli("run", "-", server=server, cwd=workspace, stdin="task from stdin").returncode == 0
    )
    assert (
        agentcli(
            "run", "review this", server=server, cwd=workspace, stdin="diff --git a b"
        ).returncode
        == 0
    )
    first = server.requests[0].body["messages"][0]["content"][0]["text"]
    second = server.requests[1].body["messages"][0]["content"][0]["text"]
    assert first == "task from stdin"
    assert second.startswith("review this") and "<stdin>\ndiff --git a b\n</stdin>" in second


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "--bogus-flag", "x"], "No such option"),
        (["run", "x", "--output-format", "yaml"], "output-format"),
        (["run", "x", "--max-turns", "0"], "--max-turns"),
        (["run", "x", "--max-cost", "nan"], "--max-cost must be a finite number"),
        (["run", "x", "--timeout", "inf"], "--timeout must be a finite number"),
        (["run", "x", "--max-cost", "1", "-m", "mystery-model"], "price"),
        (["run", "x", "--permission-mode", "godmode"], "permission mode"),
        (["run", "x", "-C", "/nonexistent/dir"], "not a directory"),
    ],
)
def test_usage_errors_exit_2_before_any_request(
    server: FakeMessagesServer, workspace: Path, args: list[str], needle: str
) -> None:
    proc = agentcli(*args, server=server, cwd=workspace)
    assert proc.returncode == 2
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr
    assert server.requests == []


def test_missing_api_key_exits_2_naming_the_variable(workspace: Path) -> None:
    proc = agentcli("run", "hi", server=None, cwd=workspace)
    assert proc.returncode == 2
    assert "ANTHROPIC_API_KEY" in proc.stderr


def test_auth_failure_is_a_model_error_with_advice(
    server: FakeMessagesServer, workspace: Path
) -> None:
    server.push(error_response(401, "authentication_error", "invalid x-api-key"))
    proc = agentcli("run", "hi", "--output-format", "json", server=server, cwd=workspace)
    assert proc.returncode == 1
    data = result_of(proc)
    assert data["terminal_reason"] == "model_error" and data["task_state"] == "failed"
    assert "ANTHROPIC_API_KEY" in data["error"]
    assert "Traceback" not in proc.stderr
    assert len(server.requests) == 1


def test_overload_and_broken_stream_are_retried(
    server: FakeMessagesServer, workspace: Path
) -> None:
    server.push(
        error_response(529, "overloaded_error", "Overloaded", retry_after="0"),
        SseResponse(events=message_events([tool_use("read_file", {"path": "zzz"})]), cut_after=6),
        stream_message([text("fine")]),
    )
    proc = agentcli("run", "hi", "--output-format", "json", server=server, cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    data = result_of(proc)
    assert data["final_text"] == "fine"
    assert data["tool_calls"] == []  # nothing from the broken response was executed
    assert len(server.requests) == 3


def test_max_turns_exits_3(server: FakeMessagesServer, workspace: Path) -> None:
    server.push(*[stream_message([tool_use("read_file", {"path": "nope"})]) for _ in range(2)])
    proc = agentcli(
        "run", "loop", "--max-turns", "2", "--output-format", "json", server=server, cwd=workspace
    )
    assert proc.returncode == 3
    data = result_of(proc)
    assert data["terminal_reason"] == "max_turns" and data["task_state"] == "budget_exhausted"
    assert data["turns"] == 2


def test_timeout_exits_3_while_the_model_hangs(server: FakeMessagesServer, workspace: Path) -> None:
    server.push(HangResponse(seconds=20))
    proc = agentcli(
        "run", "hi", "--timeout", "1", "--output-format", "json", server=server, cwd=workspace
    )
    assert proc.returncode == 3
    assert result_of(proc)["terminal_reason"] == "timeout"


def test_sigint_aborts_with_130(server: FakeMessagesServer, workspace: Path) -> None:
    server.push(HangResponse(seconds=30))
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentcli", "run", "hi", "--output-format", "json"],
        cwd=workspace,
        env=cli_env(server),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not server.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.requests, "agentcli never sent its request"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 130, err
    data = json.loads(out)
    assert data["task_state"] == "aborted" and data["terminal_reason"] == "aborted"


def test_truncated_tool_call_is_not_executed(server: FakeMessagesServer, workspace: Path) -> None:
    server.push(
        stream_message(
            [text("reading"), tool_use("read_file", {"path": "a.py"})],
            stop_reason="max_tokens",
            truncate_last_tool=True,
        ),
        stream_message([text("ok")]),
    )
    proc = agentcli("run", "hi", "--output-format", "json", server=server, cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    (call,) = result_of(proc)["tool_calls"]
    assert call["status"] == "not_executed" and call["is_error"]
    second = server.requests[1].body["messages"]
    assert "output token limit" in second[-1]["content"][0]["content"]


def test_refusal_exits_1(server: FakeMessagesServer, workspace: Path) -> None:
    server.push(stream_message([text("I can't help with that.")], stop_reason="refusal"))
    proc = agentcli("run", "bad", "--output-format", "json", server=server, cwd=workspace)
    assert proc.returncode == 1
    assert result_of(proc)["terminal_reason"] == "refused"


def test_recorded_pause_turn_is_continued(
    server: FakeMessagesServer, workspace: Path, recordings: Path
) -> None:
    paused = (recordings / "12a_pai_stream_pause_turn_web_search.interaction0.sse").read_text()
    server.push(raw_sse(paused), stream_message([text("Here is what I found.")]))
    proc = agentcli("run", "search", "--output-format", "json", server=server, cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    assert result_of(proc)["final_text"] == "Here is what I found."
    resent = server.requests[1].body["messages"][-1]
    assert resent["role"] == "assistant"
    assert any(b["type"] == "web_search_tool_result" for b in resent["content"])


def test_version_and_help_do_not_import_the_sdk(workspace: Path) -> None:
    probe = (
        "import sys\nfrom agentcli.ui.entry import main\n"
        "codes = [main(['--version']), main(['--help']), main(['run', '--help'])]\n"
        "print(codes, 'anthropic' in sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=workspace, timeout=60
    )
    assert proc.stdout.strip().endswith("[0, 0, 0] False"), proc.stdout + proc.stderr
