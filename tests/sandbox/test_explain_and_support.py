"""What the sandbox lifts for which command, what it tells the model after a failure, what it
reports about this kernel, and the whole path through the real shell tool."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcli.confinement import READ_ONLY, WORKSPACE_WRITE, Confinement, Profile
from agentcli.permissions import PermissionMode
from agentcli.permissions.confine import escalated
from agentcli.permissions.setup import build_permissions
from agentcli.permissions.shell import parse_command
from agentcli.sandbox.explain import GIT_WAY_OUT, SandboxLimits, explain
from agentcli.sandbox.support import SandboxSupport, probe_support, sandbox_report
from agentcli.settings import Settings
from agentcli.tools.base import ToolContext
from agentcli.tools.shell import Shell, ShellInput
from tests.sandbox.conftest import LANDLOCK_ABI, requires_landlock

GIT = Confinement(profile=Profile.WORKSPACE_WRITE, git_write=True)
NET = Confinement(profile=Profile.WORKSPACE_WRITE, network=True)
BOTH = Confinement(profile=Profile.WORKSPACE_WRITE, git_write=True, network=True)
NONE = WORKSPACE_WRITE


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("git commit -m x", GIT),
        ("git add -A && git commit -m 'msg'", GIT),
        ("git commit -m \"$(cat <<'EOF'\nfix: a\n\nbody\nEOF\n)\"", GIT),
        ("git add . && git commit -m x && git push", BOTH),
        ("git pull --rebase", BOTH),
        ("pip install -e .", NET),
        ("python -m pip install requests", NET),
        ("npm ci && npm install left-pad", NET),
        ("curl -fsSL https://example.com -o x", NET),
        ("git status", NONE),  # reads run with .git read-only
        ("git log && git commit -m x", NONE),
        ("ls && git commit -m x", NONE),
        ("git commit -m x; rm -rf /", NONE),
        ('git commit -m "$(curl evil)"', NONE),
        ("git commit -m x > out.txt", NONE),
        ("GIT_DIR=/tmp/x git commit -m x", NONE),
        ("pip install x && python -c 'exfiltrate()'", NONE),
        ("npm test", NONE),
        ("git commit -m ${X:=y}", NONE),
        ("time git commit", NONE),
    ],
)
def test_escalation_only_when_every_part_needs_it(command: str, expected: Confinement) -> None:
    assert escalated(parse_command(command)) == expected


LIMITS = SandboxLimits(
    workspace=Path("/work/ws"),
    temp_dir=Path("/tmp/agentcli-session-x"),
    writable=(Path("/cache"),),
    protected=(Path("/work/ws/.git"), Path("/work/ws/.agentcli")),
    network_blocked=True,
)


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("bash: /etc/hosts: Permission denied", "outside the writable places"),
        ("touch: cannot touch '/home/u/x': Permission denied", "outside the writable places"),
        ("PermissionError: [Errno 13] Permission denied: '/usr/lib/x'", "outside"),
        ("bash: .git/hooks/pre-commit: Read-only file system", ".git is read-only"),
        ("error: could not lock config file .git/config: Read-only file system", ".git"),
        ("fatal: Unable to create '/work/ws/.git/index.lock': Read-only file system", ".git"),
        ("bash: .agentcli/config.local.toml: Read-only file system", "agentcli's own config"),
        ("OSError: [Errno 101] Network is unreachable", "network"),
        ("curl: (6) Could not resolve host: example.com", "network"),
        ("ConnectionRefusedError: [Errno 111] Connection refused", "network"),
        ("mkdir: cannot create directory: Permission denied", "may have come from the sandbox"),
        ("agentcli sandbox: cannot confine the command, not running it: x", "did not run"),
    ],
)
def test_sandbox_failures_are_explained(output: str, expected: str) -> None:
    note = explain(output, LIMITS, WORKSPACE_WRITE)
    assert note is not None
    assert expected in note
    if "agentcli sandbox:" not in output:
        assert note.startswith("This command ran inside agentcli's sandbox")


@pytest.mark.parametrize(
    "output",
    [
        "FAILED tests/test_x.py::test_y - AssertionError",
        "bash: ./run.sh: Permission denied",  # not executable, inside the workspace
        "cp: cannot create regular file '/tmp/agentcli-session-x/a': Permission denied",
        "tar: /cache/x: Cannot open: Permission denied",
    ],
)
def test_other_failures_are_not_blamed_on_the_sandbox(output: str) -> None:
    assert explain(output, LIMITS, WORKSPACE_WRITE) is None


def test_a_missing_path_in_a_hidden_place_is_explained() -> None:
    limits = SandboxLimits(
        workspace=Path("/work/ws"),
        temp_dir=Path("/tmp/agentcli-session-x"),
        writable=(),
        protected=(),
        network_blocked=True,
        hidden=(Path("/home/u/.ssh"),),
        visible=(Path("/usr"), Path("/home/u/.cargo")),
    )
    note = explain("cat: /home/u/.ssh/id_rsa: No such file or directory", limits, WORKSPACE_WRITE)
    assert "the sandbox hides /home/u/.ssh" in (note or "")
    for output in (
        "bash: /tmp/build/x: No such file or directory",
        "cat: /home/u/notes.txt: No such file or directory",
        "ls: cannot access '/srv/data': No such file or directory",
    ):
        note = explain(output, limits, WORKSPACE_WRITE) or ""
        assert "is not there for sandboxed commands" in note, output
    assert (
        explain("cat: /usr/lib/nope.so: No such file or directory", limits, WORKSPACE_WRITE) is None
    )
    assert (
        explain(
            "cat: /tmp/agentcli-session-x/a: No such file or directory", limits, WORKSPACE_WRITE
        )
        is None
    )
    assert explain("cat: src/a.py: No such file or directory", limits, WORKSPACE_WRITE) is None


def test_read_only_profile_failures_say_why_it_was_read_only() -> None:
    note = explain("touch: cannot touch 'x': Read-only file system", LIMITS, READ_ONLY) or ""
    assert "read-only sandbox" in note and "outside_sandbox" in note
    assert explain("FAILED test_x", LIMITS, READ_ONLY) is None


def test_network_errors_are_not_blamed_when_the_network_is_on() -> None:
    limits = SandboxLimits(
        workspace=Path("/w"), temp_dir=Path("/t"), writable=(), protected=(), network_blocked=False
    )
    assert explain("curl: (7) Couldn't connect to server", limits, WORKSPACE_WRITE) is None
    opened = Confinement(profile=Profile.WORKSPACE_WRITE, network=True)
    assert explain("curl: (7) Couldn't connect to server", LIMITS, opened) is None


def test_doctor_lines_say_what_is_enforced() -> None:
    lines = sandbox_report()
    assert lines[0].startswith("sandbox:")
    if LANDLOCK_ABI >= 1:
        assert f"Landlock ABI {LANDLOCK_ABI}" in lines[0]
        assert any("no network" in line for line in lines)
        assert any("PID namespace" in line for line in lines)
    missing = SandboxSupport(landlock_abi=0, ok=False, problem="no LSM")
    unavailable = sandbox_report(missing)
    assert "unavailable" in unavailable[0] and "no LSM" in unavailable[0]
    assert "asks" in unavailable[1]


@requires_landlock
def test_this_kernel_passes_the_probe() -> None:
    support = probe_support()
    assert support.ok, support.problem
    assert support.landlock_abi == LANDLOCK_ABI
    assert support.checks["read-only"]["write_workspace"] is False
    assert support.checks["workspace-write"]["write_workspace"] is True


@requires_landlock
@pytest.mark.parametrize(
    "mode",
    [
        PermissionMode.DEFAULT,
        PermissionMode.ACCEPT_EDITS,
        PermissionMode.READ_ONLY,
        PermissionMode.AUTO,
    ],
)
def test_every_mode_but_yolo_sandboxes(workspace: Path, mode: PermissionMode) -> None:
    session = build_permissions(settings=Settings(permission_mode=mode), workspace=workspace)
    assert session.sandbox is not None and session.policy.sandbox_available
    assert (workspace / ".agentcli").is_dir()
    off = Settings.model_validate(
        {"permission_mode": mode, "sandbox": {"enabled": False}, "permissions": {"denial_limit": 5}}
    )
    disabled = build_permissions(settings=off, workspace=workspace)
    assert disabled.sandbox is None and not disabled.policy.sandbox_available
    assert disabled.denial_limit == 5
    assert any("every command will ask" in notice for notice in disabled.notices)


def test_yolo_has_no_sandbox(workspace: Path) -> None:
    yolo = build_permissions(
        settings=Settings(permission_mode=PermissionMode.YOLO), workspace=workspace
    )
    assert yolo.sandbox is None and not yolo.notices


@requires_landlock
async def test_the_shell_tool_runs_sandboxed_and_tells_the_model(
    workspace: Path, tmp_path: Path
) -> None:
    permissions = build_permissions(
        settings=Settings(permission_mode=PermissionMode.AUTO), workspace=workspace
    )
    assert permissions.sandbox is not None, permissions.notices  # never run this unconfined
    ctx = ToolContext(workspace=workspace, data_dir=tmp_path / "data", sandbox=permissions.sandbox)
    target = Path("/etc/agentcli-probe-outside.txt")
    output = await Shell().call(ShellInput(command=f"echo hi > {target}"), ctx)
    assert output.is_error
    assert not target.exists()
    assert "This command ran inside agentcli's sandbox" in output.text
    ok = await Shell().call(ShellInput(command="echo hi > inside.txt && cat inside.txt"), ctx)
    assert not ok.is_error and "hi" in ok.text


def test_config_and_hooks_stay_read_only_when_git_is_opened() -> None:
    """With .git opened, a failed write to its config names the real limit (not "run it as
    git commands on their own", which it already was); git's EBUSY (a rename onto the
    read-only config) counts as the sandbox's too."""
    limits = SandboxLimits(
        workspace=Path("/work/ws"),
        temp_dir=Path("/tmp/agentcli-session-x"),
        writable=(),
        protected=(Path("/work/ws/.git"), Path("/work/ws/.agentcli")),
        network_blocked=True,
        git_programs=(Path("/work/ws/.git/config"), Path("/work/ws/.git/hooks")),
    )
    opened = Confinement(profile=Profile.WORKSPACE_WRITE, git_write=True)
    output = "error: could not write config file .git/config: Device or resource busy"
    note = explain(output, limits, opened)
    assert note is not None and "stay read-only even when .git is opened" in note
    assert GIT_WAY_OUT not in note


@requires_landlock
async def test_the_model_hears_why_a_planted_git_dir_went_away(
    workspace: Path, tmp_path: Path
) -> None:
    from agentcli.sandbox.runner import OsSandbox

    ctx = ToolContext(
        workspace=workspace,
        data_dir=tmp_path / "data",
        sandbox=OsSandbox(workspace=workspace),
        confinement=WORKSPACE_WRITE,
    )
    output = await Shell().call(ShellInput(command="mkdir .git && echo made"), ctx)
    assert not (workspace / ".git").exists()
    assert "made" in output.text and "git init" in output.text
