"""What this machine's kernel lets the sandbox enforce, found by trying it.

`probe_support()` runs the real helper twice on a scratch directory, in the read-only and the
workspace-write profile, with a small check program inside, and compares what it could do with
what each profile must allow: writes (workspace, `.git`, outside), reads outside, a hidden
directory, a PID namespace of its own, the network, a vsock socket. Anything that does not hold
means no sandbox here: commands then ask (`agentcli.permissions.setup`). The result is kept per
boot, kernel, Python and helper version in the data dir, so `run` does not pay the ~0.1 s probe
each time; `sandbox_report()` turns it into lines for `agentcli doctor`. `start_probe()` lets
`run` begin it on another thread while the rest of start-up goes on (where the data dir has no
result yet, the probe then costs the first request nothing); nothing is written until the
session asks for the answer, so a run refused before that leaves no file behind.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import json
import platform
import socket
import subprocess
import sys
import tempfile
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path

from agentcli.private import write_private
from agentcli.sandbox import landlock, seccomp
from agentcli.sandbox.bootstrap import helper_argv, helper_sources

PROBE_TIMEOUT_S = 20
CACHE_FILE = "sandbox-probe.json"
_CHECK = r"""
import json, os, sys, _socket
ws, outside, hidden, port = sys.argv[1:5]
def can(action):
    try:
        action()
    except OSError:
        return False
    return True
def connect():
    s = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect(("127.0.0.1", int(port)))
found = {
    "write_workspace": can(lambda: open(ws + "/probe-write", "w").close()),
    "write_git": can(lambda: open(ws + "/.git/probe-write", "w").close()),
    "write_outside": can(lambda: open(os.path.dirname(outside) + "/probe-write", "w").close()),
    "read_outside": can(lambda: open(outside).read()),
    "see_hidden": os.path.exists(hidden + "/secret"),
    "own_pid_namespace": os.getppid() == 1,
    "see_other_processes": len([p for p in os.listdir("/proc") if p.isdigit()]) > 3,
    "network": can(connect),
    "vsock": can(lambda: _socket.socket(40, _socket.SOCK_STREAM).close()),
}
print(json.dumps(found))
"""
MUST = {
    "read-only": {
        **{"write_workspace": False, "write_git": False, "write_outside": False},
        **{"read_outside": False, "see_hidden": False, "own_pid_namespace": True},
        **{"see_other_processes": False, "network": False, "vsock": False},
    },
    "workspace-write": {
        **{"write_workspace": True, "write_git": False, "write_outside": False},
        **{"read_outside": False, "see_hidden": False, "own_pid_namespace": True},
        **{"see_other_processes": False, "network": False, "vsock": False},
    },
}
"""What each profile must (True) and must not (False) be able to do, check by check."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxSupport:
    landlock_abi: int
    ok: bool
    """Both profiles hold: commands that would run unasked run sandboxed."""
    problem: str | None = None
    """Why there is no sandbox (when not ok)."""
    seccomp: bool = False
    checks: dict[str, dict[str, bool]] = field(default_factory=dict)
    """Per profile, what the check program inside could do."""

    @property
    def network_blockable(self) -> bool:
        return self.ok


@functools.cache
def probe_support() -> SandboxSupport:
    cache = _cache_path()
    support, found = _prefetched(cache) or _find(cache)
    if support.ok and not found:
        _write_cache(cache, support)
    return support


def _find(cache: Path | None) -> tuple[SandboxSupport, bool]:
    """What the sandbox can enforce here, and whether it was read from `cache` (else it was
    probed now, or needs no probe)."""
    kernel = f"{platform.system()} {platform.release()}"
    if platform.system() != "Linux":
        return _unsupported(0, f"the OS sandbox needs Linux with Landlock ({kernel})"), False
    abi = landlock.abi_version()
    if abi < 1:
        return _unsupported(
            0,
            f"the kernel ({kernel}) does not offer Landlock (Linux ≥ 5.13 with landlock "
            "in the LSM list, e.g. lsm=landlock,… on the kernel command line)",
        ), False
    if not seccomp.available():
        return _unsupported(abi, "libseccomp (libseccomp.so.2) is not installed"), False
    cached = _read_cache(cache)
    if cached is not None:
        return cached, True
    return _probe(abi), False


class _Started(threading.Thread):
    """The probe `start_probe` began, for data dir `cache`."""

    def __init__(self, cache: Path | None) -> None:
        super().__init__(name="agentcli-sandbox-probe", daemon=True)
        self.cache = cache
        self.found: tuple[SandboxSupport, bool] | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.found = _find(self.cache)
        except BaseException as exc:  # raised where the answer is asked for
            self.error = exc

    def answer(self) -> tuple[SandboxSupport, bool]:
        self.join()
        if self.found is None:
            raise self.error or RuntimeError("the sandbox probe ended without an answer")
        return self.found


_started: _Started | None = None
_start_lock = threading.Lock()


def start_probe() -> None:
    """Begin finding the answer on another thread (its commands run on another core while
    start-up imports and reads); `probe_support()` waits for it. Once per process; nothing
    when the answer is known already."""
    global _started
    with _start_lock:
        if _started is not None or probe_support.cache_info().currsize:
            return
        _started = _Started(_cache_path())
        _started.start()
        # A run that ends before asking still removes the probe's scratch directory.
        atexit.register(_started.join, PROBE_TIMEOUT_S * len(MUST))


