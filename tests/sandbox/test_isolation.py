"""What a sandboxed command cannot reach, whatever it runs: the read-only profile's limits, other
processes and their environments, processes that outlive the command, secrets in the
environment and under the home directory, agentcli's own data, the host's unix sockets, and the
system calls the namespaces do not cover. Each class is played by several commands."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentcli.confinement import (
    LEFTOVERS_NOTE,
    READ_ONLY,
    WORKSPACE_WRITE,
    Confinement,
    Profile,
)
from agentcli.sandbox import exec as helper
from agentcli.sandbox.runner import OsSandbox, SandboxSettings
from tests.sandbox.conftest import Run, requires_landlock, unix_socket_listener

pytestmark = requires_landlock
PY = sys.executable


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home directory with credentials in the usual places, each holding a unique secret."""
    home = tmp_path / "home"
    for name in (".ssh/id_ed25519", ".aws/credentials", ".netrc", ".docker/config.json"):
        path = home / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"SECRET-{name}\n")
    (home / "notes.txt").write_text("plain file in home\n")
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def secrets_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    values = {
        "ANTHROPIC_API_KEY": f"sk-ant-{uuid.uuid4().hex}",
        "GITHUB_TOKEN": f"ghp_{uuid.uuid4().hex}",
        "AWS_SECRET_ACCESS_KEY": uuid.uuid4().hex,
        "MY_SERVICE_PASSWORD": uuid.uuid4().hex,
        "STRIPE_SECRET": uuid.uuid4().hex,
        "OPENAI_API_KEY": uuid.uuid4().hex,
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


def _no_leftover(marker: str, wait_s: float = 0) -> bool:
    """No process holds `marker` in its command line (after up to `wait_s` for SIGKILLs the
    kernel is still delivering); any found is killed, so the suite never leaks one."""
    deadline = time.monotonic() + wait_s
    while _holders(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    holders = _holders(marker)
    for pid in holders:
        os.kill(pid, 9)
    return not holders


def _holders(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(entry.name))
    return found


# -- the read-only profile -------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "echo x > new.txt",
        "touch a.txt",
        "rm a.txt",
        "mkdir d",
        "ln -s a.txt l",
        f"{PY} -c \"open('a.txt', 'a').write('x')\"",
        "cp a.txt b.txt",
        "mv a.txt b.txt",
        "git init -q",
    ],
)
def test_the_read_only_profile_writes_nothing_in_the_workspace(
    run: Run, sandbox: OsSandbox, command: str
) -> None:
    (sandbox.workspace / "a.txt").write_text("a\n")
    before = sorted(p.name for p in sandbox.workspace.iterdir())
    result = run(sandbox, command, confinement=READ_ONLY)
    assert result.returncode != 0, result.stdout
    assert sorted(p.name for p in sandbox.workspace.iterdir()) == before
    assert (sandbox.workspace / "a.txt").read_text() == "a\n"


def test_the_read_only_profile_reads_the_workspace_and_runs_tools(run: Run, repo: Path) -> None:
    box = OsSandbox(workspace=repo)
    result = run(
        box,
        "cat a.txt && ls && git status --short && git log --oneline && echo t > $TMPDIR/t && "
        "cat $TMPDIR/t && wc -l a.txt",
        confinement=READ_ONLY,
    )
    assert result.returncode == 0, result.stderr
    assert "first" in result.stdout and "t\n" in result.stdout


def test_the_read_only_profile_reads_nothing_outside(
    run: Run, sandbox: OsSandbox, home: Path, tmp_path: Path
) -> None:
    box = OsSandbox(workspace=sandbox.workspace)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "data").write_text("ELSEWHERE")
    (sandbox.workspace / "docs").symlink_to(elsewhere)
    (sandbox.workspace / "h").symlink_to(home)
    for command in (
        "cat d?cs/data",
        "cat docs/data",
        "grep -R ELSEWHERE .",
        f"cat {home}/notes.txt",
        "cat h/notes.txt",
        "git diff --no-index docs/data /etc/hostname",
        f"{PY} -c \"print(open('h/notes.txt').read())\"",
    ):
        result = run(box, command, confinement=READ_ONLY)
        out = result.stdout + result.stderr
        assert "ELSEWHERE" not in out and "plain file in home" not in out, command


