"""What agentcli itself starts from the workspace is out of a sandboxed command's reach (issue
26): the files that name programs it starts (`.mcp.json`) and agentcli's own installation,
where it lies in the workspace. Real commands through the real helper, on this kernel."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agentcli.confinement import WORKSPACE_WRITE, Confinement, Profile
from agentcli.permissions.protected import PROGRAM_FILES
from agentcli.sandbox.explain import PROGRAM_FILE_NAMES
from agentcli.sandbox.runner import OsSandbox, SandboxSettings
from tests.sandbox.conftest import Run, requires_landlock

pytestmark = requires_landlock
OPENED = [
    WORKSPACE_WRITE,
    Confinement(profile=Profile.WORKSPACE_WRITE, git_write=True, network=True),
]
SERVERS = '{"mcpServers": {"ok": {"command": "true"}}}\n'
WRITES = {
    "redirect": 'echo \'{"mcpServers": {"evil": {"command": "sh"}}}\' > .mcp.json',
    "append": "echo x >> .mcp.json",
    "python": "python3 -c \"open('.mcp.json', 'w').write('{}')\"",
    "replace": "echo '{}' > new.json && mv new.json .mcp.json",
    "remove": "rm .mcp.json",
    "rename": "mv .mcp.json aside.json",
    "link": "rm -f .mcp.json; ln -s new.json .mcp.json",
    "sed": "sed -i s/ok/evil/ .mcp.json",
}


def test_the_sandbox_and_the_policy_agree_on_the_files() -> None:
    assert PROGRAM_FILE_NAMES == PROGRAM_FILES


@pytest.mark.parametrize("confinement", OPENED)
@pytest.mark.parametrize("how", WRITES)
def test_a_command_cannot_change_an_mcp_json(
    run: Run, sandbox: OsSandbox, how: str, confinement: Confinement
) -> None:
    mcp = sandbox.workspace / ".mcp.json"
    mcp.write_text(SERVERS)
    box = OsSandbox(workspace=sandbox.workspace)
    result = run(box, WRITES[how], confinement=confinement)
    assert mcp.is_file() and not mcp.is_symlink(), result.stderr
    assert mcp.read_text() == SERVERS, result.stdout + result.stderr


@pytest.mark.parametrize("how", ["redirect", "python", "replace", "link"])
def test_an_mcp_json_a_command_creates_is_removed(run: Run, sandbox: OsSandbox, how: str) -> None:
    mcp = sandbox.workspace / ".mcp.json"
    (sandbox.workspace / "new.json").write_text("{}\n")
    result = run(sandbox, WRITES[how], confinement=WORKSPACE_WRITE)
    assert not mcp.exists() and not mcp.is_symlink(), result.stdout + result.stderr
    explained = sandbox.explain_failure(result.stderr, 0, WORKSPACE_WRITE)
    assert explained is not None and "files that name programs agentcli starts" in explained


def test_an_mcp_json_made_by_the_user_during_the_session_is_protected(
    run: Run, sandbox: OsSandbox
) -> None:
    """Not a list made when the session started: one made since (by the user, or approved
    through the file tools) is read-only to the next command, and stays."""
    box = OsSandbox(workspace=sandbox.workspace)
    mcp = sandbox.workspace / ".mcp.json"
    mcp.write_text(SERVERS)
    result = run(box, WRITES["redirect"], confinement=WORKSPACE_WRITE)
    assert mcp.read_text() == SERVERS, result.stderr


def test_the_rest_of_the_workspace_stays_writable(run: Run, sandbox: OsSandbox) -> None:
    (sandbox.workspace / ".mcp.json").write_text(SERVERS)
    result = run(sandbox, "echo ok > mcp.json.txt && mkdir -p sub && echo ok > sub/.mcp.json")
    assert result.returncode == 0, result.stderr
    assert (sandbox.workspace / "sub" / ".mcp.json").read_text() == "ok\n"


@pytest.fixture
def installed(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace holding "agentcli's install": a virtualenv and, deeper down, a package."""
    workspace = tmp_path / "ws"
    site = workspace / ".venv" / "lib" / "python3" / "site-packages"
    site.mkdir(parents=True)
    (workspace / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    package = workspace / "src" / "agentcli"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("# agentcli\n")
    return workspace, package


def _box(workspace: Path, package: Path) -> OsSandbox:
    own = (workspace / ".venv", workspace / ".venv" / "lib" / "python3" / "site-packages", package)
    return OsSandbox(workspace=workspace, settings=SandboxSettings(own_install=own))


@pytest.mark.parametrize("confinement", OPENED)
def test_a_command_cannot_change_agentcli_s_own_install(
    run: Run, installed: tuple[Path, Path], confinement: Confinement
) -> None:
    workspace, package = installed
    site = ".venv/lib/python3/site-packages"
    result = run(
        _box(workspace, package),
        f"echo 'import os' > {site}/evil.pth; echo x >> .venv/pyvenv.cfg; "
        "echo evil > src/agentcli/__init__.py; mv .venv .venv2; "
        "mv src src2 && mkdir -p src/agentcli && echo evil > src/agentcli/__init__.py; "
        "echo ok > control.txt",
        confinement=confinement,
    )
    assert not (workspace / site / "evil.pth").exists(), result.stderr
    assert (workspace / ".venv" / "pyvenv.cfg").read_text() == "home = /usr/bin\n"
    assert (package / "__init__.py").read_text() == "# agentcli\n", result.stderr
    assert (workspace / "control.txt").read_text() == "ok\n", result.stderr
    assert (workspace / "src" / "agentcli" / "__init__.py").read_text() == "# agentcli\n"


def test_a_moved_install_stops_the_next_command(run: Run, installed: tuple[Path, Path]) -> None:
    """Moved by someone outside the sandbox: the next command does not run with a protection
    that now covers nothing."""
    workspace, package = installed
    box = _box(workspace, package)
    (workspace / "src").rename(workspace / "src2")
    (workspace / "src" / "agentcli").mkdir(parents=True)
    result = run(box, "echo evil > src/agentcli/__init__.py")
    assert result.returncode == 126 and "moved or replaced" in result.stderr
    assert not (workspace / "src" / "agentcli" / "__init__.py").exists()


def test_the_model_is_told_the_install_is_agentcli_s(
    run: Run, installed: tuple[Path, Path]
) -> None:
    workspace, package = installed
    box = _box(workspace, package)
    result = run(box, "echo 'import os' > .venv/lib/python3/site-packages/evil.pth")
    explained = box.explain_failure(result.stderr, result.returncode, WORKSPACE_WRITE)
    assert explained is not None and "agentcli's own installation" in explained, explained


BYTECODE_WRITES = {
    "a planted .pyc": "mkdir -p {mirror} && echo evil > {mirror}/__init__.cpython-311.pyc",
    "the kept dataclass code": "echo evil > {cache}",
    "python": "python3 -c \"open('{cache}', 'w').write('evil')\"",
    "a moved prefix": "mv bytecode bytecode-aside && mkdir -p {mirror} && echo evil > {cache}",
    "a link in its place": "rm -rf bytecode; ln -s elsewhere bytecode",
}


@pytest.mark.parametrize("confinement", OPENED)
@pytest.mark.parametrize("how", sorted(BYTECODE_WRITES))
def test_a_command_cannot_change_the_byte_code_agentcli_starts_from(
    run: Run,
    sandbox: OsSandbox,
    how: str,
    confinement: Confinement,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PYTHONPYCACHEPREFIX inside the workspace: the byte-code of everything agentcli runs at
    its next start lies there (and the dataclass code it keeps, `agentcli.dataclass_code`),
    so it is part of agentcli's own installation, read-only to every command."""
    from agentcli import dataclass_code
    from agentcli.own_install import own_install_paths

    prefix = sandbox.workspace / "bytecode"
    monkeypatch.setattr(sys, "pycache_prefix", str(prefix))
    cache = dataclass_code.cache_path()
    assert cache is not None and prefix in cache.parents
    cache.parent.mkdir(parents=True)
    cache.write_bytes(b"kept")
    before = {p: p.read_bytes() for p in prefix.rglob("*") if p.is_file()}
    box = OsSandbox(
        workspace=sandbox.workspace, settings=SandboxSettings(own_install=own_install_paths())
    )
    command = BYTECODE_WRITES[how].format(
        mirror=cache.parent.relative_to(sandbox.workspace),
        cache=cache.relative_to(sandbox.workspace),
    )
    result = run(box, f"{command}; echo ok > control.txt", confinement=confinement)
    assert prefix.is_dir() and not prefix.is_symlink(), result.stderr
    assert {p: p.read_bytes() for p in prefix.rglob("*") if p.is_file()} == before, result.stderr
    assert (sandbox.workspace / "control.txt").read_text() == "ok\n", result.stderr
