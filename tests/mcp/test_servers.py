"""Real MCP servers (tests/mcp/servers) reached by the model through a session built as `run`
builds it: stdio and streamable HTTP, a nested schema, a tool that raises, an image, servers
that crash or hang at start or die mid-session, and servers stopped when the hub closes."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import agentcli.ui.run as run_module
from agentcli.events import Event, McpServerFailed, ToolCallStarted
from agentcli.mcp.config import ConfiguredServer
from agentcli.mcp.hub import McpHub
from agentcli.mcp_entry import ServerEntry
from agentcli.model import ModelRequest
from agentcli.session.options import SessionOptions
from agentcli.testing import ScriptedModel, respond, text, tool_use
from agentcli.tools.process_group import group_alive
from agentcli.ui.run import open_run_session
from tests.mcp.conftest import BROKEN, DEMO, TOKEN, stdio, write_servers


@pytest.fixture
def said(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the session says on stderr at the start (`say`)."""
    lines: list[str] = []
    monkeypatch.setattr(run_module, "say", lines.append)
    return lines


def session(
    workspace: Path,
    servers: dict[str, dict[str, Any]],
    steps: list[Any],
    events: list[Event],
    **options: Any,
) -> tuple[Any, ScriptedModel]:
    config = write_servers(workspace.parent / "servers.json", servers)
    model = ScriptedModel(steps)
    manager = open_run_session(
        SessionOptions(task="x", cwd=workspace, mcp_config=[config], **options),
        events.append,
        model_factory=lambda _name: model,
    )
    return manager, model


def results(manager: Any) -> dict[str, tuple[str, bool]]:
    """tool_use id → (result text, is_error), from the last user message."""
    last = manager.messages[-2]
    return {block.tool_use_id: (block.content, block.is_error) for block in last.content}


def running(pid: int) -> bool:
    """Whether the process exists and is not a zombie (whoever reaps it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def tool_spec(request: ModelRequest, name: str) -> dict[str, Any]:
    return next(spec.input_schema for spec in request.tools if spec.name == name)


def test_a_stdio_servers_tools_reach_the_model(
    workspace: Path, events: list[Event], hub: McpHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEMO_GREETING", "hi there")
    monkeypatch.setenv("DEMO_INHERITED", "from the user's environment")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-agentclis-own")
    order = {"customer": "ann", "items": [{"label": "bolt", "tags": ["m4", "steel"]}]}
    steps = [
        respond(
            tool_use("mcp__demo__echo", {"text": "hello"}, id="echo"),
            tool_use("mcp__demo__place_order", {"order": order, "priority": 2}, id="order"),
            tool_use("mcp__demo__explode", {}, id="explode"),
            tool_use("mcp__demo__picture", {}, id="picture"),
            tool_use("mcp__demo__environment", {"name": "GREETING"}, id="env"),
            tool_use("mcp__demo__environment", {"name": "DEMO_INHERITED"}, id="inherited"),
            tool_use("mcp__demo__environment", {"name": "ANTHROPIC_API_KEY"}, id="key"),
            tool_use("mcp__demo__pid", {}, id="pid"),
            tool_use("mcp__demo__spawn", {}, id="spawn"),
        ),
        respond(text("done")),
    ]
    servers = {"demo": stdio(DEMO, env={"GREETING": "${DEMO_GREETING}"})}
    manager, model = session(workspace, servers, steps, events, allow=["mcp__demo__*"])
    result = asyncio.run(manager.run_task("use the tools"))
    assert result.state.value == "unverified"

    schema = tool_spec(model.requests[0], "mcp__demo__place_order")
    assert schema["required"] == ["order"]
    item = schema["$defs"]["Item"]
    assert item["properties"]["tags"]["type"] == "array"  # the nested schema, as the server gave it

    got = results(manager)
    assert got["echo"] == ("hello", False)
    assert got["order"] == ("order for ann: bolt[m4/steel] (priority 2)", False)
    assert got["explode"][1] is True and "explode" in got["explode"][0]
    assert "image/png" in got["picture"][0] and "not shown" in got["picture"][0]
    assert got["env"] == ("hi there", False)
    assert got["inherited"] == ("from the user's environment", False)
    assert got["key"] == ("<unset>", False)  # agentcli's own key is not the server's
    statuses = {call["id"]: call["status"] for call in result.tool_calls}
    assert set(statuses.values()) == {"succeeded"}

    pid, child = int(got["pid"][0]), int(got["spawn"][0])
    assert running(pid) and running(child)
    hub.close()  # what happens at exit
    assert not running(pid)
    assert not running(child)  # what the server started went with its process group


def test_http_servers(
    workspace: Path,
    events: list[Event],
    http_url: str,
    sse_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Streamable HTTP with its headers (`${VAR}` expanded), and the legacy SSE transport; a
    server that refuses the connection (no token) is reported like any that does not start."""
    monkeypatch.setenv("DEMO_TOKEN", TOKEN)
    steps = [
        respond(
            tool_use("mcp__web__echo", {"text": "over http"}, id="http"),
            tool_use("mcp__old__echo", {"text": "over sse"}, id="sse"),
        ),
        respond(text("done")),
    ]
    servers = {
        "web": {
            "type": "http",
            "url": http_url,
            "headers": {"Authorization": "Bearer ${DEMO_TOKEN}"},
        },
        "old": {"type": "sse", "url": sse_url},
        "locked": {"url": http_url},
    }
    manager, model = session(
        workspace, servers, steps, events, allow=["mcp__web__*", "mcp__old__*"]
    )
    asyncio.run(manager.run_task("echo"))
    names = [spec.name for spec in model.requests[0].tools]
    assert "mcp__web__place_order" in names and "mcp__old__place_order" in names
    assert results(manager) == {"http": ("over http", False), "sse": ("over sse", False)}
    (locked,) = [e for e in events if isinstance(e, McpServerFailed)]
    assert locked.server == "locked" and locked.error == "it answered HTTP 401 Unauthorized"


