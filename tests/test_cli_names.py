"""`agentcli` in a workspace whose own path is not UTF-8, holding files whose names are not
UTF-8 either (made on disk for real, before the task and by a command of it). `run`,
`sessions list|export` and `undo` exit as the README says, print no traceback, and their JSON
parses; the names in it are the exact bytes (`os.fsencode` of the string), and the model is
sent valid Unicode with each such byte spelled `\\xNN`.

The commands run in-process (`tests.inprocess`); a prompt that is not UTF-8 goes through the
real binary, since it reaches agentcli as bytes in argv."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agentcli
from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text, tool_use
from tests.inprocess import decoded, run_in_process

CHECKOUT = Path(agentcli.__file__).resolve().parents[1]


@pytest.fixture
def server() -> Iterator[FakeMessagesServer]:
    with FakeMessagesServer() as fake:
        yield fake
        assert fake.pairing_problems() == []


def run(*args: str, cwd: Path, server: FakeMessagesServer) -> tuple[int, str, str]:
    """Run `agentcli ARGS` in-process; its exit code, stdout and stderr (valid UTF-8)."""
    env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test"}
    done = decoded(run_in_process(*args, cwd=cwd, env=env))
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


def binary(*args: str, cwd: Path, server: FakeMessagesServer) -> tuple[int, str, str]:
    """Run the real binary `agentcli ARGS`; its exit code, stdout and stderr (valid UTF-8)."""
    env = {
        **os.environ,
        "ANTHROPIC_BASE_URL": server.base_url,
        "ANTHROPIC_API_KEY": "test",
        "PYTHONPATH": str(CHECKOUT),  # this checkout's agentcli, in whatever directory
    }
    done = subprocess.run(
        [sys.executable, "-m", "agentcli", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=False,
    )
    out, err = done.stdout.decode("utf-8"), done.stderr.decode("utf-8")
    assert "Traceback" not in err and "internal error" not in err, err
    return done.returncode, out, err


def one_json_object(out: str) -> dict[str, Any]:
    lines = out.splitlines()
    assert len(lines) == 1, out
    data: dict[str, Any] = json.loads(lines[0])
    return data


def named(directory: Path, raw: bytes) -> Path:
    return Path(os.fsdecode(os.fsencode(directory) + b"/" + raw))


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict | list):
        for item in value.values() if isinstance(value, dict) else value:
            yield from strings(item)


def sent_text(server: FakeMessagesServer) -> str:
    """Every string the model was sent (in the requests as the fake server parsed them)."""
    return "\n".join(s for request in server.requests for s in strings(request.body))


@pytest.mark.parametrize("in_git", [True, False], ids=["git", "plain"])
def test_run_sessions_and_undo_in_a_workspace_that_is_not_utf8(
    tmp_path: Path, server: FakeMessagesServer, in_git: bool
) -> None:
    workspace = named(tmp_path, b"ws-\xff")
    workspace.mkdir()
    named(workspace, b"old-\xfe.txt").write_bytes(b"old\n")
    if in_git:
        subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    server.push(
        stream_message([tool_use("shell", {"command": "printf new > $'new-\\xfd.txt'"})]),
        stream_message([tool_use("glob", {"pattern": "*.txt"})]),
        stream_message([tool_use("read_file", {"path": "old-\\xfe.txt"})]),
        stream_message([tool_use("write_file", {"path": "old-\\xfe.txt", "content": "edit\n"})]),
        stream_message([text("Done.")]),
    )
    code, out, _ = run(
        *("run", "change the files", "--output-format", "json", "--permission-mode", "yolo"),
        cwd=workspace,
        server=server,
    )
    assert code == 0
    result = one_json_object(out)
    assert result["task_state"] == "unverified"
    assert all(call["status"] == "succeeded" for call in result["tool_calls"])
    assert sorted(os.fsencode(name) for name in result["changed_files"]) == [
        b"new-\xfd.txt",
        b"old-\xfe.txt",
    ]
    sent = sent_text(server)
    assert "ws-\\xff" in sent and "new-\\xfd.txt" in sent and "old-\\xfe.txt" in sent
    assert named(workspace, b"old-\xfe.txt").read_bytes() == b"edit\n"

    server.push(stream_message([text("Still here.")]))
    code, out, _ = run(
        *("run", "--continue", "anything else?", "--output-format", "stream-json"),
        cwd=workspace,
        server=server,
    )
    assert code == 0
    events = [json.loads(line) for line in out.splitlines()]
    assert events[-1]["type"] == "result" and events[-1]["session_id"] == result["session_id"]

    code, out, _ = run("sessions", "list", cwd=workspace, server=server)
    assert code == 0 and result["session_id"] in out
    code, out, _ = run("sessions", "list", "--all", cwd=workspace, server=server)
    assert code == 0 and "ws-\\udcff" in out  # shown with the escape every hidden char gets
    code, out, _ = run("sessions", "export", result["session_id"], cwd=workspace, server=server)
    assert code == 0
    assert os.fsencode(json.loads(out)["session"]["workspace"]) == os.fsencode(workspace)

    code, out, _ = run("undo", cwd=workspace, server=server)
    assert code == 0
    assert "removed new-\\udcfd.txt" in out and "restored old-\\udcfe.txt" in out
    assert named(workspace, b"old-\xfe.txt").read_bytes() == b"old\n"
    assert not named(workspace, b"new-\xfd.txt").exists()
    code, out, err = run("undo", cwd=workspace, server=server)
    assert code == 1 and out == "" and "no task in" in err and "ws-\\udcff" in err


def test_a_prompt_that_is_not_utf8_reaches_the_model_and_the_journal(
    workspace: Path, server: FakeMessagesServer
) -> None:
    server.push(stream_message([text("ok")]))
    prompt = os.fsdecode(b"explain caf\xe9.txt")  # argv bytes, as Python decodes them
    code, out, _ = binary("run", prompt, "--output-format", "json", cwd=workspace, server=server)
    assert code == 0 and one_json_object(out)["task_state"] == "unverified"
    assert "explain caf\\xe9.txt" in sent_text(server)
    code, out, _ = binary("sessions", "list", cwd=workspace, server=server)
    assert code == 0 and "explain caf\\udce9.txt" in out
