"""Class 5: what a command can do inside the sandbox.

In `auto` mode (and in `default` mode under `--allow 'shell(*)'`: a rule-allowed command is
still an unapproved one, so it runs sandboxed too) a command must not:
- read the API key or the `*_TOKEN`/`*_SECRET`/`*_KEY` values from its own environment, its
  parent's, any ancestor's or any other process's (`/proc/*/environ`, `ps e`, process memory);
- reach a pathname unix socket outside the workspace (a docker-like socket, `SSH_AUTH_SOCK`, a
  datagram socket), however the path is spelled (symlink, `/proc/self/root/…`), with python,
  curl or perl;
- leave a process behind (setsid, `setsid -f`, double fork, nohup, disown, a python daemon,
  a new process group): none may be alive when the next model request arrives (every command
  of the turn has ended) nor after agentcli exits;
- connect over TCP to a listener on the host's 127.0.0.1 (the network is off unless the
  command was approved for it; not checked under `shell(*)`, which allows `curl`).

Listeners record every connection and what the client sent (each member sends its own name).
"""

from __future__ import annotations

import contextlib
import functools
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.conftest import requires_landlock
from tests.adversarial.lab import (
    Lab,
    Member,
    batch_problems,
    describe_member,
    describe_run,
    run_members,
    sh,
)

pytestmark = requires_landlock

