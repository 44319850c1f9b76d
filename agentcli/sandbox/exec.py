"""The sandbox helper: confine a command, run it as the child of a PID 1 of its own, and make
sure nothing it started outlives it.

    python -I -S -c PROGRAM [OPTION PATH]... [--network] -- ARGV...

(see `bootstrap.helper_argv`; `agentcli.sandbox.runner` builds the options). The command sees a
root of its own, built from an empty tmpfs: only the paths below are in it, everything else of
the host (the rest of the home directory, other projects, sockets, /var, /srv…) does not exist
for it; /tmp, /var/tmp, /run and /dev/shm are empty ones of its own, /dev the host's devices
with a devpts instance of its own, /proc its PID namespace's.
- `--read P`: in the root, read-only; the command may read and execute beneath it (Landlock);
- `--write P`: in the root, writable (Landlock allows writes beneath it);
- `--link P`: the symbolic links on the way to P are copied, so P leads where it does on the
  host (`/bin` to `usr/bin`, a PATH entry through a link);
- `--hide P`: in the root, a directory covered by an empty tmpfs, a file by /dev/null;
- `--read-only P`: bind-mounted read-only (`.git`, `.agentcli`);
- `--socket P`: a unix socket in the root, connectable (on Landlock ABI ≥ 9, only those);
- `--absent P`: P must not exist after the command unless it existed before (a `.git`
  planted in a workspace that was not a repository, a `.mcp.json`): removed if the command
  created it (if it exists before the command starts, someone else made it: it is left);
- `--tmp P`: the value of TMPDIR/TMP/TEMP;
- `--seccomp HEX`: the seccomp filter to install (`seccomp.compiled`, as hex);
- `--parent PID`: the process that starts the helper (agentcli): the helper, and with it
  everything in the sandbox, dies with it, and does not start when it is already gone;
- `--pin DEV:INO:P`, `--guard DEV:INO:P`: what P was when the session started (P lies where
  commands write, so a command may have moved or replaced it): if it is no longer that,
  nothing is granted to a pinned P, and a guarded P stops the command (`check_pins`);
- `--network`: keep the network (otherwise a network namespace with only loopback).

The helper (outside) enters new user, mount, PID and IPC namespaces (and network), shapes the
mounts, then forks the namespace's PID 1. PID 1 mounts a /proc that shows only the namespace,
empties the capability bounding set (the command gets no capability, even run by root),
applies Landlock and the seccomp filter, forks the command and waits for it, passing on
SIGTERM/SIGINT/SIGHUP/SIGQUIT. When the command exits, PID 1 stops what is left (SIGTERM, then
the kernel's SIGKILL to the whole namespace as PID 1 exits), so background processes, `setsid`
and double forks included, never outlive the command. The helper then ends the way the command
ended (same exit code, or killed by the same signal). It fails closed: if any restriction
cannot be applied, the command does not run (exit 126).

Standard library only, and only cheap modules (`_signal`, not `signal`): every command pays
for this process's imports.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # no stubs; `signal` costs ~5 ms
import os
import sys
import time

from agentcli.sandbox import landlock, namespaces, seccomp

FAILED = 126
LEFTOVER_GRACE_S = 0.5
LEFTOVERS_NOTE = "agentcli sandbox: stopped background processes still running after the command"
FORWARDED = (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP, _signal.SIGQUIT)
_PATH_OPTIONS = ("--write", "--read", "--link", "--hide", "--read-only", "--socket", "--tmp")
_VALUE_OPTIONS = ("--seccomp", "--parent", "--pin", "--guard", "--absent")
_GRANTS = ("--write", "--read", "--socket")
_FLAGS = ("--network",)
NEW_ROOT = "/tmp"
"""Where the command's root is built (a tmpfs mounted over the host's /tmp in the mount
namespace: everything the root needs is held open by then)."""
PRIVATE = ("/tmp", "/var/tmp", "/run", "/dev/shm", "/dev/mqueue")
"""Empty directories of the command's own (fresh tmpfs), writable (/dev/mqueue: the host's
POSIX message queues are in the host's /dev, which the root binds)."""
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts")
ABSENT_NOTE = "agentcli sandbox: removed what the command created where it must not be"


class UsageError(Exception):
    pass