def test_servers_that_do_not_start_are_reported_and_the_run_goes_on(
    workspace: Path, events: list[Event], said: list[str]
) -> None:
    servers = {
        "crashes": stdio(BROKEN, "crash"),
        "hangs": stdio(BROKEN, "hang", startup_timeout_s=0.5),
        "unset": stdio(DEMO, env={"TOKEN": "${AGENTCLI_TEST_UNSET_VARIABLE}"}),
        "missing": {"command": str(workspace / "no-such-program")},
    }
    manager, _ = session(workspace, servers, [respond(text("fine"))], events)
    assert not [tool.name for tool in manager.tools if tool.name.startswith("mcp__")]
    failed = {e.server: e for e in events if isinstance(e, McpServerFailed)}
    assert set(failed) == set(servers)
    assert "exited" in failed["crashes"].error
    assert failed["crashes"].stderr_tail == "broken server: cannot read its settings (exit 3)"
    assert failed["hangs"].error == "it did not start within 0.5 s"
    assert "never comes" in failed["hangs"].stderr_tail
    assert "AGENTCLI_TEST_UNSET_VARIABLE is not set" in failed["unset"].error
    assert "no-such-program" in failed["missing"].error
    for name, event in failed.items():
        line = next(line for line in said if f"MCP server {name} " in line)
        assert event.source in line and event.error in line
    assert "cannot read its settings" in next(line for line in said if "crashes" in line)
    result = asyncio.run(manager.run_task("go on"))
    assert result.final_text == "fine"


def test_a_server_that_dies_mid_session(
    workspace: Path, events: list[Event], said: list[str]
) -> None:
    steps = [
        respond(tool_use("mcp__demo__crash", {}, id="crash")),
        respond(tool_use("mcp__demo__echo", {"text": "still there?"}, id="after")),
        respond(text("done")),
    ]
    servers = {"demo": stdio(DEMO)}
    manager, _ = session(workspace, servers, steps, events, allow=["mcp__demo__*"])
    result = asyncio.run(manager.run_task("crash it"))
    assert result.final_text == "done"
    crashed, after = manager.messages[2].content[0], manager.messages[4].content[0]
    assert crashed.is_error and "MCP server demo stopped while this call" in crashed.content
    assert after.is_error and "[not_executed]" in after.content
    assert "MCP server demo is not running" in after.content
    statuses = {call["id"]: call["status"] for call in result.tool_calls}
    assert statuses == {"crash": "failed", "after": "failed"}
    reported = [e for e in events if isinstance(e, McpServerFailed)]
    assert len(reported) == 1  # once, however many calls find it gone
    assert "crashing on purpose" in reported[0].stderr_tail
    (line,) = [line for line in said if "MCP server demo" in line]
    assert "stopped while a call was running" in line and "crashing on purpose" in line


