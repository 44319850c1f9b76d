"""What hooks cost, measured side by side in one run:

- one PreToolUse hook (`true`, and a Python script that reads its JSON and allows the call) run
  through the engine, unconfined and in the sandbox's workspace-write profile, next to starting
  `bash -c true` directly (interleaved rounds, medians): what a tool call pays per hook;
- a tool call's PreToolUse/PostToolUse seam when no hook is configured (the common case), next
  to a bare function call: what every call pays for hooks existing at all.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agentcli.call_records import ToolCallRecord
from agentcli.hook_entry import Handler
from agentcli.hooks.catalog import Catalog, HookDef, Source, State
from agentcli.hooks.engine import HookEngine, SessionFacts
from agentcli.sandbox.runner import OsSandbox
from agentcli.sandbox.support import probe_support
from agentcli.store import MemoryJournal
from agentcli.tools.output import HeadTailCollector
from agentcli.tools.process_group import run_in_group

ROUNDS = 15
SEAM_CALLS = 20_000
BARE = "`bash -c true` started directly"
GROUPED = "`bash -c true` in its own process group (how commands and checks run)"


def _engine(workspace: Path, command: str, sandbox: OsSandbox | None) -> HookEngine:
    hook = HookDef(
        event="PreToolUse",
        matcher="",
        handler=Handler(type="command", command=command, sandbox=sandbox is not None),
        source=Source.USER,
        origin="bench",
    )
    catalog = Catalog(workspace=workspace, entries=((hook, State.RUNS),))
    engine = HookEngine(catalog, events=lambda _event: None)
    journal = MemoryJournal()
    engine.bind(
        lambda: SessionFacts(
            session_id="bench",
            workspace=workspace,
            data_dir=workspace / ".data",
            mode="default",
            model="m",
            sandbox=sandbox,
            record=journal.hook_ran,
            transcript=list,
        )
    )
    return engine


async def _hook_ms(engine: HookEngine, record: ToolCallRecord) -> float:
    started = time.perf_counter()
    await engine.for_task().before_call(record)
    return (time.perf_counter() - started) * 1000


async def _per_hook(workspace: Path, box: OsSandbox | None) -> dict[str, float]:
    script = workspace / "allow.py"
    script.write_text(
        f"#!{sys.executable}\nimport json, sys\njson.load(sys.stdin)\n"
        "print(json.dumps({'hookSpecificOutput': {'permissionDecision': 'allow'}}))\n"
    )
    script.chmod(0o755)
    variants = {
        "`true`, unconfined": _engine(workspace, "true", None),
        "Python hook, unconfined": _engine(workspace, str(script), None),
    }
    if box is not None:
        variants["`true`, sandboxed"] = _engine(workspace, "true", box)
        variants["Python hook, sandboxed"] = _engine(workspace, str(script), box)
    record = ToolCallRecord(call_id="c", name="shell", input={"command": "ls"})
    samples: dict[str, list[float]] = {name: [] for name in [BARE, GROUPED, *variants]}
    for _ in range(ROUNDS):  # interleaved, so load changes hit every variant alike
        started = time.perf_counter()
        await asyncio.to_thread(subprocess.run, ["bash", "-c", "true"], check=True)
        samples[BARE].append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        collector = HeadTailCollector(1 << 16, workspace / ".data" / "spill.txt")
        await run_in_group(["bash", "-c", "true"], cwd=workspace, timeout_s=10, collector=collector)
        samples[GROUPED].append((time.perf_counter() - started) * 1000)
        for name, engine in variants.items():
            samples[name].append(await _hook_ms(engine, record))
    return {name: statistics.median(values) for name, values in samples.items()}


async def _seam_us() -> tuple[float, float]:
    """Microseconds per call: the runtime's two hook calls with no hook configured, and a bare
    awaited no-op."""
    engine = HookEngine(Catalog(workspace=Path()), events=lambda _event: None)
    task = engine.for_task()
    record = ToolCallRecord(call_id="c", name="shell", input={})

    async def nothing() -> None:
        return None

    started = time.perf_counter()
    for _ in range(SEAM_CALLS):
        await task.before_call(record)
        await task.after_call(record)
    seam = (time.perf_counter() - started) / SEAM_CALLS * 1e6
    started = time.perf_counter()
    for _ in range(SEAM_CALLS):
        await nothing()
        await nothing()
    bare = (time.perf_counter() - started) / SEAM_CALLS * 1e6
    return seam, bare


def run() -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as temp:
        workspace = Path(temp).resolve()
        box = OsSandbox(workspace=workspace) if probe_support().ok else None
        medians = asyncio.run(_per_hook(workspace, box))
    rows.append((f"{BARE} (median)", f"{medians.pop(BARE):.1f} ms"))
    base = medians.pop(GROUPED)
    rows.append((f"{GROUPED} (median)", f"{base:.1f} ms"))
    for name, value in medians.items():
        rows.append(
            (f"one PreToolUse hook: {name} (median)", f"{value:.1f} ms ({value / base:.1f}x)")
        )
    if box is None:
        rows.append(("sandboxed hooks", "no sandbox on this kernel: not measured"))
    seam, bare = asyncio.run(_seam_us())
    rows.append(
        (
            "a call's hook seam with no hook configured",
            f"{seam:.2f} µs (bare awaits: {bare:.2f} µs)",
        )
    )
    return rows
