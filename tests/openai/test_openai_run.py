"""`agentcli run --provider openai` against the fake Chat Completions server, in-process (the
command line, the session core, the loop, the tools and the real adapter), plus one run of the
real binary: the same exit codes and JSON result as on Anthropic."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcli.session.records import export
from agentcli.testing.fake_openai import FakeChatServer, call, chat_error, chat_stream
from agentcli.testing.fake_responses import HangResponse
from agentcli.ui.cli import run_app
from tests.test_cli_run import RESULT_KEYS


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeChatServer]:
    with FakeChatServer() as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        yield fake
        assert fake.pairing_problems() == []


@pytest.fixture(autouse=True)
def _in_process(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`run` in this process: stdin is an empty pipe, and the signal handlers `run` leaves for
    the process's exit are put back."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def run(
    capsys: pytest.CaptureFixture[str], workspace: Path, *args: str, fmt: str = "json"
) -> tuple[int, Any, str]:
    """`agentcli run --provider openai -m fake-model ARGS`: exit code, result, stderr."""
    code = run_app(
        [
            *("run", "--provider", "openai", "-m", "fake-model", "-C", str(workspace)),
            "--output-format",
            fmt,
            *args,
        ]
    )
    out, err = capsys.readouterr()
    if fmt == "json":
        lines = out.strip().splitlines()
        assert len(lines) == 1, out + err
        result = json.loads(lines[0])
        assert set(result) == RESULT_KEYS
        return code, result, err
    return code, [json.loads(line) for line in out.splitlines()], err


def test_a_text_answer_is_the_same_result_as_on_anthropic(
    server: FakeChatServer, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.push(
        chat_stream("It is a repository.", usage={"prompt_tokens": 90, "completion_tokens": 6})
    )
    code, data, err = run(capsys, workspace, "what is this")
    assert code == 0
    assert "model 'fake-model' is not described in your config: its cost is reported as" in err
    assert (data["type"], data["subtype"], data["is_error"]) == ("result", "success", False)
    assert data["task_state"] == "unverified" and data["terminal_reason"] == "completed"
    assert data["final_text"] == data["result"] == "It is a repository."
    assert data["model"] == "fake-model" and data["stop_reason"] == "end_turn"
    assert data["usage"] == {
        "input_tokens": 90,
        "output_tokens": 6,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }
    # Nobody told agentcli this model's price: unknown, never 0.
    assert data["cost_usd"] is None and data["total_cost_usd"] is None
    body = server.requests[0].body
    assert body["model"] == "fake-model" and body["messages"][0]["role"] == "system"
    # The session records its provider, so resuming it goes back to the same server.
    assert export(data["session_id"])["session"]["settings"]["provider"] == "openai"
    assert {t["function"]["name"] for t in body["tools"]} >= {"read_file", "shell", "write_file"}


def test_multi_turn_tool_calls_and_their_results_as_tool_messages(
    server: FakeChatServer, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workspace / "a.py").write_text("print('a')\n")
    (workspace / "b.py").write_text("print('b')\n")
    server.push(
        chat_stream("Reading a.", [call("read_file", {"path": "a.py"}, id="call_one")]),
        chat_stream(
            tool_calls=[
                call("read_file", {"path": "a.py"}, id="call_two"),
                call("read_file", {"path": "b.py"}, id="call_three"),
            ],
            piece=2,
        ),
        chat_stream("Both print a letter."),
    )
    code, data, _err = run(capsys, workspace, "what do a.py and b.py do")
    assert code == 0 and data["turns"] == 3
    assert [(c["id"], c["input"], c["status"]) for c in data["tool_calls"]] == [
        ("call_one", {"path": "a.py"}, "succeeded"),
        ("call_two", {"path": "a.py"}, "succeeded"),
        ("call_three", {"path": "b.py"}, "succeeded"),
    ]
    second = server.requests[1].body["messages"]
    assert second[-2]["tool_calls"][0]["id"] == "call_one"
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == "call_one"
    assert "print('a')" in second[-1]["content"]
    third = server.requests[2].body["messages"]
    assert [(m["role"], m.get("tool_call_id")) for m in third[-2:]] == [
        ("tool", "call_two"),
        ("tool", "call_three"),
    ]
    assert "print('b')" in third[-1]["content"]
    assert data["usage"]["input_tokens"] == 300 and data["usage"]["output_tokens"] == 60


def test_a_call_cut_at_length_is_not_run(
    server: FakeChatServer, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.push(
        chat_stream(
            tool_calls=[call("write_file", {"path": "new.txt", "content": "x" * 40})],
            finish_reason="length",
            cut_last_call=True,
        ),
        chat_stream("I will write it in parts."),
    )
    code, data, _err = run(capsys, workspace, "write new.txt", "--permission-mode", "accept-edits")
    assert code == 0
    (record,) = data["tool_calls"]
    assert record["status"] == "not_executed" and record["is_error"]
    assert not (workspace / "new.txt").exists()
    answer = server.requests[1].body["messages"][-1]
    assert answer["role"] == "tool" and "output token limit" in answer["content"]


def test_a_dropped_stream_is_asked_again_and_nothing_runs_twice(
    server: FakeChatServer, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    append = call("shell", {"command": "echo ran >> count.txt"}, id="call_append")
    server.push(
        chat_stream(tool_calls=[append], cut_after=4),  # cut inside the arguments
        chat_stream(tool_calls=[append]),
        chat_stream("Appended."),
    )
    code, events, err = run(
        capsys, workspace, "append", "--permission-mode", "yolo", fmt="stream-json"
    )
    assert code == 0, err
    assert (workspace / "count.txt").read_text() == "ran\n"
    retries = [e for e in events if e["type"] == "model_retrying"]
    assert len(retries) == 1 and "stream broke" in retries[0]["reason"]
    assert [c["status"] for c in events[-1]["tool_calls"]] == ["succeeded"]
    assert len(server.requests) == 3


def test_429_and_500_are_retried_as_the_server_asks(
    server: FakeChatServer, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.push(
        chat_error(429, "Rate limit reached", "rate_limit_exceeded", retry_after="0.01"),
        chat_error(500, "internal", "server_error", retry_after_ms="20"),
        chat_stream("fine"),
    )
    code, events, _err = run(capsys, workspace, "hi", fmt="stream-json")
    assert code == 0
    retries = [
        (e["attempt"], e["delay_s"], e["reason"]) for e in events if e["type"] == "model_retrying"
    ]
    assert retries == [
        (1, 0.01, "429 rate_limit_exceeded: Rate limit reached"),
        (2, 0.02, "500 server_error: internal"),
    ]
    assert events[-1]["final_text"] == "fine"


def test_5xx_until_retries_run_out_is_a_model_error(
    server: FakeChatServer, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.push(*(chat_error(503, "down", "server_error", retry_after="0") for _ in range(5)))
    code, data, err = run(capsys, workspace, "hi")
    assert code == 1
    assert data["terminal_reason"] == "model_error" and data["subtype"] == "error_model_error"
    assert "503 server_error: down (gave up after 5 attempts)" in data["error"]
    assert "retry 4" in err


@pytest.mark.parametrize(
    ("status", "etype", "says"),
    [
        (400, "invalid_request_error", "400 invalid_request_error: nope"),
        (401, "invalid_api_key", "(check OPENAI_API_KEY (the server rejected it))"),
        (404, "model_not_found", "check the model name (-m/--model) and OPENAI_BASE_URL"),
    ],
)
def test_client_errors_end_the_task_with_what_to_fix(
    server: FakeChatServer,
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
    status: int,
    etype: str,
    says: str,
) -> None:
    server.push(chat_error(status, "nope", etype))
    code, data, _err = run(capsys, workspace, "hi")
    assert code == 1 and len(server.requests) == 1
    assert data["terminal_reason"] == "model_error" and data["task_state"] == "failed"
    assert says in data["error"]


def test_a_price_from_the_config_gives_a_cost(
    server: FakeChatServer, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = Path(os.environ["AGENTCLI_CONFIG_DIR"]) / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[models."fake-model"]\ninput = 1.0\noutput = 2.0\ncontext_window = 32768\n')
    server.push(chat_stream("ok", usage={"prompt_tokens": 1000, "completion_tokens": 500}))
    code, data, _err = run(capsys, workspace, "hi")
    assert code == 0
    assert data["cost_usd"] == pytest.approx((1000 * 1.0 + 500 * 2.0) / 1e6)
    # A server that reports no usage: the price is known, the cost is not (never 0).
    server.push(chat_stream("ok", with_usage=False))
    code, data, err = run(capsys, workspace, "hi")
    assert code == 0 and data["cost_usd"] is None
    assert "the server reports no token usage" in err


def test_no_key_for_a_remote_server_is_a_config_error_before_any_request(
    workspace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "https://models.example/v1")
    code, data, err = run(capsys, workspace, "hi")
    assert code == 2
    assert data["terminal_reason"] == "config_error" and data["session_id"] == ""
    assert "OPENAI_API_KEY is not set" in data["error"] and "OPENAI_API_KEY" in err


def test_no_key_for_a_server_on_this_machine_is_fine(
    server: FakeChatServer,
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    server.push(chat_stream("local"))
    code, data, _err = run(capsys, workspace, "hi")
    assert code == 0 and data["final_text"] == "local"
    assert "authorization" not in server.requests[0].headers


def test_the_provider_needs_a_model_and_a_known_name(
    server: FakeChatServer, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_app(["run", "hi", "--provider", "openai", "-C", str(workspace)])
    assert code == 2 and "needs a model" in capsys.readouterr().err
    code = run_app(["run", "hi", "--provider", "bard", "-m", "x", "-C", str(workspace)])
    assert code == 2 and "unknown provider 'bard'" in capsys.readouterr().err
    assert server.requests == []


def test_the_environment_and_the_repl_options_choose_the_provider_too(
    server: FakeChatServer,
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server.push(chat_stream("from env"), chat_stream("from the root options"))
    monkeypatch.setenv("AGENTCLI_PROVIDER", "openai")
    monkeypatch.setenv("AGENTCLI_MODEL", "fake-model")
    assert run_app(["run", "hi", "-q", "-C", str(workspace)]) == 0
    assert capsys.readouterr().out == "from env\n"
    monkeypatch.delenv("AGENTCLI_PROVIDER")
    # Options before the task are the REPL's; without a terminal they run the task.
    code = run_app(["--provider", "openai", "-m", "fake-model", "-C", str(workspace), "hi"])
    assert code == 0 and capsys.readouterr().out == "from the root options\n"
    assert [r.body["model"] for r in server.requests] == ["fake-model", "fake-model"]


def test_the_real_binary_exits_0_with_the_json_result(
    server: FakeChatServer, workspace: Path
) -> None:
    server.push(
        chat_stream(tool_calls=[call("read_file", {"path": "nope.py"}, id="call_x")]),
        chat_stream("There is no nope.py."),
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentcli",
            *("run", "look", "--provider", "openai", "-m"),
            "fake-model",
            "--output-format",
            "json",
        ],
        cwd=workspace,
        env=dict(os.environ),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stdout.strip().splitlines()
    data = json.loads(line)
    assert set(data) == RESULT_KEYS
    assert data["final_text"] == "There is no nope.py." and data["cost_usd"] is None
    assert data["tool_calls"] == [
        {
            "id": "call_x",
            "name": "read_file",
            "input": {"path": "nope.py"},
            "status": "failed",
            "is_error": True,
        }
    ]
    assert server.requests[1].body["messages"][-1]["content"].startswith("Error: ")


def test_doctor_says_where_requests_go_and_whether_a_key_is_needed(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentcli.ui.doctor import doctor_lines

    monkeypatch.setenv("AGENTCLI_PROVIDER", "openai")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    lines = doctor_lines(workspace)
    assert (
        "provider: openai, at http://localhost:11434/v1; key: none (not needed: the server is "
        "on this machine)" in lines
    )
    monkeypatch.setenv("OPENAI_BASE_URL", "https://models.example/v1")
    assert any("key: missing (export OPENAI_API_KEY=…)" in line for line in doctor_lines(workspace))


def test_a_resumed_session_keeps_its_recorded_provider_unless_told_otherwise(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentcli.config import flags_of, load_settings
    from agentcli.provider import Provider
    from agentcli.session.build import SessionTarget, session_provider
    from agentcli.store.queries import SessionRow

    row = SessionRow(
        id="s1",
        workspace=str(workspace),
        model="fake-model",
        settings={"provider": "openai"},
        created_at=0.0,
        updated_at=0.0,
    )
    resumed = SessionTarget(workspace=workspace, resumed=row)
    plain = load_settings(workspace)
    assert plain.catalogue().find("opus") is not None
    kept = session_provider(resumed, plain)
    assert kept.provider is Provider.OPENAI and kept.catalogue().find("opus") is None
    flagged = load_settings(workspace, flags=flags_of(provider="anthropic"))
    assert session_provider(resumed, flagged).provider is Provider.ANTHROPIC
    monkeypatch.setenv("AGENTCLI_PROVIDER", "anthropic")
    assert session_provider(resumed, load_settings(workspace)).provider is Provider.ANTHROPIC
    assert session_provider(SessionTarget(workspace=workspace), plain) is plain


def test_the_time_limit_ends_a_request_the_server_never_answers(
    server: FakeChatServer, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.push(HangResponse(seconds=20))
    code, data, _err = run(capsys, workspace, "hi", "--timeout", "1")
    assert code == 3
    assert data["terminal_reason"] == "timeout" and data["task_state"] == "budget_exhausted"