def test_an_untrusted_mcp_json_starts_nothing(
    workspace: Path, events: list[Event], said: list[str]
) -> None:
    write_servers(workspace / ".mcp.json", {"planted": stdio(BROKEN, "crash")})
    model = ScriptedModel([])
    manager = open_run_session(
        SessionOptions(task="x", cwd=workspace), events.append, model_factory=lambda _n: model
    )
    assert not [tool for tool in manager.tools if tool.name.startswith("mcp__")]
    (notice,) = [line for line in said if ".mcp.json" in line]
    assert "planted" in notice and "not trusted" in notice
    assert not [e for e in events if isinstance(e, McpServerFailed)]


def test_the_servers_are_shared_by_the_sessions_of_a_process(
    workspace: Path, events: list[Event]
) -> None:
    """The REPL's /clear builds a new session: its servers are the running ones, not new."""
    pids = []
    for _ in range(2):
        steps = [respond(tool_use("mcp__demo__pid", {}, id="p")), respond(text("done"))]
        manager, _ = session(
            workspace, {"demo": stdio(DEMO)}, steps, events, allow=["mcp__demo__*"]
        )
        asyncio.run(manager.run_task("pid"))
        pids.append(results(manager)["p"][0])
    assert pids[0] == pids[1]


def test_cancelling_a_task_cancels_its_mcp_call(workspace: Path, events: list[Event]) -> None:
    """Ctrl-C while a call runs: the task stops without waiting for the server, the call's
    outcome is unknown (it may have had an effect), and the server serves the next task."""
    steps = [
        respond(tool_use("mcp__demo__wait", {"seconds": 600}, id="slow")),
        respond(tool_use("mcp__demo__echo", {"text": "next"}, id="next")),
        respond(text("done")),
    ]
    manager, _ = session(workspace, {"demo": stdio(DEMO)}, steps, events, allow=["mcp__demo__*"])

    async def cancel_when_started() -> Any:
        task = asyncio.create_task(manager.run_task("wait"))
        while not any(isinstance(e, ToolCallStarted) and e.call_id == "slow" for e in events):
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)  # aborted (or cancelled)
        return await manager.run_task("again")

    result = asyncio.run(cancel_when_started())
    slow = manager.messages[2].content[0]
    assert slow.is_error and "[outcome_unknown]" in slow.content
    assert result.final_text == "done"
    assert results(manager)["next"] == ("next", False)


def test_a_server_whose_configuration_changed_is_replaced(workspace: Path, hub: McpHub) -> None:
    """A new session (the REPL's /clear) with the same server reuses it; with a changed entry
    (an edited .mcp.json) the old one is stopped and a new one started."""
    before = ConfiguredServer("demo", ServerEntry(command=sys.executable, args=[DEMO]), "a")
    after = ConfiguredServer("demo", ServerEntry(command=sys.executable, args=[DEMO, "x"]), "a")
    (first,) = hub.start([before], workspace)
    hub.wait([first])
    assert hub.start([before], workspace) == [first]
    (second,) = hub.start([after], workspace)
    hub.wait([second])
    assert second is not first and second.status == "ready"
    deadline = time.monotonic() + 60
    while first.status != "stopped":
        assert time.monotonic() < deadline, first.status
        time.sleep(0.02)
    assert first.pgid is not None and second.pgid is not None
    hub.close()
    assert not group_alive(first.pgid) and not group_alive(second.pgid)


@pytest.mark.parametrize("trusted", [False, True], ids=["untrusted", "trusted"])
def test_the_users_servers_start_in_the_workspace_only_once_it_is_trusted(
    workspace: Path,
    events: list[Event],
    hub: McpHub,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    trusted: bool,
) -> None:
    """Found in review: the user's own entry (`python -m NAME`, `npx PACKAGE`) took its program
    from the working directory, and in an untrusted clone that is the repository's choice."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    marker = tmp_path / "planted-ran"
    planted = workspace / "planted_server"
    planted.mkdir()
    (planted / "__main__.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    entry = {"command": sys.executable, "args": ["-m", "planted_server"]}
    manager, _ = session(
        workspace, {"mine": entry}, [respond(text("done"))], events, trust_project=trusted
    )
    asyncio.run(manager.run_task("x"))
    assert marker.exists() is trusted
    assert [e.server for e in events if isinstance(e, McpServerFailed)] == ["mine"]