# -- other processes, and processes that outlive the command -----------------------------------


@pytest.mark.parametrize("profile", [READ_ONLY, WORKSPACE_WRITE])
def test_no_process_outside_is_visible_and_no_environment_holds_a_secret(
    run: Run, sandbox: OsSandbox, secrets_env: dict[str, str], profile: Confinement
) -> None:
    box = OsSandbox(workspace=sandbox.workspace)  # built with the secrets in our environment
    result = run(
        box,
        "ls /proc | grep -c '^[0-9]'; cat /proc/*/environ | tr '\\0' '\\n'; env; "
        "cat /proc/$PPID/environ /proc/1/environ | tr '\\0' '\\n'; "
        "for p in /proc/[0-9]*; do cat $p/cmdline | tr '\\0' ' '; echo; done",
        confinement=profile,
    )
    out = result.stdout + result.stderr
    for name, value in secrets_env.items():
        assert value not in out, f"{name} leaked to a sandboxed command"
    assert int(result.stdout.splitlines()[0]) <= 6  # PID 1, bash, its pipeline


@pytest.mark.parametrize(
    "spawn",
    [
        "setsid sleep {m} &",
        "( (sleep {m} &) & )",
        "nohup sleep {m} >/dev/null 2>&1 &",
        "sleep {m} & disown",
        "setsid -f sleep {m}",
        f'{PY} -c "import os,time\nif os.fork() == 0:\n    os.setsid()\n'
        "    if os.fork() == 0:\n        os.execvp('sleep', ['sleep', '{m}'])\"",
    ],
)
def test_nothing_the_command_started_outlives_it(run: Run, sandbox: OsSandbox, spawn: str) -> None:
    marker = f"{uuid.uuid4().int % 10**6}.{uuid.uuid4().int % 10**6}"
    result = run(sandbox, spawn.format(m=marker) + "\necho started")
    assert "started" in result.stdout
    assert _no_leftover(marker), f"{spawn} survived the command"


def test_stopped_leftovers_are_reported_and_exit_codes_kept(run: Run, sandbox: OsSandbox) -> None:
    result = run(sandbox, "sleep 100 & echo bg; exit 7")
    assert result.returncode == 7
    assert LEFTOVERS_NOTE in result.stderr
    killed = run(sandbox, "kill -TERM $$")
    assert killed.returncode == -15


def test_a_timeout_stops_the_whole_namespace(sandbox: OsSandbox) -> None:
    marker = f"{uuid.uuid4().int % 10**6}.25"
    prepared = sandbox.prepare(["bash", "-c", f"setsid sleep {marker} & sleep 60"], WORKSPACE_WRITE)
    proc = subprocess.Popen(
        prepared.argv, cwd=sandbox.workspace, env=dict(prepared.env), start_new_session=True
    )
    try:
        proc.wait(timeout=1)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)  # what agentcli does after its grace period
        proc.wait(timeout=10)
    assert _no_leftover(marker, wait_s=5)


# -- secrets in the environment and on disk ----------------------------------------------------


