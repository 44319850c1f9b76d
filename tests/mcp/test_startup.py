"""No MCP server configured: a session costs nothing for MCP (the SDK is never imported). And
`agentcli mcp list`, with and without starting the servers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentcli.ui.mcp_command import mcp_list
from tests.mcp.conftest import BROKEN, DEMO, stdio, write_servers

PROBE = """
import json, sys
from pathlib import Path
from agentcli.testing import ScriptedModel
from agentcli.session.options import SessionOptions
from agentcli.ui.run import open_run_session
files = [Path(p) for p in sys.argv[2:]]
options = SessionOptions(task="x", cwd=Path(sys.argv[1]), mcp_config=files)
open_run_session(options, lambda _e: None, model_factory=lambda _n: ScriptedModel([]))
print(json.dumps(sorted(sys.modules)))
"""


def modules_of_a_session(workspace: Path, *files: Path) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(workspace), *map(str, files)],
        capture_output=True, text=True, timeout=60, check=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_a_session_without_servers_never_loads_the_sdk(workspace: Path) -> None:
    modules = modules_of_a_session(workspace)
    assert "agentcli.ui.run" in modules
    assert not {"mcp", "mcp_types", "agentcli.mcp.hub", "agentcli.mcp.client"} & modules
    # The probe can tell: with a server configured (one that fails at once), it is loaded.
    config = write_servers(workspace.parent / "one.json", {"x": stdio(BROKEN, "crash")})
    assert {"mcp", "agentcli.mcp.client"} <= modules_of_a_session(workspace, config)


def test_mcp_list(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_servers(
        workspace.parent / "servers.json",
        {"demo": stdio(DEMO), "crashes": stdio(BROKEN, "crash")},
    )
    assert mcp_list(workspace, [config], connect=False) == 0
    shown = capsys.readouterr().out
    assert f"demo  (--mcp-config {config})\n  stdio: {sys.executable} {DEMO}\n" in shown
    assert shown.count("status: configured (not started)") == 2
    assert mcp_list(workspace, [config]) == 0
    shown = capsys.readouterr().out
    assert "status: ready, 11 tools\n    mcp__demo__echo\n" in shown
    assert "status: failed: it closed the connection (the program exited)" in shown
    assert mcp_list(workspace) == 0
    assert "no MCP servers configured" in capsys.readouterr().out
