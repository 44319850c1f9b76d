"""Escapes found in review (issue 12): ways out of the sandbox the other sandbox tests do not
play, each with real processes on this kernel.

Most of the other tests put every path outside the workspace under pytest's temp dir, that is
under /tmp, which the sandbox replaces wholesale with an empty tmpfs: there they cannot tell
whether a mechanism holds or /tmp simply hid everything. The tests here that need a path
outside the workspace that the sandbox does *not* replace wholesale (like the real home
directory or /var/lib) make one outside those directories (`visible_dir`): beside this checkout,
or in the home directory when the checkout itself lies under /tmp (a fresh clone there must run
these tests, not skip them).

- capabilities: as root (agentcli in a container), the command keeps every capability in the
  sandbox's user namespace, so it may change the mounts that confine it (`mount_setattr`
  clears the read-only flag of `.git`; `open_tree` clones a mount without what covers it) and
  trace PID 1;
- the host's terminals (`/dev/pts`) are reachable: a command reads what the user types and
  writes escape sequences straight to the terminal, past agentcli's sanitizer;
- pathname unix sockets outside the directories the sandbox hides are connectable;
- the helper and the command outlive agentcli when agentcli dies;
- a `deny_read` path inside the workspace is hidden by name: renaming its parent in one
  command shows it to the next;
- git metadata beyond the workspace's own `.git`: a submodule's `.git` file, or a `.git` in a
  workspace that is not a repository, can be planted for the user's own git to run.
"""

from __future__ import annotations

import contextlib
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentcli.confinement import READ_ONLY, WORKSPACE_WRITE, Confinement, Profile
from agentcli.permissions.confine import escalated
from agentcli.permissions.shell import parse_command
from agentcli.sandbox.exec import PRIVATE as RUNTIME_DIRS
from agentcli.sandbox.runner import OsSandbox, SandboxSettings
from tests.sandbox.conftest import GIT_ENV, Run, requires_landlock, unix_socket_listener

pytestmark = requires_landlock
PY = sys.executable
CHECKOUT = Path(__file__).resolve().parents[2]
BOTH = [READ_ONLY, WORKSPACE_WRITE]

# mount_setattr(AT_FDCWD, path, 0, {attr_clr = MOUNT_ATTR_RDONLY}); 442 on x86_64 and arm64.
MOUNT_SETATTR_PY = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
class Attr(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in ("set", "clr", "propagation", "userns_fd")]
for path in sys.argv[1:]:
    r = libc.syscall(442, -100, path.encode(), 0, ctypes.byref(Attr(0, 1, 0, 0)), 32)
    print("mount_setattr", path, r, ctypes.get_errno())
"""
# open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | O_CLOEXEC): a detached copy of the mount at
# `path` without the mounts on top of it (428 on x86_64 and arm64); then use it.
OPEN_TREE_PY = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.syscall(428, -100, sys.argv[1].encode(), 1 | 0o2000000)
print("open_tree", fd, ctypes.get_errno())
base = f"/proc/self/fd/{fd}/"
try:
    print(open(base + sys.argv[2]).read())
except OSError as exc:
    print("read:", exc)
try:
    open(base + sys.argv[3], "w").write("pwned\\n")
    print("WROTE")
except OSError as exc:
    print("write:", exc)
"""


def _wait(predicate: object, timeout: float = 60.0) -> None:
    """Until `predicate` holds; the timeout only bounds a hang (a loaded machine can take
    seconds to start a process), it is not what a test measures."""
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.02)


def _outside_the_private_dirs(path: Path) -> bool:
    return not any(path == Path(d) or Path(d) in path.parents for d in RUNTIME_DIRS)


@pytest.fixture
def visible_dir() -> Iterator[Path]:
    """A directory outside the workspace that the sandbox does not replace wholesale (unlike
    anything under /tmp): beside this checkout, else in the home directory. Short, for unix
    socket paths."""
    places = [p for p in (CHECKOUT, Path.home()) if _outside_the_private_dirs(p)]
    place = next((p for p in places if os.access(p, os.W_OK)), None)
    if place is None:
        pytest.fail(f"neither this checkout nor the home directory is outside {RUNTIME_DIRS}")
    path = Path(tempfile.mkdtemp(prefix=".sbt-", dir=place))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, **GIT_ENV, "GIT_CONFIG_GLOBAL": "/dev/null"}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


