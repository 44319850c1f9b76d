"""Hostile files for agentcli's own reads (issue 26, classes 1, 2 and 5): what a repository, or
a model in auto mode, can put where agentcli reads a file it did not write.

Each kind is planted at a path agentcli will read (`plant`); what a read of it must never
produce is its `secret` (the text that would show the read went through):

- `fifo`: a named pipe (`mkfifo`, as a sandboxed command can make one): opening it to read
  blocks until a writer comes, so a read that opens it never returns;
- `char-device`: a link to `/dev/zero`, endless (a read runs until memory is gone);
- `proc-environ`: a link to `/proc/self/environ`: agentcli's own environment, API key included;
- `outside-link`: a link to a secret file outside the workspace (`../outside/secret.txt`);
- `sparse-2g`: a 2 GiB sparse regular file (costs no disk, but a whole read costs 2 GiB);

and the controls, which must keep working: `regular` (a plain file) and `inside-link` (a link
to a file inside the workspace).

A hang must fail the test, not stall the suite: tests reading these carry a short
`pytest.mark.timeout(..., method="signal")` (the alarm interrupts a blocked `open`), and
`release_fifos` opens every planted pipe's write end at teardown, so a reader still blocked in
another process or thread gets its end of file. `memory_cap` turns a read that would take all
the machine's memory into a MemoryError of this process alone.
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

HOSTILE = ("fifo", "char-device", "proc-environ", "outside-link", "sparse-2g")
CONTROLS = ("regular", "inside-link")
SPARSE_BYTES = 2 * 1024**3
HEADROOM = 1536 * 1024**2
"""Address space a test may use beyond what the process had when the cap was set."""


@dataclass(frozen=True, slots=True)
class Planted:
    path: Path
    kind: str
    secret: str | None
    """Text that must never reach the model (None: the kind holds no text, e.g. a FIFO)."""
    content: str | None = None
    """For a control: the text a read must produce."""


def environ_secret() -> str:
    """The longest `NAME=value` entry of this process's `/proc/self/environ` (what a read of
    it would send), as the text that must not leak."""
    with Path("/proc/self/environ").open("rb") as handle:
        entries = handle.read().split(b"\0")
    return max((e.decode("utf-8", "replace") for e in entries), key=len)


def plant(
    path: Path,
    kind: str,
    *,
    outside: Path,
    inside: Path | None = None,
    body: Callable[[str], str] = lambda content: f"{content}\n",
) -> Planted:
    """Put a file of `kind` at `path`. `outside` is a directory outside the workspace (its
    `secret.txt` is created); `inside` a directory inside it (for `inside-link`); `body` makes
    a control's file text around its content (where the reader needs TOML or JSON)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_hex(6)
    if kind == "fifo":
        os.mkfifo(path)
        return Planted(path, kind, None)
    if kind == "char-device":
        path.symlink_to("/dev/zero")
        return Planted(path, kind, "\x00" * 64)
    if kind == "proc-environ":
        path.symlink_to("/proc/self/environ")
        return Planted(path, kind, environ_secret())
    if kind == "outside-link":
        outside.mkdir(parents=True, exist_ok=True)
        target = outside / f"secret-{token}.txt"
        target.write_text(f"OUTSIDE-SECRET-{token}\n")
        path.symlink_to(target)
        return Planted(path, kind, f"OUTSIDE-SECRET-{token}")
    if kind == "sparse-2g":
        with path.open("wb") as handle:
            handle.truncate(SPARSE_BYTES)
        return Planted(path, kind, "\x00" * 64)
    if kind == "regular":
        content = f"CONTROL-CONTENT-{token}"
        path.write_text(body(content))
        return Planted(path, kind, None, content)
    if kind == "inside-link":
        assert inside is not None, "inside-link needs a directory inside the workspace"
        inside.mkdir(parents=True, exist_ok=True)
        content = f"LINKED-CONTENT-{token}"
        target = inside / f"linked-{token}.md"
        target.write_text(body(content))
        path.symlink_to(os.path.relpath(target, path.parent))
        return Planted(path, kind, None, content)
    raise ValueError(kind)


def release_fifos(root: Path) -> None:
    """Give every reader blocked on a FIFO under `root` its end of file (open the write end
    without blocking, then close it)."""
    for top, _dirs, files in os.walk(root):
        for name in files:
            path = Path(top) / name
            with contextlib.suppress(OSError):
                if path.is_fifo() and not path.is_symlink():
                    fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
                    os.close(fd)


def _address_space() -> int:
    with Path("/proc/self/status").open() as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


@contextlib.contextmanager
def memory_cap() -> Iterator[None]:
    """Cap this process's address space a little above what it uses now: a read that would
    grow without bound fails here with MemoryError instead of taking the machine's memory."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = _address_space() + HEADROOM
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ValueError, OSError) as exc:  # pragma: no cover - a limit lower than the usage
        if getattr(exc, "errno", None) != errno.EPERM:
            raise
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