def _prefetched(cache: Path | None) -> tuple[SandboxSupport, bool] | None:
    """The answer `start_probe` found, if it was started for the same data dir (taken once:
    a later session of the process finds its own)."""
    global _started
    with _start_lock:
        started, _started = _started, None
    if started is None or started.cache != cache:
        return None
    return started.answer()


def _probe(abi: int) -> SandboxSupport:
    with tempfile.TemporaryDirectory(prefix="agentcli-probe-") as scratch:
        root = Path(scratch)
        workspace, outside = root / "ws", root / "outside"
        hidden = workspace / "hidden"  # inside what the command sees: hidden by a mount
        for directory in (workspace / ".git", outside, hidden):
            directory.mkdir(parents=True)
        (outside / "secret").write_text("x")
        (hidden / "secret").write_text("x")
        checks: dict[str, dict[str, bool]] = {}
        with socket.create_server(("127.0.0.1", 0)) as listener:
            port = str(listener.getsockname()[1])
            for profile in MUST:
                found = _run_check(profile, workspace, outside, hidden, port)
                if isinstance(found, str):
                    return _unsupported(abi, f"the sandbox helper failed: {found}")
                checks[profile] = found
    for profile, expected in MUST.items():
        wrong = [name for name, value in expected.items() if checks[profile].get(name) != value]
        if wrong:
            return SandboxSupport(
                landlock_abi=abi,
                ok=False,
                problem=f"the {profile} profile does not hold here ({', '.join(wrong)})",
                seccomp=True,
                checks=checks,
            )
    return SandboxSupport(landlock_abi=abi, ok=True, seccomp=True, checks=checks)


def _run_check(
    profile: str, workspace: Path, outside: Path, hidden: Path, port: str
) -> dict[str, bool] | str:
    options = ["--hide", str(hidden), "--read-only", str(workspace / ".git")]
    for path in {sys.prefix, sys.base_prefix, "/usr", "/lib", "/lib64", "/etc"}:
        options += ["--read", path]
    for path in (sys.prefix, sys.base_prefix, sys.executable, "/lib64", "/bin"):
        options += ["--link", path]
    options += ["--read" if profile == "read-only" else "--write", str(workspace)]
    command = [sys.executable, "-I", "-S", "-c", _CHECK]
    command += [str(workspace), str(outside / "secret"), str(hidden), port]
    try:
        done = subprocess.run(
            helper_argv(options, command),
            cwd=workspace,
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        found = json.loads(done.stdout or "null")
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
        return str(exc)
    if not isinstance(found, dict):
        return done.stderr.strip() or f"exit code {done.returncode}, no report"
    return {str(k): bool(v) for k, v in found.items()}


def _unsupported(abi: int, problem: str) -> SandboxSupport:
    return SandboxSupport(landlock_abi=abi, ok=False, problem=problem)


def _cache_path() -> Path | None:
    """Where this boot's result is kept for this kernel, Python and helper."""
    from agentcli.paths import data_home

    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None
    key = "\0".join([boot, platform.release(), sys.executable, sys.version, helper_sources()])
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return data_home() / f"{CACHE_FILE}.{digest}"


def _read_cache(path: Path | None) -> SandboxSupport | None:
    if path is None:
        return None
    try:
        data = json.loads(path.read_text())
        return SandboxSupport(**data)
    except (OSError, ValueError, TypeError):
        return None


def _write_cache(path: Path | None, support: SandboxSupport) -> None:
    if path is None:
        return
    with contextlib.suppress(OSError):
        write_private(path, json.dumps(asdict(support)).encode())


def sandbox_report(support: SandboxSupport | None = None) -> list[str]:
    """Lines for `agentcli doctor`: what the sandbox enforces here and what that means."""
    support = support or probe_support()
    kernel = f"{platform.system()} {platform.release()} ({platform.machine()})"
    if not support.ok:
        return [
            f"sandbox: unavailable on {kernel}: {support.problem}",
            "commands: every command asks, in every mode but yolo, and runs unconfined only "
            "if you approve it",
        ]
    return [
        f"sandbox: enforced on {kernel}: Landlock ABI {support.landlock_abi}, user, mount, "
        "PID, IPC and network namespaces, seccomp",
        "sandbox read-only profile (unasked read-only commands): reads the workspace and "
        "system/toolchain dirs only; writes only a private temp dir; no network",
        "sandbox workspace-write profile (auto mode, allowed and approved commands): writes "
        "the workspace, $TMPDIR and sandbox.writable; .git read-only unless opened; network "
        "off unless opened",
        "sandbox, both: secrets hidden (~/.ssh, ~/.aws, …, agentcli's data), environment "
        "scrubbed, own PID namespace (nothing outlives a command), "
        + (
            "no host unix sockets"
            if support.landlock_abi >= landlock.RESOLVE_UNIX_ABI
            else "no host unix sockets in the hidden places (/tmp, /run, …); one elsewhere is "
            f"reachable (Landlock ABI {support.landlock_abi} < {landlock.RESOLVE_UNIX_ABI})"
        ),
    ]