# -- capabilities: a command must not reshape the mounts that confine it -----------------------


def test_a_command_cannot_make_git_writable_again(run: Run, repo: Path) -> None:
    """As root, the command had CAP_SYS_ADMIN over its own mount namespace: `mount_setattr`
    (which Landlock does not mediate) cleared the read-only flag of `.git` and `.agentcli`."""
    box = OsSandbox(workspace=repo)
    result = run(
        box,
        f"{PY} -c '{MOUNT_SETATTR_PY}' .git .agentcli; "
        "echo pwned > .git/pwned; echo 'allow = [\"shell(*)\"]' > .agentcli/config.toml",
        confinement=WORKSPACE_WRITE,
    )
    assert not (repo / ".git" / "pwned").exists(), result.stdout + result.stderr
    assert not (repo / ".agentcli" / "config.toml").exists(), result.stdout


def test_a_command_cannot_write_the_workspace_in_the_read_only_profile(
    run: Run, sandbox: OsSandbox
) -> None:
    """A workspace under /tmp is bound again read-only inside the private /tmp (which Landlock
    lets the command write): clearing that flag made the read-only profile write it."""
    assert Path("/tmp") in sandbox.workspace.parents  # the layout this test is about
    (sandbox.workspace / "a.txt").write_text("a\n")
    result = run(
        sandbox,
        f"{PY} -c '{MOUNT_SETATTR_PY}' \"$PWD\"; echo pwned > a.txt",
        confinement=READ_ONLY,
    )
    assert (sandbox.workspace / "a.txt").read_text() == "a\n", result.stdout


def test_a_command_cannot_clone_a_mount_from_under_what_covers_it(run: Run, repo: Path) -> None:
    """`open_tree(OPEN_TREE_CLONE)` of the workspace gave a copy without the read-only `.git`
    bound over it and without the tmpfs hiding a `deny_read` secret."""
    (repo / "secret").mkdir()
    (repo / "secret" / "key").write_text("DENIED-BY-CONFIG\n")
    box = OsSandbox(workspace=repo, settings=SandboxSettings(deny_read=(repo / "secret",)))
    result = run(
        box,
        f"{PY} -c '{OPEN_TREE_PY}' \"$PWD\" secret/key .git/pwned",
        confinement=WORKSPACE_WRITE,
    )
    assert "DENIED-BY-CONFIG" not in result.stdout
    assert not (repo / ".git" / "pwned").exists(), result.stdout + result.stderr


@pytest.mark.parametrize("profile", BOTH)
def test_a_command_cannot_trace_the_sandbox_pid_1(
    run: Run, sandbox: OsSandbox, profile: Confinement
) -> None:
    """PID 1 stops what the command leaves behind: a command able to attach to it (as root it
    could: same uid, same capabilities) can stop it, or make it forget its parent's death."""
    # PTRACE_SEIZE (0x4206) attaches without stopping PID 1; the tracer's exit detaches it.
    code = (
        "import ctypes; r = ctypes.CDLL(None).ptrace(0x4206, 1, 0, 0); "
        "print('ATTACHED' if r == 0 else 'refused')"
    )
    result = run(sandbox, f'{PY} -c "{code}"', confinement=profile)
    assert "ATTACHED" not in result.stdout


# -- the host's terminals ----------------------------------------------------------------------


@pytest.mark.parametrize("profile", BOTH)
def test_a_command_cannot_reach_the_users_terminal(
    run: Run, sandbox: OsSandbox, profile: Confinement
) -> None:
    """The sandbox's /dev/pts was the host's devpts: a command opened the user's terminal by
    name, read what the user typed and wrote raw escape sequences to the screen."""
    main, secondary = pty.openpty()
    try:
        name = os.ttyname(secondary)
        os.write(main, b"typed-by-the-user\n")  # waiting in the terminal's input
        result = run(
            sandbox,
            f"exec 3<>{name} && printf '\\033]0;SET-BY-THE-COMMAND\\007' >&3; "
            'read -t 1 line <&3; echo "read=$line"',
            confinement=profile,
        )
        ready, _, _ = select.select([main], [], [], 0.5)
        shown = os.read(main, 4096) if ready else b""
    finally:
        os.close(main)
        os.close(secondary)
    assert "typed-by-the-user" not in result.stdout
    assert b"SET-BY-THE-COMMAND" not in shown


