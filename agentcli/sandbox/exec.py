"""The sandbox helper: confine this process, then exec the command.

    python -I -m agentcli.sandbox.exec [--write PATH]... [--read-only PATH]... \\
        [--no-network] [--tmp DIR] -- ARGV...
    python -I -m agentcli.sandbox.exec --probe

It runs as its own process (not a `preexec_fn` in the threaded agent): it enters private
namespaces when it can (network: loopback only; mounts: `--read-only` paths bind-mounted
read-only), restricts itself with Landlock (writes only beneath `--write` paths and to a few
devices), sets `TMPDIR`, then execs. It fails closed: if a requested restriction cannot be
applied, the command does not run (exit 126). `-I` matters: the helper starts in the
workspace, and isolated mode keeps the current directory off `sys.path`.

`--probe` tries the same steps on a scratch directory and prints what works, as JSON.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

from agentcli.sandbox import landlock, namespaces

DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts")
FAILED = 126
NO_NAMESPACES_ENV = "AGENTCLI_SANDBOX_NO_NAMESPACES"
"""Set (by the user, e.g. to test the fallback) to confine with Landlock alone."""


def _parse(args: list[str]) -> dict[str, list[str]]:
    options: dict[str, list[str]] = {"write": [], "read-only": [], "tmp": [], "argv": []}
    flags = set()
    while args:
        arg = args.pop(0)
        if arg == "--":
            options["argv"] = args
            break
        if arg in ("--no-network", "--probe"):
            flags.add(arg)
        elif arg in ("--write", "--read-only", "--tmp") and args:
            options[arg[2:]].append(args.pop(0))
        else:
            raise SystemExit(f"agentcli sandbox: unknown argument {arg!r}")
    options["flags"] = sorted(flags)
    return options


def writable_around(root: str, protected: list[str]) -> list[str]:
    """Rules making `root` writable except the protected paths beneath it: the directories
    leading to a protected path get no rights themselves (so nothing new appears in them),
    every other entry gets full rights. Symlinks are skipped, never followed."""
    if root in protected:
        return []
    inside = [p for p in protected if p.startswith(root.rstrip("/") + "/")]
    if not inside:
        return [root]
    rules: list[str] = []
    with os.scandir(root) as entries:
        for entry in entries:
            if entry.path in protected or entry.is_symlink():
                continue
            if entry.is_dir() and any(p.startswith(entry.path + "/") for p in inside):
                rules.extend(writable_around(entry.path, inside))
            else:
                rules.append(entry.path)
    return rules


def confine(*, write: list[str], read_only: list[str], no_network: bool) -> dict[str, object]:
    """Apply every restriction to this process; return what was done. Raises OSError."""
    done: dict[str, object] = {"network": "open", "read_only": "none", "namespaces": "none"}
    entered = False
    if os.environ.get(NO_NAMESPACES_ENV):
        done["namespaces"] = f"disabled by {NO_NAMESPACES_ENV}"
    elif no_network or read_only:
        try:
            done["namespaces"] = namespaces.unshare(network=no_network, mounts=bool(read_only))
            entered = True
        except OSError as exc:
            done["namespaces"] = f"unavailable ({exc.strerror or exc})"
    if entered and no_network:
        try:
            namespaces.loopback_up()
            done["network"] = "namespace (own loopback only)"
        except OSError:
            done["network"] = "namespace (no loopback)"
    rules = list(write)
    if read_only and entered:
        namespaces.bind_read_only(read_only)
        done["read_only"] = "bind mounts"
    elif read_only:
        rules = [rule for root in write for rule in writable_around(root, read_only)]
        done["read_only"] = "landlock rules (no new entries beside protected paths)"
    block_tcp = no_network and not entered
    done["landlock_abi"] = landlock.restrict_self(writable=[*rules, *DEVICES], block_tcp=block_tcp)
    if block_tcp:
        done["network"] = "landlock (no TCP at all)"
    return done


def probe() -> dict[str, object]:
    """Confine a forked child on a scratch directory and check that the restrictions hold:
    a write beside `.git` works, writes into it and outside fail, and a TCP connect to our
    own listener on 127.0.0.1 fails. If the network cannot be blocked, the file system part
    is probed again without it."""
    report: dict[str, object] = {"landlock_abi": landlock.abi_version()}
    result = _probe_once(no_network=True)
    if not result.get("ok"):
        retry = _probe_once(no_network=False)
        if retry.get("ok"):
            result = {**retry, "network": "cannot be blocked", "network_error": result.get("error")}
    report.update(result)
    return report


def _probe_once(*, no_network: bool) -> dict[str, object]:
    import json  # imported here: every sandboxed command pays for module-level imports
    import tempfile

    with tempfile.TemporaryDirectory(prefix="agentcli-probe-") as scratch:
        (Path(scratch) / ".git").mkdir()
        listener = socket.create_server(("127.0.0.1", 0))
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the forked child
            os.close(reader)
            found = _probe_child(scratch, listener, no_network=no_network)
            os.write(writer, json.dumps(found).encode())
            os._exit(0)
        os.close(writer)
        with os.fdopen(reader, "rb") as pipe:
            data = pipe.read()
        os.waitpid(pid, 0)
        listener.close()
    loaded: dict[str, object] = json.loads(data or b'{"ok": false, "error": "probe crashed"}')
    return loaded


def _probe_child(scratch: str, listener: socket.socket, *, no_network: bool) -> dict[str, object]:
    root = Path(scratch)
    try:
        result = confine(write=[scratch], read_only=[str(root / ".git")], no_network=no_network)
    except OSError as exc:
        return {"ok": False, "error": str(exc)}
    checks = {
        "write_allowed": _can_write(root / "sub"),
        "protected_blocked": not _can_write(root / ".git" / "x"),
        "outside_blocked": not _can_write(root.parent / f"{root.name}-outside"),
    }
    if no_network:
        checks["network_blocked"] = not _can_connect(listener.getsockname())
    return {**result, **checks, "ok": all(checks.values())}


def _can_write(path: Path) -> bool:
    try:
        path.mkdir()
    except OSError:
        return False
    path.rmdir()
    return True


def _can_connect(address: tuple[str, int]) -> bool:
    try:
        socket.create_connection(address, timeout=2).close()
    except OSError:
        return False
    return True


def main(argv: list[str]) -> int:
    options = _parse(list(argv))
    if "--probe" in options["flags"]:
        import json

        print(json.dumps(probe()))
        return 0
    command = options["argv"]
    if not command:
        sys.stderr.write("agentcli sandbox: no command given\n")
        return FAILED
    try:
        confine(
            write=options["write"],
            read_only=options["read-only"],
            no_network="--no-network" in options["flags"],
        )
    except OSError as exc:
        sys.stderr.write(f"agentcli sandbox: cannot confine the command, not running it: {exc}\n")
        return FAILED
    for name in ("TMPDIR", "TMP", "TEMP"):
        if options["tmp"]:
            os.environ[name] = options["tmp"][0]
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        sys.stderr.write(f"agentcli sandbox: cannot run {command[0]}: {exc.strerror}\n")
        return 127
    return FAILED  # not reached: execvp replaces this process


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
