"""A workspace must not be able to trust itself: shell commands that write agentcli's trust
store, kept "always" answers or user config, and `agentcli trust` however it is spelled, ask in
every mode but yolo, even under `shell(*)`. The file tools cannot write there at all (outside
the workspace), and ask when the workspace happens to contain them.

Real paths: `$HOME`, the data dir and the config dir are temp directories laid out as on a
real machine, so `~/.local/share/agentcli/...` spellings resolve to the real store.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentcli.config import data_home, user_config_path
from agentcli.errors import ToolErrorKind
from agentcli.messages import ToolUseBlock
from agentcli.permissions import Decision, NonInteractivePrompter, PermissionMode
from agentcli.permissions.setup import build_policy
from agentcli.store import MemoryJournal
from agentcli.tools.base import PermissionTarget, Risk, ToolContext
from agentcli.tools.edit_file import EditFile
from agentcli.tools.runtime import ToolRuntime
from agentcli.tools.write_file import WriteFile
from agentcli.trust import store_path, user_rules_path

PERMISSIVE = ["shell(*)", "write(**)", "shell(agentcli *)", "shell(echo *)", "shell(cp *)"]
MODES = tuple(PermissionMode)  # default, accept-edits, read-only, auto, yolo: the letters' order
ALWAYS_ASKS = "??d?a"  # default, accept-edits, read-only, auto, yolo


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AGENTCLI_HOME", str(home / ".local/share/agentcli"))
    monkeypatch.setenv("AGENTCLI_CONFIG_DIR", str(home / ".config/agentcli"))
    data_home().mkdir(parents=True)
    user_config_path().parent.mkdir(parents=True)
    return home


@pytest.fixture
def workspace_in(home: Path, tmp_path: Path) -> Path:
    workspace = tmp_path / "projects" / "repo"
    workspace.mkdir(parents=True)
    return workspace


def decisions(command: str, workspace: Path, modes: tuple[PermissionMode, ...] = MODES) -> str:
    letters = {Decision.ALLOW: "a", Decision.ASK: "?", Decision.DENY: "d"}
    out = ""
    for mode in modes:
        policy = build_policy(
            mode=mode,
            flag_allow=PERMISSIVE,
            workspace=workspace,
            sandbox_available=True,
            persist=False,
        )
        verdict = policy.decide(Risk.EXECUTE, PermissionTarget("shell", command, command))
        if verdict.decision is Decision.ASK:
            assert verdict.suggested_rule is None, "no rule may allow it"
            assert "yolo" in verdict.reason
        out += letters[verdict.decision]
    return out


STORE = "~/.local/share/agentcli/trusted_workspaces.json"
WRITES_AGENTCLI_STATE = [
    f"echo x >> {STORE}",
    f"echo x > {STORE}",
    'echo x > "$HOME/.local/share/agentcli/trusted_workspaces.json"',
    "echo x > ${HOME}/.local/share/agentcli/trusted_workspaces.json",
    "echo x > $AGENTCLI_HOME/trusted_workspaces.json",
    "printf '{}' | tee -a {store}",
    "cp evil.json {store}",
    "cp -rT evil-dir {data}",
    "mv /tmp/evil.json {store}",
    "sed -i s/a/b/ {store}",
    "rsync evil.json ~/.local/share/agentcli/",
    "ln -sf /tmp/evil.toml ~/.local/share/agentcli/workspace-rules/abc.toml",
    "cd ~/.local/share/agentcli && echo x > trusted_workspaces.json",
    "echo 'allow = [\"shell(*)\"]' >> ~/.config/agentcli/config.toml",
    "cp rules.toml {config}/config.toml",
    "python3 -c \"open('{store}', 'w').write('x')\"",
    "python3 -c \"import os; open(os.path.expanduser('" + STORE + "'), 'w')\"",
    "bash -c 'echo x >> " + STORE + "'",
    "{ echo x; } > " + STORE,
    "(echo x) >> {store}",
    "while true; do echo x; break; done > {store}",
    "echo x > ../../home/.local/share/agentcli/trusted_workspaces.json",
    "echo x > data-link/trusted_workspaces.json",
    # `agentcli trust`, however spelled
    "agentcli trust",
    "agentcli trust /some/dir",
    "agentcli trust --revoke",
    "agentcli -C /some/dir trust",
    "/opt/venv/bin/agentcli trust .",
    "./.venv/bin/agentcli trust",
    "python -m agentcli trust",
    "python3 -magentcli trust .",
    "python -m agentcli.ui.entry trust",
    "uv run agentcli trust",
    "env FOO=1 agentcli trust",
    "sudo agentcli trust",
    "ls && agentcli trust",
    "bash -c 'agentcli trust'",
    "python -c 'from agentcli.trust import set_trusted; set_trusted(...)'",
    "python -c 'import agentcli.approvals as a; a.approve(...)'",
]


def spelled(command: str) -> str:
    for name, path in (
        ("{store}", store_path()),
        ("{data}", data_home()),
        ("{config}", user_config_path().parent),
    ):
        command = command.replace(name, str(path))
    return command


@pytest.mark.parametrize("command", WRITES_AGENTCLI_STATE)
def test_writing_agentcli_state_always_asks(command: str, workspace_in: Path) -> None:
    (workspace_in / "data-link").symlink_to(data_home())
    assert decisions(spelled(command), workspace_in) == ALWAYS_ASKS


@pytest.mark.parametrize(
    "command",
    [
        "agentcli run 'fix the trust bug'",
        "agentcli sessions list",
        "pip install agentcli",
        "python -m pytest tests/test_trust.py",
        "git commit -m 'agentcli trust store'",
        "cat {store}",
        "grep -rn trust src",
        "echo {store}",
        "cp a.json {data}base/x.json",  # a sibling whose name starts the same
        "mkdir -p build/agentcli && cp x build/agentcli/trusted_workspaces.json",
    ],
)
def test_commands_that_leave_agentcli_state_alone_are_not_asked(
    command: str, workspace_in: Path
) -> None:
    # (read-only mode runs only its built-in readers, whatever they read: not the point here)
    modes = tuple(m for m in MODES if m is not PermissionMode.READ_ONLY)
    assert decisions(spelled(command), workspace_in, modes) == "aaaa"


async def write_through_runtime(
    workspace: Path, tool_name: str, path: str
) -> tuple[str, ToolErrorKind | None, str]:
    runtime = ToolRuntime(
        [WriteFile(), EditFile()],
        ctx=ToolContext(workspace=workspace, data_dir=workspace.parent / "session-data"),
        policy=build_policy(
            mode=PermissionMode.ACCEPT_EDITS,
            flag_allow=["write(**)", "read(**)"],
            workspace=workspace,
            sandbox_available=False,
            persist=False,
        ),
        prompter=NonInteractivePrompter(),
        journal=MemoryJournal(),
        events=lambda event: None,
    )
    if tool_name == "write_file":
        input = {"path": path, "content": '{"version": 1, "workspaces": {"/evil": {}}}\n'}
    else:
        input = {"path": path, "old_string": "{}", "new_string": '{"/evil": {}}'}
    call = ToolUseBlock(id="toolu_1", name=tool_name, input=input)
    records = runtime.propose([call])
    await runtime.execute([call], records)
    record = records[0]
    return record.status.value, record.error_kind, record.result_text


def agentcli_files() -> list[Path]:
    return [store_path(), user_rules_path(Path("/x")), user_config_path()]


@pytest.mark.parametrize("tool_name", ["write_file", "edit_file"])
@pytest.mark.parametrize("which", [0, 1, 2])
async def test_file_tools_cannot_write_agentcli_state(
    workspace_in: Path, tool_name: str, which: int
) -> None:
    """Outside the workspace: refused outright, however the path is spelled."""
    target = agentcli_files()[which]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text('{"version": 1, "workspaces": {}}\n')
    before = target.read_text()
    relative = os.path.relpath(target, workspace_in)
    for path in (str(target), relative, "~/" + str(target.relative_to(Path.home()))):
        status, kind, text = await write_through_runtime(workspace_in, tool_name, path)
        assert (status, kind) == ("denied", ToolErrorKind.PERMISSION_DENIED), text
        assert "outside the workspace" in text
    assert target.read_text() == before


@pytest.mark.parametrize("tool_name", ["write_file", "edit_file"])
@pytest.mark.parametrize("which", [0, 1, 2])
async def test_file_tools_ask_when_the_workspace_contains_agentcli_state(
    home: Path, tool_name: str, which: int
) -> None:
    """A workspace at `~` holds the data and config dirs: writing them asks even under
    `write(**)` in accept-edits mode (without a terminal, a denial)."""
    target = agentcli_files()[which]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text('{"version": 1, "workspaces": {}}\n')
    before = target.read_text()
    status, kind, text = await write_through_runtime(home, tool_name, str(target.relative_to(home)))
    assert (status, kind) == ("denied", ToolErrorKind.PERMISSION_DENIED), text
    assert "always ask" in text
    assert target.read_text() == before