def test_the_environment_is_scrubbed_and_the_rest_kept(
    run: Run, sandbox: OsSandbox, secrets_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLAIN_SETTING", "kept")
    monkeypatch.setenv("DEPLOY_TOKEN_KEEP", "kept-by-config")
    box = OsSandbox(
        workspace=sandbox.workspace, settings=SandboxSettings(env_keep=("DEPLOY_TOKEN_KEEP",))
    )
    result = run(box, "env")
    assert "PLAIN_SETTING=kept" in result.stdout
    assert "DEPLOY_TOKEN_KEEP=kept-by-config" in result.stdout
    for value in secrets_env.values():
        assert value not in result.stdout


def test_credentials_under_home_agentcli_data_and_system_secrets_are_hidden(
    run: Run, sandbox: OsSandbox, home: Path, tmp_path: Path
) -> None:
    data = tmp_path / "agentcli-data"
    data.mkdir()
    (data / "trusted_workspaces.json").write_text("{}")
    box = OsSandbox(
        workspace=sandbox.workspace,
        settings=SandboxSettings(agentcli_dirs=(data,), deny_read=(home / "notes.txt",)),
    )
    for profile in (READ_ONLY, WORKSPACE_WRITE):
        result = run(
            box,
            f"cat {home}/.ssh/id_ed25519 {home}/.aws/credentials {home}/.netrc "
            f"{home}/.docker/config.json {home}/notes.txt /etc/shadow; ls -a {home}/.ssh; "
            f"ls -a {data}; echo '{{\"x\": 1}}' > {data}/trusted_workspaces.json",
            confinement=profile,
        )
        assert "SECRET" not in result.stdout + result.stderr
        assert "plain file in home" not in result.stdout
        assert "root:" not in result.stdout
    assert (data / "trusted_workspaces.json").read_text() == "{}"


def test_a_secret_inside_the_workspace_can_be_hidden(run: Run, sandbox: OsSandbox) -> None:
    (sandbox.workspace / ".env").write_text("API=SECRET-ENV\n")
    box = OsSandbox(
        workspace=sandbox.workspace,
        settings=SandboxSettings(deny_read=(sandbox.workspace / ".env",)),
    )
    for profile in (READ_ONLY, WORKSPACE_WRITE):
        result = run(box, "cat .env; grep -r SECRET .", confinement=profile)
        assert "SECRET-ENV" not in result.stdout


def test_the_current_directory_does_not_lead_under_the_mounts(run: Run, repo: Path) -> None:
    """The helper starts in the workspace as it was before its mounts: a relative path must
    still meet them (here: `.git` read-only beneath a workspace bound again under /tmp)."""
    box = OsSandbox(workspace=repo)
    result = run(
        box, "echo x >> .git/config; cd .git && touch ./pwned", confinement=WORKSPACE_WRITE
    )
    assert result.returncode != 0
    assert "x" not in (repo / ".git" / "config").read_text().splitlines()
    assert not (repo / ".git" / "pwned").exists()


# -- unix sockets and the network ---------------------------------------------------------------


@pytest.fixture
def unix_listener(tmp_path: Path) -> Iterator[tuple[Path, list[bytes]]]:
    path = tmp_path / "agent.sock"
    with unix_socket_listener(path) as received:
        yield path, received


def _connect_unix(path: Path) -> str:
    code = (
        "import socket; s = socket.socket(socket.AF_UNIX); "
        f"s.connect({str(path)!r}); s.sendall(b'hello'); print('CONNECTED')"
    )
    return f'{PY} -c "{code}"'


@pytest.mark.parametrize("profile", [READ_ONLY, WORKSPACE_WRITE])
def test_host_unix_sockets_are_out_of_reach(
    run: Run,
    sandbox: OsSandbox,
    unix_listener: tuple[Path, list[bytes]],
    profile: Confinement,
) -> None:
    path, received = unix_listener
    control = socket.socket(socket.AF_UNIX)
    control.connect(str(path))
    control.close()
    (sandbox.workspace / "via-link").symlink_to(path)
    for target in (path, sandbox.workspace / "via-link"):
        result = run(sandbox, _connect_unix(target), confinement=profile)
        assert "CONNECTED" not in result.stdout
    assert b"hello" not in received


def test_an_allowed_unix_socket_is_reachable(
    run: Run, sandbox: OsSandbox, unix_listener: tuple[Path, list[bytes]]
) -> None:
    path, received = unix_listener
    box = OsSandbox(
        workspace=sandbox.workspace, settings=SandboxSettings(allow_unix_sockets=(path,))
    )
    result = run(box, _connect_unix(path))
    assert "CONNECTED" in result.stdout, result.stderr
    deadline = time.monotonic() + 5
    while not received and time.monotonic() < deadline:
        time.sleep(0.02)  # the listener thread records what it got
    assert received == [b"hello"]


def test_unix_sockets_inside_the_sandbox_work(run: Run, sandbox: OsSandbox) -> None:
    code = (
        "import socket, os; p = os.environ['TMPDIR'] + '/s'; srv = socket.socket(socket.AF_UNIX);"
        " srv.bind(p); srv.listen(); c = socket.socket(socket.AF_UNIX); c.connect(p);"
        " print('LOCAL UNIX OK')"
    )
    result = run(sandbox, f'{PY} -c "{code}"')
    assert "LOCAL UNIX OK" in result.stdout, result.stderr


SYSCALLS = {
    "x86_64": {"IO_URING_SETUP": 425, "KEYCTL": 250},
    "aarch64": {"IO_URING_SETUP": 425, "KEYCTL": 219},
}
"""The raw system call numbers these checks use, per machine (io_uring_setup is 425 in the
generic table too)."""


@pytest.mark.parametrize(
    ("code", "what"),
    [
        ("import socket; socket.socket(40, socket.SOCK_STREAM)", "vsock"),
        ("import socket; socket.socket(17, socket.SOCK_RAW)", "packet"),
        (
            "import ctypes; r = ctypes.CDLL(None, use_errno=True).syscall(IO_URING_SETUP, 8, 0)\n"
            "assert r < 0 and ctypes.get_errno() == 1, (r, ctypes.get_errno())",
            "io_uring",
        ),
        (
            "import ctypes; r = ctypes.CDLL(None, use_errno=True).syscall(KEYCTL, 0, -3, 0)\n"
            "assert r < 0 and ctypes.get_errno() == 1, (r, ctypes.get_errno())",
            "keyctl",
        ),
    ],
)
def test_what_the_namespaces_do_not_cover_is_filtered(
    run: Run, sandbox: OsSandbox, code: str, what: str
) -> None:
    numbers = SYSCALLS.get(os.uname().machine)
    assert numbers is not None, f"add {os.uname().machine}'s system call numbers to SYSCALLS"
    for name, number in numbers.items():
        code = code.replace(name, str(number))
    result = run(sandbox, f"{PY} -c '{code}' && echo OPENED")
    if what in ("vsock", "packet"):
        assert "OPENED" not in result.stdout and "Address family" in result.stderr
    else:
        assert "OPENED" in result.stdout, result.stderr  # the call failed with EPERM


def test_the_network_opens_only_when_the_decision_says_so(run: Run, sandbox: OsSandbox) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        code = f"import socket; socket.create_connection(('127.0.0.1', {port}), 3); print('IN')"
        closed = run(sandbox, f'{PY} -c "{code}"', confinement=WORKSPACE_WRITE)
        opened = run(
            sandbox,
            f'{PY} -c "{code}"',
            confinement=Confinement(profile=Profile.WORKSPACE_WRITE, network=True),
        )
        read_only = run(sandbox, f'{PY} -c "{code}"', confinement=READ_ONLY)
    assert "IN" not in closed.stdout and "IN" not in read_only.stdout
    assert "IN" in opened.stdout, opened.stderr


def test_the_helper_note_matches_what_the_tool_strips() -> None:
    assert helper.LEFTOVERS_NOTE == LEFTOVERS_NOTE


def test_the_hosts_message_queues_and_shared_memory_are_not_the_commands(
    run: Run, sandbox: OsSandbox
) -> None:
    shm = Path("/dev/shm") / f"agentcli-host-{uuid.uuid4().hex[:8]}"
    shm.write_text("HOST-SHM")
    try:
        result = run(sandbox, f"ls -a /dev/shm /dev/mqueue; cat {shm}")
        assert "HOST-SHM" not in result.stdout and shm.name not in result.stdout
    finally:
        shm.unlink()