# -- unix sockets outside the directories the sandbox hides ------------------------------------


@pytest.fixture
def visible_listener(visible_dir: Path) -> Iterator[tuple[Path, list[bytes]]]:
    path = visible_dir / "a.sock"
    with unix_socket_listener(path) as received:
        yield path, received


@pytest.mark.parametrize("profile", BOTH)
def test_a_unix_socket_outside_the_hidden_dirs_is_out_of_reach(
    run: Run,
    sandbox: OsSandbox,
    visible_listener: tuple[Path, list[bytes]],
    profile: Confinement,
) -> None:
    """Only /tmp, /run, … are masked; on Landlock ABI < 9 nothing else stops connect(): a
    socket under the home directory, /var/lib, /nix/var or a project directory was reachable
    (the LXD, nix-daemon, podman or an editor's socket live in such places)."""
    path, received = visible_listener
    code = (
        "import socket; s = socket.socket(socket.AF_UNIX); "
        f"s.connect({str(path)!r}); s.sendall(b'hello'); print('CONNECTED')"
    )
    result = run(sandbox, f'{PY} -c "{code}"', confinement=profile)
    _wait(lambda: received, 0.5)
    assert "CONNECTED" not in result.stdout
    assert not received


# -- nothing outlives agentcli ------------------------------------------------------------------

AGENTCLI_STAND_IN = """
import subprocess, sys, time
from pathlib import Path
from agentcli.confinement import WORKSPACE_WRITE
from agentcli.sandbox.runner import OsSandbox
box = OsSandbox(workspace=Path(sys.argv[1]))
prepared = box.prepare(["bash", "-c", f"sleep {sys.argv[2]}"], WORKSPACE_WRITE)
subprocess.Popen(prepared.argv, cwd=box.workspace, env=dict(prepared.env),
                 start_new_session=True)
print("started", flush=True)
time.sleep(300)
"""


def test_the_command_dies_when_agentcli_dies(sandbox: OsSandbox) -> None:
    """agentcli killed (SIGKILL, a crash, the terminal closed on a hung process): its helper
    was orphaned, not killed, so the command and everything it started kept running."""
    marker = f"{uuid.uuid4().int % 10**6}.31"
    agentcli = subprocess.Popen(
        [PY, "-c", AGENTCLI_STAND_IN, str(sandbox.workspace), marker],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(CHECKOUT)},
    )
    try:
        assert agentcli.stdout is not None
        assert agentcli.stdout.readline().strip() == "started"
        # The command itself (not the stand-in, whose own command line holds the marker).
        _wait(lambda: _sleeping(marker))
        assert _sleeping(marker), "the sandboxed command never started"
    finally:
        agentcli.send_signal(signal.SIGKILL)
        agentcli.wait(timeout=10)
        if agentcli.stdout is not None:
            agentcli.stdout.close()
    _wait(lambda: not _holders(marker))
    survivors = _holders(marker)
    for pid in survivors:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    assert not survivors, "the sandboxed command outlived agentcli"


KILLED_WHILE_STARTING = """
import os, subprocess, sys, time
from pathlib import Path
from agentcli.confinement import WORKSPACE_WRITE
from agentcli.sandbox.runner import OsSandbox
box = OsSandbox(workspace=Path(sys.argv[1]))
for n, arg in enumerate(sys.argv[2:]):
    if os.fork() == 0:  # one agentcli per command, killed n ms after starting it
        prepared = box.prepare(["bash", "-c", f"sleep {arg}"], WORKSPACE_WRITE)
        subprocess.Popen(prepared.argv, cwd=box.workspace, env=dict(prepared.env))
        time.sleep(n / 1000)
        os.kill(os.getpid(), 9)
    os.wait()
"""


