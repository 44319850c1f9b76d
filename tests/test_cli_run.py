"""`agentcli run` against the fake Messages API server: the command-line contract of SPEC §7
(the JSON result, stream-json, text mode stdout/stderr split, exit codes 0/1/2/3/4/130, stdin
handling).

What only a process shows runs the real binary (`agentcli(...)`): the JSON result on stdout
from a real start-up, the stdout/stderr split on real pipes, SIGINT, a command's child holding
stdout open, and what `--version`/`--help` import. The rest runs the same command line
in-process (`cli(...)`, see `tests.inprocess`): the SDK's import costs a process ~2 s.
"""

from __future__ import annotations

import datetime
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
from tests.inprocess import decoded, run_in_process

RESULT_KEYS = {
    # Claude Code's `-p --output-format json` names, so scripts written for it read ours.
    "type",
    "subtype",
    "is_error",
    "result",
    "num_turns",
    "duration_ms",
    "duration_api_ms",
    "total_cost_usd",
    # agentcli's own (SPEC §7).
    "session_id",
    "task_id",
    "task_state",
    "terminal_reason",
    "model",
    "stop_reason",
    "final_text",
    "turns",
    "duration_s",
    "duration_api_s",
    "usage",
    "cost_usd",
    "repair_rounds",
    "acceptance",
    "artifact_version",
    "changed_files",
    "tool_calls",
    "permission_denials",
    "hook_blocks",
    "commit",
    "commit_skipped",
    "subagents",
    "error",
    # Long sessions (issue #28).
    "compactions",
    "todos",
}
ACCEPTANCE_KEYS = {
    "command",
    "exit_code",
    "passed",
    "artifact_version",
    "output_tail",
    "duration_s",
    "round",
    "reused",
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


def cli(
    *args: str,
    server: FakeMessagesServer | None,
    cwd: Path,
    stdin: str | None = None,
    **env: str,
) -> subprocess.CompletedProcess[str]:
    """`agentcli(...)` run in-process (`tests.inprocess`): the same command line, environment
    and stdin, without the ~2 s a new process spends importing the SDK."""
    given = {} if server is None else {"ANTHROPIC_BASE_URL": server.base_url}
    if server is not None:
        given["ANTHROPIC_API_KEY"] = "test"
    done = run_in_process(*args, cwd=cwd, env={**given, **env}, stdin=stdin or "")
    return decoded(done)


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
    # Claude Opus 5.5 (the default): $4 input, $20 output, $0.20 cache reads per MTok, for
    # 100 in + 20 out, then 50 in + 7 out + 30 cache reads.
    assert data["cost_usd"] == pytest.approx((100 * 4 + 20 * 20 + 50 * 4 + 7 * 20 + 30 * 0.2) / 1e6)
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
    assert server.requests[0].body["model"] == "claude-opus-5-5"
    # The anchor's fields say the same as ours.
    assert (data["type"], data["subtype"], data["is_error"]) == ("result", "success", False)
    assert data["result"] == data["final_text"] and data["num_turns"] == data["turns"]
    assert data["total_cost_usd"] == data["cost_usd"]
    assert data["duration_ms"] == round(data["duration_s"] * 1000)
    assert 0 < data["duration_api_s"] <= data["duration_s"]
    assert data["model"] == "claude-opus-5-5" and data["stop_reason"] == "end_turn"
    assert data["repair_rounds"] == 0 and data["acceptance"] == []


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
    proc = cli("run", "hi", "--output-format", "stream-json", server=server, cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert events[-1]["type"] == "result" and set(events[-1]) == RESULT_KEYS | {"timestamp"}
    assert all(isinstance(e["type"], str) and e["timestamp"].endswith("+00:00") for e in events)
    stamps = [datetime.datetime.fromisoformat(e["timestamp"]) for e in events]
    assert stamps == sorted(stamps)
    init = events[0]
    assert init["type"] == "init" and init["schema_version"] == 1
    assert init["session_id"] == events[-1]["session_id"]
    assert init["cwd"] == str(workspace.resolve()) and init["model"] == "claude-opus-5-5"
    assert init["permission_mode"] == "default" and init["agentcli_version"]
    assert {"read_file", "write_file", "edit_file", "glob", "grep", "shell"} <= set(init["tools"])
    # The golden sequence of a one-turn answer (deltas collapsed).
    types = [
        t for n, t in enumerate(e["type"] for e in events) if n == 0 or t != events[n - 1]["type"]
    ]
    assert types == [
        "init",
        "task_started",
        "turn_started",
        "text_delta",
        "usage",
        "model_responded",
        "result",
    ], types
    assert "".join(e["text"] for e in events if e["type"] == "text_delta") == "hello world"


def test_task_from_stdin_and_stdin_as_context(server: FakeMessagesServer, workspace: Path) -> None:
    server.push(stream_message([text("one")]), stream_message([text("two")]))
    assert cli("run", "-", server=server, cwd=workspace, stdin="task from stdin").returncode == 0
    assert (
        cli("run", "review this", server=server, cwd=workspace, stdin="diff --git a b").returncode
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
    proc = cli(*args, server=server, cwd=workspace)
    assert proc.returncode == 2
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr
    assert server.requests == []


def test_missing_api_key_exits_2_naming_the_variable(workspace: Path) -> None:
    proc = cli("run", "hi", server=None, cwd=workspace)
    assert proc.returncode == 2
    assert "ANTHROPIC_API_KEY" in proc.stderr


def test_auth_failure_is_a_model_error_with_advice(
    server: FakeMessagesServer, workspace: Path
) -> None:
    server.push(error_response(401, "authentication_error", "invalid x-api-key"))
    proc = cli("run", "hi", "--output-format", "json", server=server, cwd=workspace)
    assert proc.returncode == 1
    data = result_of(proc)
    assert data["terminal_reason"] == "model_error" and data["task_state"] == "failed"
    assert "ANTHROPIC_API_KEY" in data["error"]
    assert "Traceback" not in proc.stderr
    assert len(server.requests) == 1


def test_overload_and_broken_stream_are_retried(
    server: FakeMessagesServer, workspace: Path
) -> None:
    # The broken stream first: a failure without retry-after waits our own backoff, which is
    # shortest for the first retry (~1 s; the 529 asks for none).
    server.push(
        SseResponse(events=message_events([tool_use("read_file", {"path": "zzz"})]), cut_after=6),
        error_response(529, "overloaded_error", "Overloaded", retry_after="0"),
        stream_message([text("fine")]),
    )
    proc = cli("run", "hi", "--output-format", "json", server=server, cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    data = result_of(proc)
    assert data["final_text"] == "fine"
    assert data["tool_calls"] == []  # nothing from the broken response was executed
    assert len(server.requests) == 3


def test_max_turns_exits_3(server: FakeMessagesServer, workspace: Path) -> None:
    server.push(*[stream_message([tool_use("read_file", {"path": "nope"})]) for _ in range(2)])
    proc = cli(
        "run", "loop", "--max-turns", "2", "--output-format", "json", server=server, cwd=workspace
    )
    assert proc.returncode == 3
    data = result_of(proc)
    assert data["terminal_reason"] == "max_turns" and data["task_state"] == "budget_exhausted"
    assert data["turns"] == 2


def test_timeout_exits_3_while_the_model_hangs(server: FakeMessagesServer, workspace: Path) -> None:
    server.push(HangResponse(seconds=20))
    proc = cli(
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
    proc = cli("run", "hi", "--output-format", "json", server=server, cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    (call,) = result_of(proc)["tool_calls"]
    assert call["status"] == "not_executed" and call["is_error"]
    second = server.requests[1].body["messages"]
    assert "output token limit" in second[-1]["content"][0]["content"]


def test_refusal_exits_1(server: FakeMessagesServer, workspace: Path) -> None:
    server.push(stream_message([text("I can't help with that.")], stop_reason="refusal"))
    proc = cli("run", "bad", "--output-format", "json", server=server, cwd=workspace)
    assert proc.returncode == 1
    assert result_of(proc)["terminal_reason"] == "refused"


def test_recorded_pause_turn_is_continued(
    server: FakeMessagesServer, workspace: Path, recordings: Path
) -> None:
    paused = (recordings / "12a_pai_stream_pause_turn_web_search.interaction0.sse").read_text()
    server.push(raw_sse(paused), stream_message([text("Here is what I found.")]))
    # The model that produced the recording: its thinking block carries a real signature.
    proc = cli(
        "run",
        "search",
        "-m",
        "claude-sonnet-4-5",
        "--output-format",
        "json",
        server=server,
        cwd=workspace,
    )
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


def test_a_background_process_holding_stdout_open_does_not_break_the_exit(
    server: FakeMessagesServer, workspace: Path
) -> None:
    """An unconfined command whose child starts its own session keeps the output pipe open
    after agentcli is done with it: the exit is still clean (no 'Event loop is closed')."""
    # The command waits for the child's pid file, so the file exists once agentcli is done
    # (without the wait, a loaded machine ran the test before the child had written it).
    command = (
        "setsid sh -c 'echo $$ > escaped.pid.tmp && mv escaped.pid.tmp escaped.pid; sleep 300' & "
        "while [ ! -s escaped.pid ]; do sleep 0.01; done; echo started"
    )
    server.push(
        stream_message([tool_use("shell", {"command": command}, id="toolu_1")]),
        stream_message([text("done")]),
    )
    proc = agentcli(
        "run",
        "go",
        "--permission-mode",
        "yolo",
        "--output-format",
        "json",
        server=server,
        cwd=workspace,
    )
    escaped = int((workspace / "escaped.pid").read_text())
    try:
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr and "Event loop is closed" not in proc.stderr
        assert json.loads(proc.stdout)["final_text"] == "done"
    finally:
        os.killpg(escaped, signal.SIGKILL)  # its own session's group: the sh and its sleep


def test_a_stalled_stream_is_said_on_stderr_and_retried(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path
) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.toml").write_text("[api]\nidle_timeout_s = 1\n")
    server.push(
        SseResponse(events=message_events([text("never finished")]), stall_after=3),
        stream_message([text("whole answer")]),
    )
    proc = cli("run", "hi", server=server, cwd=workspace, AGENTCLI_CONFIG_DIR=str(config))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "whole answer\n"
    assert "the response stream stalled: nothing received for 1 s); retry 1 in" in proc.stderr


def test_piped_into_agentcli_without_a_command_runs_the_task(
    server: FakeMessagesServer, workspace: Path
) -> None:
    server.push(stream_message([text("ran it")]), stream_message([text("ran that")]))
    piped = cli(server=server, cwd=workspace, stdin="task from a pipe")
    assert (piped.returncode, piped.stdout) == (0, "ran it\n"), piped.stderr
    given = cli("summarise this", server=server, cwd=workspace, stdin="some context")
    assert (given.returncode, given.stdout) == (0, "ran that\n"), given.stderr
    first = server.requests[0].body["messages"][0]["content"][0]["text"]
    second = server.requests[1].body["messages"][0]["content"][0]["text"]
    assert first == "task from a pipe"
    assert second.startswith("summarise this") and "<stdin>\nsome context\n</stdin>" in second


def test_the_instruction_files_are_sent_and_named_on_stderr(
    server: FakeMessagesServer, workspace: Path
) -> None:
    (workspace / "CLAUDE.md").write_text("Run make check before you finish.")
    server.push(stream_message([text("ok")]), stream_message([text("ok")]))
    proc = cli("run", "hi", server=server, cwd=workspace)
    assert proc.returncode == 0 and "instructions from CLAUDE.md" in proc.stderr
    system = json.dumps(server.requests[0].body["system"])
    assert "Run make check before you finish." in system
    quiet = cli("run", "hi", "-q", server=server, cwd=workspace)
    assert quiet.returncode == 0 and "instructions from" not in quiet.stderr


def test_an_at_mention_attaches_the_file_and_a_missing_one_is_said(
    server: FakeMessagesServer, workspace: Path
) -> None:
    (workspace / "app.py").write_text("print('attached content')\n")
    server.push(stream_message([text("ok")]))
    proc = cli("run", "explain @app.py and @gone.py", server=server, cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    assert "@gone.py not attached: gone.py does not exist" in proc.stderr
    sent = server.requests[0].body["messages"][0]["content"][0]["text"]
    assert sent.startswith("explain @app.py and @gone.py\n\n")
    assert "print('attached content')" in sent


def test_a_continued_task_that_fails_never_reports_the_previous_answer(
    server: FakeMessagesServer, workspace: Path
) -> None:
    server.push(
        stream_message([text("The first answer.")]),
        error_response(400, "invalid_request_error", "something about the request"),
    )
    first = cli("run", "one", "--output-format", "json", server=server, cwd=workspace)
    assert result_of(first)["final_text"] == "The first answer."
    second = cli(
        "run", "--continue", "two", "--output-format", "json", server=server, cwd=workspace
    )
    data = result_of(second)
    assert second.returncode == 1 and data["terminal_reason"] == "model_error"
    assert data["final_text"] is None and data["result"] is None
    assert data["stop_reason"] is None and data["turns"] == 1