def parse(args: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """The options (path lists by name, flags as one-element lists) and the command's argv."""
    options: dict[str, list[str]] = {
        name: [] for name in (*_PATH_OPTIONS, *_VALUE_OPTIONS, *_FLAGS)
    }
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--":
            if not rest:
                raise UsageError("no command given")
            return options, rest
        if arg in _FLAGS:
            options[arg] = ["yes"]
        elif arg in (*_PATH_OPTIONS, *_VALUE_OPTIONS) and rest:
            options[arg].append(rest.pop(0))
        else:
            raise UsageError(f"unknown argument {arg!r}")
    raise UsageError("no command given")


def _fail(message: str) -> int:
    sys.stderr.write(f"agentcli sandbox: {message}\n")
    sys.stderr.flush()
    return FAILED


def check_pins(options: dict[str, list[str]]) -> None:
    """Compare each pinned and guarded path with what it was when the session started. Paths
    are looked up by name (and links followed): one a command renamed away, or replaced by a
    link, would otherwise carry a grant elsewhere (a writable dir turned into a link to the
    home directory) or leave what it protected unprotected under another name (`.git` moved
    aside, a hidden dir whose parent was renamed). A changed pinned path loses its grants; a
    changed guarded path stops the command. Raises OSError."""
    for kind in ("--pin", "--guard"):
        for pin in options[kind]:
            dev, ino, path = pin.split(":", 2)
            try:
                found = os.lstat(path)
            except OSError:
                found = None
            if found is not None and (found.st_dev, found.st_ino) == (int(dev), int(ino)):
                continue
            if kind == "--guard":
                raise OSError(
                    f"{path} was moved or replaced since the session started, and what the "
                    "sandbox protects depends on it: put it back (or restart agentcli)"
                )
            for grant in _GRANTS:
                options[grant] = [p for p in options[grant] if p != path]


def shape_mounts(options: dict[str, list[str]]) -> str:
    """In the new mount namespace, build the command's root (`enter_root` enters it, from the
    new PID namespace); return the current directory to enter there. Raises OSError."""
    sources = []
    for kind in _GRANTS:
        for given in options[kind]:
            # Where it leads on the host is where it goes in the root (a bind never passes
            # through a copied link); opened now: afterwards the host path may be covered.
            path = os.path.realpath(given)
            try:
                sources.append((path, kind, os.open(path, os.O_PATH | os.O_CLOEXEC)))
            except (FileNotFoundError, NotADirectoryError):
                continue
    cwd = os.getcwd()
    namespaces.make_private()
    root = NEW_ROOT
    namespaces.fresh_tmpfs(root)
    for entry in os.listdir("/"):
        namespaces.copy_links(f"/{entry}", root)  # /bin -> usr/bin and the like
    for fd_path in ("/proc", "/sys"):
        os.makedirs(root + fd_path, exist_ok=True)
    devices = os.open("/dev", os.O_PATH | os.O_CLOEXEC)
    namespaces.bind(devices, root + "/dev")
    os.close(devices)
    namespaces.private_terminals(root + "/dev")
    for private in PRIVATE:
        namespaces.fresh_tmpfs(root + private, "1777")
    for path in options["--link"]:
        namespaces.copy_links(path, root)
    writable = [os.path.realpath(path) for path in options["--write"]]
    bound_read_only = []
    for path, kind, fd in sorted(sources, key=lambda item: len(item[0])):  # parents first
        if path in ("/proc", "/dev") or path.startswith(("/proc/", "/dev/")):
            os.close(fd)
            continue
        namespaces.bind(fd, root + path)
        os.close(fd)
        if kind != "--write" and not any(_beneath(path, w) for w in writable):
            bound_read_only.append(root + path)
    namespaces.bind_read_only(bound_read_only)
    for path in options["--hide"]:
        namespaces.hide(root + path)
    namespaces.bind_read_only([root + path for path in options["--read-only"]])
    return cwd


def enter_root(cwd: str) -> None:
    """As PID 1: a /proc of the new PID namespace in the new root (the kernel allows it only
    while the host's /proc is still in sight), then the new root becomes everyone's root (the
    helper's too: pivot_root moves every process of the mount namespace)."""
    namespaces.mount_proc(NEW_ROOT + "/proc")
    namespaces.pivot(NEW_ROOT)
    os.chdir(cwd)  # through the new root: the old directory is no longer reachable


def remove_absent(options: dict[str, list[str]]) -> None:
    """Remove what must not exist after the command (`--absent`, those absent when it started:
    see `run`), never following a link."""
    removed = []
    for path in options["--absent"]:
        if os.path.lexists(path):
            _remove(path)
            removed.append(path)
    if removed:
        sys.stderr.write(f"{ABSENT_NOTE}: {', '.join(removed)}\n")
        sys.stderr.flush()


def _remove(path: str) -> None:
    if os.path.islink(path) or not os.path.isdir(path):
        os.unlink(path)
        return
    for directory, dirs, files in os.walk(path, topdown=False):
        for name in files:
            os.unlink(os.path.join(directory, name))
        for name in dirs:
            full = os.path.join(directory, name)
            if os.path.islink(full):
                os.unlink(full)
            else:
                os.rmdir(full)
    os.rmdir(path)


def _beneath(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def confine_self(options: dict[str, list[str]]) -> int:
    """Landlock (and no_new_privs), then the seccomp filter; return the Landlock ABI."""
    abi = landlock.restrict_self(
        writable=[*options["--write"], *PRIVATE, *DEVICES],
        readable=[*options["--read"], "/proc", "/dev", "/sys", "/"],
        unix_sockets=options["--socket"],
    )
    if len(options["--seccomp"]) != 1:
        raise OSError("no seccomp filter given")
    seccomp.install(bytes.fromhex(options["--seccomp"][0]))
    return abi


def run(options: dict[str, list[str]], argv: list[str]) -> int:
    network = bool(options["--network"])
    try:
        # agentcli killed (or crashed): the helper must not be orphaned with the command
        # still running. PID 1 dies with the helper in turn, and the namespace with PID 1.
        namespaces.die_with_parent()
        if any(int(parent) != os.getppid() for parent in options["--parent"]):
            return _fail("agentcli, which started the command, is gone: not running it")
        check_pins(options)
        # Only what the command itself creates is removed: a .git the user made since the
        # session started (`git init` in another terminal) exists already, and stays.
        options["--absent"] = [p for p in options["--absent"] if not os.path.lexists(p)]
        namespaces.unshare(network=network)
        if not network:
            namespaces.loopback_up()
        cwd = shape_mounts(options)
    except OSError as exc:
        return _fail(f"cannot confine the command, not running it: {exc}")
    for tmp in options["--tmp"][-1:]:
        for name in ("TMPDIR", "TMP", "TEMP"):
            os.environ[name] = tmp
    status_read, status_write = os.pipe()
    # Held open by this process alone until it dies: PID 1 reads EOF on it once we are gone.
    alive_read, alive_write = os.pipe()
    init = os.fork()
    if init == 0:  # pragma: no cover - PID 1 of the new namespace
        os.close(status_read)
        os.close(alive_write)
        os._exit(_init(options, argv, status_write, cwd, alive_read))
    os.close(status_write)
    os.close(alive_read)
    code = _wait_like(init, status_read)
    try:
        remove_absent(options)
    except OSError as exc:
        sys.stderr.write(f"agentcli sandbox: could not remove what must be absent: {exc}\n")
        return FAILED
    return code


def _init(
    options: dict[str, list[str]], argv: list[str], status_fd: int, cwd: str, alive_fd: int
) -> int:
    """PID 1: confine, start the command, reap, pass on signals, stop what is left."""
    try:
        namespaces.die_with_parent()
        # The helper may have died before that took effect (killed with agentcli right after
        # the fork): nothing would then kill this process. Its end of `alive_fd` is closed.
        os.set_blocking(alive_fd, False)
        try:
            gone = os.read(alive_fd, 1) == b""
        except BlockingIOError:
            gone = False
        os.close(alive_fd)
        if gone:
            return _fail("agentcli, which started the command, is gone: not running it")
        enter_root(cwd)
        namespaces.drop_capabilities()
        confine_self(options)
    except OSError as exc:
        return _fail(f"cannot confine the command, not running it: {exc}")

    def forward(signum: int, frame: object) -> None:
        try:
            os.kill(-1, signum)  # every process in the namespace but PID 1
        except ProcessLookupError:
            pass

    for sig in FORWARDED:
        _signal.signal(sig, forward)
    try:
        # posix_spawnp (vfork and exec in libc): cheaper than a fork of this process, and no
        # lazy import (os.execvp imports `warnings`, which Landlock may keep out of reach).
        command = os.posix_spawnp(argv[0], argv, os.environ, setsigdef=FORWARDED)
    except OSError as exc:
        sys.stderr.write(f"agentcli sandbox: cannot run {argv[0]}: {exc.strerror}\n")
        sys.stderr.flush()
        os.write(status_fd, (127 << 8).to_bytes(4, "little"))
        return 0
    status = _reap_until(command)
    if _others_alive():
        sys.stderr.write(LEFTOVERS_NOTE + "\n")
        sys.stderr.flush()
        forward(_signal.SIGTERM, None)
        deadline = time.monotonic() + LEFTOVER_GRACE_S
        while _others_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
    os.write(status_fd, status.to_bytes(4, "little"))
    return 0  # as PID 1 exits, the kernel kills whatever is left in the namespace


def _reap_until(command: int) -> int:
    """Reap children (orphans come to PID 1) until `command` exits; its wait status."""
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:  # cannot happen: say "failed", never "succeeded"
            return FAILED << 8
        if pid == command:
            return status


def _others_alive() -> bool:
    while True:  # reap what has exited, so a zombie does not count
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
    try:
        os.kill(-1, 0)
    except ProcessLookupError:
        return False
    return True


def _wait_like(init: int, status_fd: int) -> int:
    """Wait for PID 1, passing on signals; then end as the command ended."""

    def forward(signum: int, frame: object) -> None:
        try:
            os.kill(init, signum)
        except ProcessLookupError:
            pass

    for sig in FORWARDED:
        _signal.signal(sig, forward)
    _, init_status = os.waitpid(init, 0)
    data = os.read(status_fd, 4)
    if len(data) < 4:
        # PID 1 failed before the command ran (it said why on stderr), or was killed.
        code = os.waitstatus_to_exitcode(init_status)
        return code if code > 0 else FAILED
    status = int.from_bytes(data, "little")
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        for forwarded in FORWARDED:
            _signal.signal(forwarded, _signal.SIG_DFL)
        _signal.signal(sig, _signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        return 128 + sig
    return os.waitstatus_to_exitcode(status)


def main(args: list[str]) -> int:
    try:
        options, argv = parse(args)
        return run(options, argv)
    except UsageError as exc:
        return _fail(f"cannot confine the command, not running it: {exc}")
    except Exception as exc:  # never exit 1, which the shell tool may read as "no match"
        return _fail(f"cannot confine the command, not running it: {type(exc).__name__}: {exc}")