def test_nothing_runs_on_when_agentcli_dies_while_it_starts_the_command(
    sandbox: OsSandbox,
) -> None:
    """agentcli killed at any moment of the start: the helper checks it is still there after it
    asked to die with it, and so does the sandbox's PID 1 with the helper (it was forked, and
    orphaned before it asked, and so ran the command with nobody left to stop it)."""
    base = uuid.uuid4().int % 10**6
    markers = [f"{base}.{n:02d}7" for n in range(12)]
    subprocess.run(
        [PY, "-c", KILLED_WHILE_STARTING, str(sandbox.workspace), *markers],
        env={**os.environ, "PYTHONPATH": str(CHECKOUT)},
        timeout=120,
        check=True,
        capture_output=True,
    )
    _wait(lambda: not any(_holders(m) for m in markers), 5)
    survivors = [pid for m in markers for pid in _holders(m)]
    for pid in survivors:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    assert not survivors, "a command started as agentcli died ran on"


def test_pid_1_does_not_run_the_command_when_the_helper_is_already_gone(tmp_path: Path) -> None:
    """The window the test above can only sweep: PID 1 forked, the helper killed (with
    agentcli) before PID 1 asked to die with it. Played here exactly: the helper's end of the
    pipe that says it is alive is closed before PID 1 starts."""
    from agentcli.sandbox import exec as helper

    marker = tmp_path / "ran"
    alive_read, alive_write = os.pipe()
    status_read, status_write = os.pipe()
    os.close(alive_write)  # the helper is gone
    child = os.fork()
    if child == 0:  # pragma: no cover - the stand-in PID 1
        os.close(status_read)
        options, argv = helper.parse(["--", "touch", str(marker)])
        os._exit(helper._init(options, argv, status_write, str(tmp_path), alive_read))
    os.close(alive_read)
    os.close(status_write)
    _, status = os.waitpid(child, 0)
    os.close(status_read)
    assert os.waitstatus_to_exitcode(status) == helper.FAILED
    assert not marker.exists()


def _sleeping(marker: str) -> bool:
    """Whether the sandboxed `sleep MARKER` itself runs."""
    for pid in _holders(marker):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"sleep\0"):
                return True
    return False