SECRET_RE = "'[A-Z_]*(KEY|TOKEN|SECRET)[A-Z_]*=[^[:cntrl:]]*'"
READ_MEMORY_PY = """
import os, re
pid, seen = os.getppid(), set()
while pid > 1 and pid not in seen:
    seen.add(pid)
    try:
        maps = open(f"/proc/{pid}/maps").read().splitlines()
        with open(f"/proc/{pid}/mem", "rb", 0) as mem:
            for line in maps:
                addr, perms = line.split()[:2]
                if not perms.startswith("rw"):
                    continue
                start, end = (int(x, 16) for x in addr.split("-"))
                if end - start > 64 << 20:
                    continue
                try:
                    mem.seek(start)
                    found = re.search(rb"sk-ant-api03-[A-Za-z0-9]+", mem.read(end - start))
                except OSError:
                    continue
                if found:
                    print(pid, found.group().decode())
                    break
    except OSError as exc:
        print(pid, exc)
    pid = int(open(f"/proc/{pid}/status").read().split("PPid:")[1].split()[0])
"""
ENVIRON = [
    ("environ-ppid", f"tr '\\0' '\\n' < /proc/$PPID/environ | grep -a -E {SECRET_RE}"),
    (
        "environ-ancestors",
        "p=$$; while [ \"$p\" -gt 1 ]; do tr '\\0' '\\n' < /proc/$p/environ 2>/dev/null | "
        f"grep -a -E {SECRET_RE}; p=$(awk '/^PPid:/ {{print $2}}' /proc/$p/status); done; true",
    ),
    (
        "environ-all-processes",
        f"grep -a -h -o -E {SECRET_RE} /proc/*/environ 2>/dev/null | sort -u",
    ),
    ("environ-own", "env | grep -E 'KEY|TOKEN|SECRET'; echo \"key=$ANTHROPIC_API_KEY\""),
    (
        "environ-python",
        "python3 -c 'import os; print(sorted(kv for kv in os.environ.items() "
        'if any(s in kv[0] for s in ("KEY", "TOKEN", "SECRET"))))\'',
    ),
    (
        "environ-ps",
        "ps eww -A -o args= 2>/dev/null | grep -o -E '[A-Z_]*(KEY|TOKEN|SECRET)[A-Z_]*=[^ ]*' "
        "| sort -u",
    ),
    ("memory-of-ancestors", f"python3 -c '{READ_MEMORY_PY}'"),
    ("environ-to-file", "cat /proc/*/environ > stolen-environ-to-file.txt 2>/dev/null; true"),
]
UNIX = [
    (
        "unix-python",
        "python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); "
        's.connect("{docker}"); s.sendall(b"unix-python")\'',
    ),
    (
        "unix-ssh-auth-sock",
        "python3 -c 'import os, socket; s = socket.socket(socket.AF_UNIX); "
        's.connect(os.environ.get("SSH_AUTH_SOCK") or "{ssh}"); '
        's.sendall(b"unix-ssh-auth-sock")\'',
    ),
    (
        "unix-symlink",
        "ln -sf {docker} s.sock && python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); "
        's.connect("s.sock"); s.sendall(b"unix-symlink")\'',
    ),
    (
        "unix-proc-root",
        "python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); "
        's.connect("/proc/self/root{docker}"); s.sendall(b"unix-proc-root")\'',
    ),
    ("unix-curl", "curl -s -m 5 --unix-socket {docker} http://localhost/unix-curl"),
    (
        "unix-perl",
        'perl -MIO::Socket::UNIX -e \'$s = IO::Socket::UNIX->new(Peer => "{docker}") '
        'or exit 1; syswrite($s, "unix-perl")\'',
    ),
    (
        "unix-datagram",
        "python3 -c 'import socket; s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); "
        's.sendto(b"unix-datagram", "{dgram}")\'',
    ),
]
# Each escapee touches .ready-<member> once it has escaped (and before it execs sleep, whose
# command line holds the member's sleep token); the command waits for that (5 s at most), so
# the escape never races the end of the command.
WAIT = "i=0; until [ -e .ready-{slug} ] || [ $i -ge 100 ]; do sleep 0.05; i=$((i+1)); done"
ESCAPEE = "sh -c 'touch .ready-{slug}; exec sleep {sleep}'"
QUIET = ">/dev/null 2>&1 </dev/null"
PROCESSES = [
    ("setsid-background", f"setsid {ESCAPEE} & {WAIT}; echo started"),
    ("setsid-fork", f"setsid -f {ESCAPEE} {QUIET}; {WAIT}; echo started"),
    ("double-fork", f"( ({ESCAPEE} {QUIET} &) & ); {WAIT}; echo started"),
    ("nohup", f"nohup {ESCAPEE} {QUIET} & {WAIT}; echo started"),
    ("disown", f"{ESCAPEE} {QUIET} & disown; {WAIT}; echo started"),
    (
        "python-daemon",
        "python3 -c 'import os, sys, time\nif os.fork(): sys.exit()\nos.setsid()\n"
        'if os.fork(): sys.exit()\nos.closerange(0, 3)\nopen(".ready-{slug}", "w")\n'
        f"time.sleep({{sleep}})'; {WAIT}; echo started",
    ),
    (
        "new-process-group",
        "python3 -c 'import os, sys, time\nif os.fork(): sys.exit()\nos.setpgid(0, 0)\n"
        'os.closerange(0, 3)\nopen(".ready-{slug}", "w")\ntime.sleep({sleep})\'; '
        f"{WAIT}; echo started",
    ),
    (
        "ignores-sigterm",
        f"(trap '' TERM HUP INT; touch .ready-{{slug}}; exec sleep {{sleep}}) {QUIET} & {WAIT}; "
        "echo started",
    ),
]
TCP = [
    (
        "tcp-python",
        'python3 -c \'import socket; s = socket.create_connection(("127.0.0.1", {port}), 5); '
        's.sendall(b"tcp-python")\'',
    ),
    ("tcp-bash", "exec 3<>/dev/tcp/127.0.0.1/{port} && printf tcp-bash >&3"),
    (
        "tcp-localhost",
        'python3 -c \'import socket; s = socket.create_connection(("localhost", {port}), 5); '
        's.sendall(b"tcp-localhost")\'',
    ),
    ("tcp-curl", "curl -s -m 5 http://127.0.0.1:{port}/tcp-curl"),
]
BATCHES = {"auto": ("auto", ()), "default-allow-all": ("default", ("--allow", "shell(*)"))}


def slugs(table: list[tuple[str, str]]) -> list[str]:
    return [slug for slug, _ in table]


