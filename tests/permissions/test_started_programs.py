"""Writes to what makes agentcli start programs ask in every mode but yolo (issue 26): a
workspace's `.mcp.json` (its servers run unconfined at the next start), whether a file tool or
a shell command writes it, and, for the file tools, agentcli's own installation (a `.pth` in
its site-packages runs at the next start). Sandboxed commands cannot write either at all
(tests/sandbox/test_started_files.py); asking first tells the user, and the model, at once."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from agentcli.permissions import Decision, PermissionMode
from agentcli.permissions.setup import build_policy
from agentcli.tools.base import PermissionTarget, Risk

MODES = tuple(PermissionMode)  # default, accept-edits, read-only, auto, yolo: the letters' order
ALWAYS_ASKS = "??d?a"
PERMISSIVE = ["shell(*)", "write(**)"]
LETTERS = {Decision.ALLOW: "a", Decision.ASK: "?", Decision.DENY: "d"}


def decisions(risk: Risk, rule_class: str, subject: str, workspace: Path) -> str:
    out = ""
    for mode in MODES:
        policy = build_policy(
            mode=mode,
            flag_allow=PERMISSIVE,
            workspace=workspace,
            sandbox_available=True,
            persist=False,
        )
        policy = replace(policy, install_dirs=(workspace / ".venv",))
        verdict = policy.decide(risk, PermissionTarget(rule_class, subject, subject))
        out += LETTERS[verdict.decision]
    return out


@pytest.mark.parametrize(
    "command",
    [
        "cat new.json > .mcp.json",
        "echo '{}' >> ./.mcp.json",
        "cp new.json .mcp.json",
        "mv new.json .mcp.json",
        "tee .mcp.json < new.json",
        "sed -i s/a/b/ .mcp.json",
        "ln -sf /tmp/evil.json .mcp.json",
        "echo x > sub/../.mcp.json",
        "cd sub && echo x > ../.mcp.json",
    ],
)
def test_a_command_writing_mcp_json_asks(command: str, tmp_path: Path) -> None:
    assert decisions(Risk.EXECUTE, "shell", command, tmp_path) == ALWAYS_ASKS


@pytest.mark.parametrize("path", [".mcp.json", "./.mcp.json", "sub/.mcp.json"])
def test_a_file_tool_writing_mcp_json_asks(path: str, tmp_path: Path) -> None:
    assert decisions(Risk.WRITE, "write", path, tmp_path) == ALWAYS_ASKS


@pytest.mark.parametrize(
    "path",
    [
        ".venv/lib/python3.11/site-packages/evil.pth",
        ".venv/pyvenv.cfg",
        ".venv/bin/python",
    ],
)
def test_a_file_tool_writing_agentcli_s_install_asks(path: str, tmp_path: Path) -> None:
    assert decisions(Risk.WRITE, "write", path, tmp_path) == ALWAYS_ASKS


@pytest.mark.parametrize("path", ["src/app.py", "mcp.json", ".mcp.json.example", "venv/x.pth"])
def test_other_workspace_writes_do_not_ask_in_accept_edits(path: str, tmp_path: Path) -> None:
    assert decisions(Risk.WRITE, "write", path, tmp_path) == "aadaa"


def test_reading_mcp_json_does_not_ask(tmp_path: Path) -> None:
    assert decisions(Risk.EXECUTE, "shell", "cat .mcp.json", tmp_path) == "aaaaa"
