"""The sandbox's cost per command, measured side by side in one run.

- `ls` and `rg` through the real shell tool, unsandboxed vs in the read-only and the
  workspace-write profile (interleaved rounds, medians; target: ≤ 30 ms added per command);
- the helper alone (`true` sandboxed vs `true`), to separate the sandbox from the tool;
- cancellation: a running `sleep` (which has started a background `setsid sleep`) cancelled
  through the shell tool, unsandboxed and sandboxed: the time until everything it started is
  gone (SPEC: under 1 s).
"""

from __future__ import annotations

import asyncio
import os
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from agentcli.confinement import READ_ONLY, UNCONFINED, WORKSPACE_WRITE, Confinement
from agentcli.sandbox.runner import OsSandbox
from agentcli.sandbox.support import probe_support
from agentcli.tools.base import ToolContext
from agentcli.tools.ripgrep import find_rg
from agentcli.tools.shell import Shell, ShellInput

ROUNDS = 15


def _tree(root: Path) -> None:
    for d in range(20):
        sub = root / f"pkg{d}"
        sub.mkdir()
        for f in range(25):
            (sub / f"mod{f}.py").write_text(f"def f{f}():\n    return {d * f}  # marker\n")


async def _shell_ms(ctx: ToolContext, command: str) -> float:
    started = time.perf_counter()
    output = await Shell().call(ShellInput(command=command), ctx)
    elapsed = (time.perf_counter() - started) * 1000
    if output.is_error:
        raise RuntimeError(f"{command!r} failed: {output.text[:300]}")
    return elapsed


async def _compare(workspace: Path, box: OsSandbox, command: str) -> dict[str, float]:
    contexts = {
        "unsandboxed": ToolContext(workspace=workspace, data_dir=workspace / ".data"),
        "read-only": _confined(workspace, box, READ_ONLY),
        "workspace-write": _confined(workspace, box, WORKSPACE_WRITE),
    }
    samples: dict[str, list[float]] = {name: [] for name in contexts}
    for _ in range(ROUNDS):  # interleaved, so load changes hit every variant alike
        for name, ctx in contexts.items():
            samples[name].append(await _shell_ms(ctx, command))
    return {name: statistics.median(values) for name, values in samples.items()}


def _confined(workspace: Path, box: OsSandbox, confinement: Confinement) -> ToolContext:
    return ToolContext(
        workspace=workspace, data_dir=workspace / ".data", sandbox=box, confinement=confinement
    )


def _helper_alone(workspace: Path, box: OsSandbox) -> tuple[float, float]:
    bare, confined = [], []
    prepared = box.prepare(["true"], WORKSPACE_WRITE)
    for _ in range(ROUNDS):
        for argv, env, into in ((["true"], None, bare), (prepared.argv, prepared.env, confined)):
            started = time.perf_counter()
            subprocess.run(argv, cwd=workspace, env=env, check=True)
            into.append((time.perf_counter() - started) * 1000)
    return statistics.median(bare), statistics.median(confined)


async def _cancel_ms(ctx: ToolContext, marker: str) -> float | None:
    """Milliseconds from cancelling until nothing the command started runs; None when
    something was still running 5 s later (it is then killed)."""
    command = f"setsid sleep {marker} & sleep {marker}"
    task = asyncio.create_task(Shell().call(ShellInput(command=command), ctx))
    while len(_running(marker)) < 2:  # noqa: ASYNC110 - other processes: no event to wait on
        await asyncio.sleep(0.01)
    started = time.perf_counter()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    while _running(marker) and time.perf_counter() - started < 5:  # noqa: ASYNC110
        await asyncio.sleep(0.005)
    elapsed = (time.perf_counter() - started) * 1000
    survivors = _running(marker)
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    return None if survivors else elapsed


async def _cancel_rounds(ctx: ToolContext) -> list[float | None]:
    return [await _cancel_ms(ctx, f"987.{n}") for n in range(5)]


def _running(marker: str) -> list[int]:
    """The `sleep MARKER` processes still running (not zombies)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if (entry / "cmdline").read_bytes() == f"sleep\0{marker}\0".encode():
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.append(int(entry.name))
        except (OSError, IndexError):
            continue
    return found


def run() -> list[tuple[str, str]]:
    support = probe_support()
    if not support.ok:
        return [("sandbox", f"not measured: no sandbox here ({support.problem})")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="agentcli-bench-sandbox-") as tmp:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        _tree(workspace)
        box = OsSandbox(workspace=workspace)
        rg = find_rg() or "rg"
        for label, command in (("ls -la", "ls -la"), ("rg marker", f"{rg} -n marker")):
            times = asyncio.run(_compare(workspace, box, command))
            base = times["unsandboxed"]
            for profile in ("read-only", "workspace-write"):
                added = times[profile] - base
                rows.append(
                    (
                        f"shell `{label}` {profile} vs unsandboxed",
                        f"{times[profile]:.1f} ms vs {base:.1f} ms: +{added:.1f} ms "
                        f"({times[profile] / base:.1f}×; target ≤ +30 ms)",
                    )
                )
        bare, confined = _helper_alone(workspace, box)
        rows.append(
            (
                "helper alone (`true`)",
                f"{confined:.1f} ms vs {bare:.1f} ms: +{confined - bare:.1f} ms",
            )
        )
        for name, ctx in (
            (
                "unsandboxed",
                ToolContext(
                    workspace=workspace, data_dir=workspace / ".data", confinement=UNCONFINED
                ),
            ),
            ("sandboxed", _confined(workspace, box, WORKSPACE_WRITE)),
        ):
            results = asyncio.run(_cancel_rounds(ctx))
            done = [ms for ms in results if ms is not None]
            survived = len(results) - len(done)
            summary = f"median {statistics.median(done):.0f} ms until all gone" if done else ""
            if survived:
                summary += f"{'; ' if done else ''}the setsid child survived {survived}/5 times"
            rows.append((f"cancel a command with a setsid child, {name}", summary + " (< 1 s)"))
    return rows


if __name__ == "__main__":
    for what, result in run():
        print(f"{what}: {result}")
