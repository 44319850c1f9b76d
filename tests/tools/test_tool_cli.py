"""`agentcli run` (in-process) offers the six built-in tools to the model and executes them."""

from __future__ import annotations

import json
from pathlib import Path

from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text, tool_use
from tests.test_cli_run import cli


def test_run_offers_and_executes_the_builtin_tools(workspace: Path) -> None:
    (workspace / "a.py").write_text("print('hi')\n")
    with FakeMessagesServer() as server:
        server.push(
            stream_message(
                [
                    tool_use("glob", {"pattern": "*.py"}, id="g1"),
                    tool_use("grep", {"pattern": "print", "output_mode": "content"}, id="g2"),
                    tool_use("write_file", {"path": "b.py", "content": "x = 1\n"}, id="w1"),
                    tool_use("shell", {"command": "echo hi", "bogus": 1}, id="s1"),
                ]
            ),
            stream_message([text("done")]),
        )
        proc = cli(
            *("run", "look", "--output-format", "json", "--permission-mode", "accept-edits"),
            server=server,
            cwd=workspace,
        )
        assert server.pairing_problems() == []
        first, second = server.requests[0].body, server.requests[1].body
    assert proc.returncode == 0, proc.stderr
    offered = [tool["name"] for tool in first["tools"]]
    # The built-in tools, the todo list's (offered by default: `[tools] todo`), then the
    # subagent tool (`agentcli.agents`).
    assert offered == [
        "read_file",
        "write_file",
        "edit_file",
        "glob",
        "grep",
        "shell",
        "todo_write",
        "agent",
    ]
    data = json.loads(proc.stdout)
    statuses = {call["id"]: (call["status"], call["is_error"]) for call in data["tool_calls"]}
    assert statuses == {
        "g1": ("succeeded", False),
        "g2": ("succeeded", False),
        "w1": ("succeeded", False),
        "s1": ("failed", True),
    }
    assert (workspace / "b.py").read_text() == "x = 1\n"
    results = {block["tool_use_id"]: block for block in second["messages"][-1]["content"]}
    assert results["g1"]["content"] == "a.py"
    assert "1:print('hi')" in results["g2"]["content"]
    assert "unknown field 'bogus'" in results["s1"]["content"]