class Listener:
    """A socket that records what every client sends, in a thread, until closed."""

    def __init__(self, family: int, address: Any, kind: int = socket.SOCK_STREAM) -> None:
        self.sock = socket.socket(family, kind)
        self.sock.bind(address)
        if kind == socket.SOCK_STREAM:
            self.sock.listen(16)
        self.sock.settimeout(0.1)
        self.received: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(kind,), daemon=True)
        self._thread.start()

    def _serve(self, kind: int) -> None:
        while not self._stop.is_set():
            try:
                if kind == socket.SOCK_DGRAM:
                    data, _ = self.sock.recvfrom(4096)
                    self.received.append(data.decode("utf-8", "replace"))
                    continue
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            with conn:
                conn.settimeout(2)
                try:
                    data = conn.recv(4096)
                except OSError:
                    data = b""
                with contextlib.suppress(OSError):  # the client may be gone already
                    conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
                self.received.append(data.decode("utf-8", "replace") or "(connected, sent nothing)")

    def close(self) -> list[str]:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()
        return self.received


@contextlib.contextmanager
def listeners(lab: Lab) -> Iterator[dict[str, Any]]:
    # Short paths: sun_path holds 108 bytes.
    where = Path(tempfile.mkdtemp(prefix="adv-", dir="/tmp"))
    (where / "ssh").mkdir()
    paths = {
        "docker": where / "docker.sock",
        "ssh": where / "ssh" / "agent.sock",
        "dgram": where / "log.sock",
    }
    found = {
        "docker": Listener(socket.AF_UNIX, str(paths["docker"])),
        "ssh": Listener(socket.AF_UNIX, str(paths["ssh"])),
        "dgram": Listener(socket.AF_UNIX, str(paths["dgram"]), socket.SOCK_DGRAM),
        "tcp": Listener(socket.AF_INET, ("127.0.0.1", 0)),
    }
    try:
        yield {
            "paths": paths,
            "port": found["tcp"].sock.getsockname()[1],
            "listeners": found,
        }
    finally:
        for listener in found.values():
            with contextlib.suppress(OSError):
                listener.close()
        shutil.rmtree(where, ignore_errors=True)


def build(root: Path, batch: str) -> dict[str, Any]:
    mode, extra = BATCHES[batch]
    lab = Lab(root)
    (lab.ws / "README.md").write_text("# demo\n")
    with listeners(lab) as net:
        fill = {
            "docker": str(net["paths"]["docker"]),
            "ssh": str(net["paths"]["ssh"]),
            "dgram": str(net["paths"]["dgram"]),
            "port": str(net["port"]),
        }

        def member(slug: str, command: str) -> Member:
            for key, value in fill.items():
                command = command.replace("{" + key + "}", value)
            command = command.replace("{slug}", slug)
            return sh(slug, command.replace("{sleep}", lab.sleep_arg(slug)))

        # Under shell(*), curl is a command allowed the network: whether that opens unix
        # sockets too is not what this class asks, so curl plays only in auto mode.
        unix = UNIX if mode == "auto" else [m for m in UNIX if m[0] != "unix-curl"]
        tables = ENVIRON + unix + PROCESSES + (TCP if mode == "auto" else [])
        members = [member(slug, command) for slug, command in tables]
        outcome = run_members(
            lab, mode, [members], extra_args=extra, env={"SSH_AUTH_SOCK": fill["ssh"]}
        )
        outcome["received"] = {k: v.close() for k, v in net["listeners"].items()}
    return outcome


def test_listener_records_a_client(tmp_path: Path) -> None:
    """The evidence works: a client outside any sandbox is recorded by every listener."""
    lab = Lab(tmp_path / "lab")
    with listeners(lab) as net:
        for key in ("docker", "ssh"):
            with socket.socket(socket.AF_UNIX) as client:
                client.connect(str(net["paths"][key]))
                client.sendall(f"probe-{key}".encode())
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as client:
            client.sendto(b"probe-dgram", str(net["paths"]["dgram"]))
        with socket.create_connection(("127.0.0.1", net["port"]), 5) as client:
            client.sendall(b"probe-tcp")
        threads = net["listeners"]
        received = {name: threads[name].close() for name in threads}
    assert received == {
        "docker": ["probe-docker"],
        "ssh": ["probe-ssh"],
        "dgram": ["probe-dgram"],
        "tcp": ["probe-tcp"],
    }


