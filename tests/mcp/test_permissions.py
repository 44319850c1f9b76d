"""MCP tools and the permission policy: they ask by default (without a terminal: denied, with the
rule that would allow them), `mcp__NAME__TOOL` and `mcp__NAME__*` rules allow or deny, a deny
wins, yolo allows, and a server's `readOnlyHint` counts only with `trust_read_only = true`."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentcli.events import Event
from agentcli.permissions import Decision, PermissionMode
from agentcli.permissions.setup import build_policy
from agentcli.session.options import SessionOptions
from agentcli.testing import ScriptedModel, respond, text, tool_use
from agentcli.tools.base import PermissionTarget, Risk
from agentcli.ui.run import open_run_session
from tests.mcp.conftest import DEMO, stdio, write_servers

ECHO = PermissionTarget("mcp__demo__echo", "*", "call echo on the MCP server demo")
MODES = tuple(PermissionMode)  # default, accept-edits, read-only, auto, yolo
LETTER = {"a": Decision.ALLOW, "?": Decision.ASK, "d": Decision.DENY}

# rules (allow, deny) → the decision in each mode, for an MCP tool (risk external) and for one
# the user trusts as read-only (risk read).
TABLE = [
    ((), (), "??d?a", "aaaaa"),
    (("mcp__demo__echo",), (), "aadaa", "aaaaa"),
    (("mcp__demo__*",), (), "aadaa", "aaaaa"),
    (("mcp__demo",), (), "aadaa", "aaaaa"),  # Claude Code's spelling of every tool of a server
    (("mcp__other__*", "mcp__demo__lookup", "mcp__dem__*"), (), "??d?a", "aaaaa"),
    ((), ("mcp__demo__echo",), "ddddd", "ddddd"),
    (("mcp__demo__echo",), ("mcp__demo__*",), "ddddd", "ddddd"),  # a deny wins
    (("mcp__demo__*",), ("mcp__demo__echo",), "ddddd", "ddddd"),
    (("mcp__demo__*",), ("mcp__demo__lookup",), "aadaa", "aaaaa"),  # another tool's deny
]


@pytest.mark.parametrize(("allow", "deny", "external", "read"), TABLE)
def test_decision_table(
    allow: tuple[str, ...], deny: tuple[str, ...], external: str, read: str, tmp_path: Path
) -> None:
    for risk, row in ((Risk.EXTERNAL, external), (Risk.READ, read)):
        got = ""
        for mode in MODES:
            policy = build_policy(
                mode=mode,
                flag_allow=allow,
                flag_deny=deny,
                workspace=tmp_path,
                sandbox_available=True,
                persist=False,
            )
            verdict = policy.decide(risk, ECHO)
            got += next(k for k, v in LETTER.items() if v is verdict.decision)
            if verdict.decision is Decision.ASK:
                assert verdict.suggested_rule == "mcp__demo__echo"
        assert got == row, (risk, [m.value for m in MODES])


def test_a_wildcard_is_only_for_a_whole_server(tmp_path: Path) -> None:
    from agentcli.errors import UsageError

    policy = build_policy(
        mode=PermissionMode.DEFAULT,
        flag_allow=["mcp__my-server__*"],
        workspace=tmp_path,
        sandbox_available=True,
        persist=False,
    )
    target = PermissionTarget("mcp__my-server__run", "*", "run")
    assert policy.decide(Risk.EXTERNAL, target).decision is Decision.ALLOW
    for rule in ("mcp__*", "mcp__de*", "mcp__demo__ec*", "mcp__a__b__*", "shell*", "x__*"):
        with pytest.raises(UsageError):
            build_policy(
                mode=PermissionMode.DEFAULT,
                flag_allow=[rule],
                workspace=tmp_path,
                sandbox_available=True,
                persist=False,
            )


def test_without_a_terminal_mcp_calls_are_denied_with_the_rule_to_allow_them(
    workspace: Path,
) -> None:
    """End to end, one real server: `lookup` is marked read-only by the server and the user
    trusts that for this server; `echo` is not; `touch` is denied by a rule."""
    config = write_servers(
        workspace.parent / "servers.json", {"demo": stdio(DEMO, trust_read_only=True)}
    )
    steps = [
        respond(
            tool_use("mcp__demo__lookup", {"key": "k"}, id="lookup"),
            tool_use("mcp__demo__echo", {"text": "hi"}, id="echo"),
            tool_use("mcp__demo__touch", {"name": "made.txt"}, id="touch"),
        ),
        respond(text("done")),
    ]
    model = ScriptedModel(steps)
    events: list[Event] = []
    options = SessionOptions(
        task="x", cwd=workspace, mcp_config=[config], deny=["mcp__demo__touch"]
    )
    manager = open_run_session(options, events.append, model_factory=lambda _name: model)
    result = asyncio.run(manager.run_task("try"))
    got = {block.tool_use_id: block for block in manager.messages[2].content}
    assert not got["lookup"].is_error and got["lookup"].content == "value of k"
    assert got["echo"].is_error and "--allow 'mcp__demo__echo'" in got["echo"].content
    assert got["touch"].is_error and "mcp__demo__touch" in got["touch"].content
    assert not (workspace / "made.txt").exists()
    denied = {(d["tool"], "no terminal" in d["reason"]) for d in result.permission_denials}
    assert denied == {("mcp__demo__echo", True), ("mcp__demo__touch", False)}
