"""Finding and running the ripgrep binary that `glob` and `grep` use.

The binary comes from the `ripgrep` wheel (installed next to the Python interpreter in the
virtualenv's bin directory) or from PATH. `run_rg` runs it as an asyncio subprocess with the
user's ripgrep config ignored, bounded output, and the process killed if the call is cancelled.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

MAX_RG_OUTPUT_BYTES = 32 * 1024 * 1024
"""Beyond this much output rg is stopped: the caller reports totals as lower bounds."""


@functools.cache
def find_rg(outside: tuple[Path, ...] = ()) -> str | None:
    """The ripgrep binary: the wheel's copy beside this interpreter, else `rg` on PATH (absolute
    entries only); never one beneath `outside` (the workspace and the other directories the
    model may write: agentcli runs rg unconfined, and with agentcli installed in the project's
    virtualenv the wheel's rg is a workspace file a command can replace)."""
    name = "rg.exe" if os.name == "nt" else "rg"
    avoided = [path.resolve() for path in outside]
    scripts = (Path(sys.executable).parent, Path(sysconfig.get_path("scripts")))
    on_path = [Path(e) for e in os.environ.get("PATH", "").split(os.pathsep) if e]
    for directory in (*scripts, *(d for d in on_path if d.is_absolute())):
        candidate = directory / name
        if not (candidate.is_file() and os.access(candidate, os.X_OK)):
            continue
        places = (candidate.parent.resolve() / name, candidate.resolve())  # link, target
        if not any(p.is_relative_to(a) for p in places for a in avoided):
            return str(places[1])  # the file itself: no link to follow again later
    return None


@dataclass(frozen=True, slots=True)
class RgResult:
    exit_code: int
    stdout: bytes
    stderr: str
    overflowed: bool
    """The output passed MAX_RG_OUTPUT_BYTES and rg was stopped early."""

    def error_text(self) -> str:
        """rg's own message, without its `rg: ` prefixes."""
        lines = [line.removeprefix("rg: ") for line in self.stderr.strip().splitlines()]
        return "\n".join(lines)


async def run_rg(rg: str, args: list[str], *, cwd: Path) -> RgResult:
    """Run `rg ARGS` in `cwd` and collect its output."""
    # Imported here, where it is loaded anyway: `agentcli doctor` only needs `find_rg`.
    import asyncio

    proc = await asyncio.create_subprocess_exec(
        rg,
        "--no-config",
        *args,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        stdout, stderr, overflowed = await _collect(proc)
        code = await proc.wait()
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await asyncio.shield(proc.wait())
        raise
    return RgResult(
        exit_code=code,
        stdout=stdout,
        stderr=stderr.decode("utf-8", errors="replace"),
        overflowed=overflowed,
    )


async def _collect(proc: asyncio.subprocess.Process) -> tuple[bytes, bytes, bool]:
    import asyncio

    assert proc.stdout is not None and proc.stderr is not None
    chunks: list[bytes] = []
    size = 0
    overflowed = False
    stderr_task = asyncio.create_task(proc.stderr.read())
    while chunk := await proc.stdout.read(1 << 16):
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_RG_OUTPUT_BYTES:
            overflowed = True
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            break
    stderr = (await stderr_task)[:65536]
    data = b"".join(chunks)
    if overflowed:
        # Keep whole records only: the cut may fall in the middle of a line.
        data = data[: data.rfind(b"\n") + 1]
    return data, stderr, overflowed
