"""Without a terminal nothing can be asked: an `ask` is a denial at once, never a hang. The model
hears which rule would allow the call, the denials are in the JSON result, and the task stops
with `permission_denied` (exit 4) after the configured number of denials."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text, tool_use
from agentcli.trust import set_trusted
from tests.inprocess import decoded, run_in_process


@pytest.fixture
def server() -> Iterator[FakeMessagesServer]:
    with FakeMessagesServer() as fake:
        yield fake
        assert fake.pairing_problems() == []


def run_agentcli(
    server: FakeMessagesServer, workspace: Path, *args: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """`agentcli run - --output-format json ARGS`, in-process, the task piped in (stdin is a
    pipe, not a terminal)."""
    env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test"}
    proc = decoded(
        run_in_process(
            *("run", "-", "--output-format", "json", *args),
            cwd=workspace,
            env=env,
            stdin="set the project up",
        )
    )
    return proc, json.loads(proc.stdout.strip().splitlines()[-1])


def tool_result_text(server: FakeMessagesServer, request: int) -> str:
    content = server.requests[request].body["messages"][-1]["content"]
    return "".join(
        block["content"] if isinstance(block["content"], str) else json.dumps(block["content"])
        for block in content
        if block.get("type") == "tool_result"
    )


def test_asks_become_denials_that_name_the_rule_and_stop_after_three(
    server: FakeMessagesServer, workspace: Path
) -> None:
    server.push(
        stream_message([tool_use("shell", {"command": "npm install"}, id="c1")]),
        stream_message([tool_use("write_file", {"path": "src/app.py", "content": "x\n"}, id="c2")]),
        stream_message([tool_use("shell", {"command": "git push --force"}, id="c3")]),
        stream_message([text("unreachable")]),
    )
    proc, result = run_agentcli(server, workspace)
    assert proc.returncode == 4, proc.stderr
    assert result["terminal_reason"] == "permission_denied"
    assert [d["tool"] for d in result["permission_denials"]] == ["shell", "write_file", "shell"]
    first = tool_result_text(server, 1)
    assert "permission denied" in first and "no terminal" in first
    assert "--allow 'shell(npm install *)'" in first
    assert "--allow 'write(src/**)'" in tool_result_text(server, 2)
    assert not (workspace / "src" / "app.py").exists()
    assert server.remaining == 1


def test_the_denial_limit_comes_from_config(server: FakeMessagesServer, workspace: Path) -> None:
    (workspace / ".agentcli").mkdir()
    (workspace / ".agentcli" / "config.toml").write_text("[permissions]\ndenial_limit = 1\n")
    server.push(
        stream_message([tool_use("shell", {"command": "make deploy"}, id="c1")]),
        stream_message([text("unreachable")]),
    )
    proc, result = run_agentcli(server, workspace)
    assert proc.returncode == 4, proc.stderr
    assert len(result["permission_denials"]) == 1
    assert server.remaining == 1


def test_allow_flags_and_config_rules_let_calls_through(
    server: FakeMessagesServer, workspace: Path
) -> None:
    (workspace / ".agentcli").mkdir()
    (workspace / ".agentcli" / "config.toml").write_text('allow = ["write(src/**)"]\n')
    set_trusted(workspace, True)
    server.push(
        stream_message([tool_use("shell", {"command": "echo built > out.txt"}, id="c1")]),
        stream_message([tool_use("write_file", {"path": "src/a.py", "content": "a\n"}, id="c2")]),
        stream_message([text("done")]),
    )
    proc, result = run_agentcli(server, workspace, "--allow", "shell(*)", "--deny", "read(.env)")
    assert proc.returncode == 0, proc.stderr
    assert result["permission_denials"] == []
    assert (workspace / "out.txt").read_text() == "built\n"
    assert (workspace / "src" / "a.py").read_text() == "a\n"


def test_a_malformed_rule_is_a_usage_error(workspace: Path) -> None:
    proc = decoded(
        run_in_process(
            "run", "x", "--allow", "shell(pytest", cwd=workspace, env={"ANTHROPIC_API_KEY": "test"}
        )
    )
    assert proc.returncode == 2
    assert "invalid permission rule 'shell(pytest'" in proc.stderr


def test_the_prompter_never_reads_an_open_stdin_pipe(workspace: Path) -> None:
    """A policy `ask` inside a process whose stdin is a pipe nobody writes to or closes."""
    script = textwrap.dedent(
        f"""
        import asyncio
        from pathlib import Path
        from agentcli.messages import ToolUseBlock
        from agentcli.permissions import NonInteractivePrompter, PermissionMode
        from agentcli.permissions.setup import build_policy
        from agentcli.store import MemoryJournal
        from agentcli.tools.base import ToolContext
        from agentcli.tools.builtin import builtin_tools
        from agentcli.tools.runtime import ToolRuntime

        ws = Path({str(workspace)!r})
        runtime = ToolRuntime(
            builtin_tools(),
            ctx=ToolContext(workspace=ws, data_dir=ws / ".data"),
            policy=build_policy(mode=PermissionMode.DEFAULT, workspace=ws,
                                sandbox_available=True),
            prompter=NonInteractivePrompter(),
            journal=MemoryJournal(),
            events=lambda event: None,
        )
        calls = [ToolUseBlock(id="c1", name="shell", input={{"command": "touch made"}})]
        records = runtime.propose(calls)
        asyncio.run(runtime.execute(calls, records))
        print(records[0].status.value, records[0].result_text)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        proc.wait(timeout=30)  # stdin stays open the whole time
        out, err = proc.stdout.read(), proc.stderr.read()
    finally:
        proc.kill()
        proc.stdin.close()
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == 0, err
    assert out.startswith("denied") and "shell(touch *)" in out
    assert not (workspace / "made").exists()