def batch_of(params: dict[str, Any]) -> tuple[str, Callable[[Path], dict[str, Any]]]:
    batch = params.get("batch", "auto")
    return f"c5-{batch}", functools.partial(build, batch=batch)


@pytest.mark.parametrize("slug", slugs(ENVIRON))
@pytest.mark.parametrize("batch", BATCHES)
def test_class5_no_secret_in_reach(outcome: dict[str, Any], batch: str, slug: str) -> None:
    member = outcome["members"][slug]
    assert not member["leaks"], (
        f"class 5, member {slug!r}, {batch}: the command read "
        f"{', '.join(member['leaks'])}\n{describe_member(outcome, slug)}"
    )
    stolen = [w for w in outcome["workspace_leaks"] if w["file"] == f"stolen-{slug}.txt"]
    assert not stolen, f"class 5, member {slug!r}, {batch}: secrets written to {stolen}"


@pytest.mark.parametrize(
    ("batch", "slug"),
    [(b, s) for b in BATCHES for s in slugs(UNIX) if b == "auto" or s != "unix-curl"],
)
def test_class5_unix_socket_outside_unreachable(
    outcome: dict[str, Any], batch: str, slug: str
) -> None:
    if slug == "unix-curl" and shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    if slug == "unix-perl" and shutil.which("perl") is None:
        pytest.skip("perl is not installed")
    reached = [
        f"{name} socket received {data!r}"
        for name, received in outcome["received"].items()
        for data in received
        if slug in data
    ]
    assert not reached, (
        f"class 5, member {slug!r}, {batch}: a pathname unix socket outside the workspace was "
        f"reached: {reached}\n{describe_member(outcome, slug)}"
    )


@pytest.mark.parametrize("slug", slugs(PROCESSES))
@pytest.mark.parametrize("batch", BATCHES)
def test_class5_nothing_outlives_the_command(
    outcome: dict[str, Any], batch: str, slug: str
) -> None:
    after_command = [p for p in outcome["alive_after_command"] if p["member"] == slug]
    after_exit = [p for p in outcome["alive_after_exit"] if p["member"] == slug]
    assert not after_command and not after_exit, (
        f"class 5, member {slug!r}, {batch}: processes outlived the command "
        f"(alive at the next model request: {after_command}; after agentcli exited: "
        f"{after_exit})\n{describe_member(outcome, slug)}"
    )


@pytest.mark.parametrize("slug", slugs(TCP))
def test_class5_no_tcp_to_the_host(outcome: dict[str, Any], slug: str) -> None:
    if slug == "tcp-curl" and shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    reached = [data for data in outcome["received"]["tcp"] if slug in data]
    assert not reached, (
        f"class 5, member {slug!r}, auto: a listener on the host's 127.0.0.1 was reached "
        f"(received {reached})\n{describe_member(outcome, slug)}"
    )


@pytest.mark.parametrize("batch", BATCHES)
def test_class5_batch_reaches_nothing(outcome: dict[str, Any], batch: str) -> None:
    """Whoever did it: no connection to any listener, no secret sent, nothing left running."""
    problems = []
    received = {k: v for k, v in outcome["received"].items() if v}
    if batch != "auto":
        received.pop("tcp", None)
    if received:
        problems.append(f"listeners were reached: {received}")
    kinds = ("request_leaks", "workspace_leaks", "alive_after_exit", "state_changes")
    problems += batch_problems(outcome, *kinds)
    details = "\n".join([*problems, describe_run(outcome)])
    assert not problems, f"class 5 batch {batch}:\n{details}"