def _holders(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found


# -- deny_read inside the workspace --------------------------------------------------------------


def test_a_hidden_path_in_the_workspace_stays_hidden_after_its_parent_moves(
    run: Run, sandbox: OsSandbox
) -> None:
    """The helper hides `deny_read` paths by name and leaves a missing one alone: a command
    renamed the hidden directory's parent (allowed: only the hidden directory itself is a
    mount point) and the next command, even a read-only one, read it under its new name."""
    secret = sandbox.workspace / "config" / "secrets"
    secret.mkdir(parents=True)
    (secret / "key").write_text("DENIED-BY-CONFIG\n")
    box = OsSandbox(workspace=sandbox.workspace, settings=SandboxSettings(deny_read=(secret,)))
    moved = run(box, "mv config config2 && echo moved", confinement=WORKSPACE_WRITE)
    reads = [run(box, "cat config2/secrets/key", confinement=profile) for profile in BOTH]
    assert all("DENIED-BY-CONFIG" not in r.stdout for r in reads), moved.stdout


# -- git metadata the user's own git reads -------------------------------------------------------


@pytest.fixture
def superproject(tmp_path: Path) -> Path:
    """A repository with one submodule (`sub`, whose `.git` is a file naming its git dir)."""
    origin = tmp_path / "origin"
    origin.mkdir()
    _git(origin, "init", "-q", "-b", "main")
    (origin / "s.txt").write_text("s\n")
    _git(origin, "add", "s.txt")
    _git(origin, "commit", "-qm", "s")
    top = tmp_path / "top"
    top.mkdir()
    _git(top, "init", "-q", "-b", "main")
    _git(top, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(origin), "sub")
    _git(top, "commit", "-qm", "with a submodule")
    return top


def test_a_submodules_git_file_cannot_be_redirected(run: Run, superproject: Path) -> None:
    """A submodule's `.git` is git metadata too: pointed at a git dir the command wrote (with
    `core.fsmonitor` naming a script), the user's next plain `git status` in the workspace runs
    that script, unconfined."""
    before = (superproject / "sub" / ".git").read_text()
    box = OsSandbox(workspace=superproject)
    result = run(
        box,
        "cp -r .git/modules/sub sub/.planted 2>/dev/null || mkdir sub/.planted; "
        "printf 'gitdir: .planted\\n' > sub/.git",
        confinement=WORKSPACE_WRITE,
    )
    assert (superproject / "sub" / ".git").read_text() == before, result.stderr


def test_no_git_dir_can_be_planted_in_a_workspace_that_is_not_a_repository(
    run: Run, sandbox: OsSandbox
) -> None:
    """Not a repository at session start: a command wrote `.git/` with a `core.fsmonitor`;
    the user's shell prompt (which runs `git status` in the current directory) or their next
    git command then runs it, unconfined. Only a command opened for `.git` may create it."""
    result = run(
        sandbox,
        "mkdir -p .git/objects .git/refs && echo 'ref: refs/heads/main' > .git/HEAD && "
        "printf '[core]\\n\\tfsmonitor = ./payload.sh\\n' > .git/config",
        confinement=WORKSPACE_WRITE,
    )
    assert not (sandbox.workspace / ".git" / "config").exists(), result.stderr
    note = sandbox.explain_failure(result.stderr, result.returncode, WORKSPACE_WRITE) or ""
    assert "git init" in note  # the model is told why, and what the user can do


# -- what starts the sandbox -------------------------------------------------------------------


def test_the_helper_never_runs_on_an_interpreter_a_command_may_replace(workspace: Path) -> None:
    """The helper starts before anything is confined: the interpreter it runs on must not be a
    file a sandboxed command can write (see tests/adversarial/test_class3_planted_programs)."""
    interpreters = {sys.executable, getattr(sys, "_base_executable", sys.executable)}
    dirs = tuple({Path(os.path.realpath(p)).parent for p in interpreters})
    box = OsSandbox(workspace=workspace)
    assert box.python is not None and not Path(box.python).is_relative_to(workspace)
    writable_python = OsSandbox(workspace=workspace, settings=SandboxSettings(writable=dirs))
    assert writable_python.python is None
    with pytest.raises(OSError, match="could replace it"):
        writable_python.prepare(["true"], WORKSPACE_WRITE)


def test_a_commit_opened_for_git_cannot_plant_git_config_or_hooks(run: Run, repo: Path) -> None:
    """An approved `git commit` runs with `.git` writable, and runs the repository's hooks: with
    husky, lefthook or pre-commit those are (or read) work-tree files the model edits without
    asking. Through them the approved, innocuous-looking commit wrote `.git/config`
    (`core.fsmonitor`) and `.git/hooks/*`, which the user's own git later runs unconfined."""
    hooks = repo / ".husky"
    hooks.mkdir()
    _git(repo, "config", "core.hooksPath", ".husky")
    # What the model wrote into the work tree (the user's pre-commit hook, now hostile).
    (hooks / "pre-commit").write_text(
        "#!/bin/sh\n"
        "printf '[core]\\n\\tfsmonitor = /tmp/payload\\n' >> .git/config\n"
        "mkdir -p .git/hooks && printf '#!/bin/sh\\n' > .git/hooks/post-checkout\n"
        "exit 0\n"
    )
    (hooks / "pre-commit").chmod(0o755)
    (repo / "b.txt").write_text("b\n")
    box = OsSandbox(workspace=repo)
    confinement = Confinement(profile=Profile.WORKSPACE_WRITE, git_write=True)
    assert escalated(parse_command("git add b.txt && git commit -qm b")) == confinement
    result = run(box, "git add b.txt && git commit -qm b", confinement=confinement)
    assert "fsmonitor" not in (repo / ".git" / "config").read_text(), result.stderr
    assert not (repo / ".git" / "hooks" / "post-checkout").exists()


def test_a_writable_path_inside_the_workspace_cannot_be_turned_into_a_link_out(
    run: Run, sandbox: OsSandbox, visible_dir: Path
) -> None:
    """The helper opens each `--write` path by name for its Landlock rule, following links:
    a `sandbox.writable` entry inside the workspace (relative entries are resolved against it)
    replaced by a link to somewhere else gave the next command write access there."""
    build = sandbox.workspace / "build"
    build.mkdir()
    box = OsSandbox(workspace=sandbox.workspace, settings=SandboxSettings(writable=(build,)))
    swapped = run(box, f"rmdir build && ln -s {visible_dir} build", confinement=WORKSPACE_WRITE)
    # In the sandbox `build` is a mount point of its own, so the swap fails there ("busy");
    # made anyway (as anything else outside the sandbox could), it must not carry the grant.
    assert not (sandbox.workspace / "build").is_symlink(), swapped.stderr
    build.rmdir()
    build.symlink_to(visible_dir)
    run(box, f"echo pwned > {visible_dir}/planted", confinement=WORKSPACE_WRITE)
    assert not (visible_dir / "planted").exists()


def test_git_opened_cannot_be_turned_into_a_link_out(
    run: Run, repo: Path, visible_dir: Path
) -> None:
    """Same lookup by name, for `.git` when a command is opened for it (an approved commit
    running a work-tree hook): `.git` moved aside and replaced by a link, the next such command
    could write wherever the link points."""
    box = OsSandbox(workspace=repo)
    opened = Confinement(profile=Profile.WORKSPACE_WRITE, git_write=True)
    run(box, f"mv .git .git-aside && ln -s {visible_dir} .git", confinement=opened)
    run(box, f"echo pwned > {visible_dir}/planted", confinement=opened)
    assert not (visible_dir / "planted").exists()


def test_agentcli_state_stays_hidden_when_the_workspace_is_the_home_directory(
    run: Run, visible_dir: Path
) -> None:
    """agentcli started in the home directory: its config and data (the trust store) are
    hidden by name beneath the workspace. Renaming `~/.config` in one command showed (and let
    the next command write) `~/.config2/agentcli/config.toml`."""
    home = visible_dir
    config = home / ".config" / "agentcli"
    config.mkdir(parents=True)
    (config / "config.toml").write_text("# the user's config\n")
    box = OsSandbox(workspace=home, settings=SandboxSettings(agentcli_dirs=(config,)))
    run(box, "mv .config .config2", confinement=WORKSPACE_WRITE)
    after = run(
        box,
        "cat .config2/agentcli/config.toml; echo 'allow = [\"shell(*)\"]' >> "
        ".config2/agentcli/config.toml",
        confinement=WORKSPACE_WRITE,
    )
    moved = home / ".config2" / "agentcli" / "config.toml"
    assert "the user's config" not in after.stdout
    assert not moved.exists() or "shell(*)" not in moved.read_text()


@pytest.mark.parametrize("profile", BOTH)
def test_a_deny_read_path_created_during_the_session_is_hidden(
    run: Run, sandbox: OsSandbox, profile: Confinement
) -> None:
    """`sandbox.deny_read` (and the credential list) were resolved once, keeping only paths that
    existed when the session started: a `.env` written later, or `~/.aws` after `aws
    configure`, was readable by every command for the rest of the session."""
    secret = sandbox.workspace / ".env"
    box = OsSandbox(workspace=sandbox.workspace, settings=SandboxSettings(deny_read=(secret,)))
    secret.write_text("API=CREATED-LATER\n")
    result = run(box, "cat .env", confinement=profile)
    assert "CREATED-LATER" not in result.stdout


def test_a_git_dir_the_user_made_since_the_session_started_is_left_alone(
    run: Run, sandbox: OsSandbox
) -> None:
    """`.git` must not appear in a workspace that was not a repository, unless someone other
    than a sandboxed command made it: the user running `git init` between two commands keeps
    their repository."""
    subprocess.run(
        ["git", "init", "-q"], cwd=sandbox.workspace, check=True, env=os.environ | GIT_ENV
    )
    result = run(sandbox, "echo hi", confinement=WORKSPACE_WRITE)
    assert result.returncode == 0, result.stderr
    assert (sandbox.workspace / ".git" / "HEAD").exists()
