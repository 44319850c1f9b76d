"""The hook engine on its own, with real hook processes: PreCompact (the function compaction
calls), a hanging hook stopped with its whole process group, Notification in the background,
and what each run leaves in the journal."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from agentcli.config import load_settings
from agentcli.events import Event, HookFinished, Notice
from agentcli.hooks import HookEngine, SessionFacts, session_hooks
from agentcli.store import MemoryJournal
from tests.hooks.conftest import hook_table, logging_hook, python_hook, records, script, user_hooks


def engine_for(workspace: Path, tmp_path: Path) -> tuple[HookEngine, MemoryJournal, list[Event]]:
    events: list[Event] = []
    journal = MemoryJournal()
    engine = session_hooks(
        load_settings(workspace), workspace, events=events.append, sandbox_problem=None
    )
    engine.bind(
        lambda: SessionFacts(
            session_id="s-1",
            workspace=workspace,
            data_dir=tmp_path / "data",
            mode="default",
            model="claude-opus-5-5",
            sandbox=None,
            record=journal.hook_ran,
            transcript=list,
        )
    )
    return engine, journal, events


async def test_pre_compact_can_block_compaction_by_trigger(workspace: Path, tmp_path: Path) -> None:
    log = tmp_path / "compact.jsonl"
    refuse = logging_hook(
        tmp_path / "refuse.py",
        log,
        "print('keep the whole history', file=sys.stderr)\nsys.exit(2)\n",
    )
    user_hooks(hook_table("PreCompact", str(refuse), matcher="auto"))
    engine, journal, _events = engine_for(workspace, tmp_path)
    manual = await engine.compacting("manual", "keep the API notes")
    assert manual.block is None
    auto = await engine.compacting("auto")
    assert auto.block is not None and auto.block.reason == "keep the whole history"
    [seen] = records(log)
    assert seen["hook_event_name"] == "PreCompact" and seen["trigger"] == "auto"
    assert seen["custom_instructions"] == ""
    assert [(run.event, run.exit_code, run.decision) for run in journal.hook_runs] == [
        ("PreCompact", 2, "block")
    ]


async def test_a_hanging_hook_is_stopped_with_everything_it_started(
    workspace: Path, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    hang = script(
        tmp_path / "hang.sh",
        f"#!/bin/bash\nsleep 300 &\necho $! > {pids}\nsleep 300\n",
    )
    user_hooks(hook_table("Stop", str(hang), timeout=1))
    engine, journal, events = engine_for(workspace, tmp_path)
    verdict = await engine.for_task().stopping("done", active=False)
    assert verdict.again is None and verdict.stop is None  # a timeout blocks nothing
    [run] = journal.hook_runs
    assert run.timed_out and run.exit_code is None
    child = int(pids.read_text())
    assert not _alive(child)
    notices = [e.message for e in events if isinstance(e, Notice)]
    assert any("longer than its timeout" in n and "nothing was blocked" in n for n in notices)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(") ")[1][0] not in "ZX"


async def test_notification_hooks_run_in_the_background_and_the_end_waits_for_them(
    workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "notify.jsonl"
    slow = logging_hook(tmp_path / "slow.py", log, "import time\ntime.sleep(0.5)\n")
    end = logging_hook(tmp_path / "end.py", log)
    user_hooks(hook_table("Notification", str(slow)), hook_table("SessionEnd", str(end)))
    engine, _journal, _events = engine_for(workspace, tmp_path)
    engine.notify("agentcli needs your permission", "permission_prompt")
    assert records(log) == []  # it returned at once
    await engine.end_session("other")
    assert [r["hook_event_name"] for r in records(log)] == ["Notification", "SessionEnd"]


async def test_the_session_end_is_told_of_the_session_as_it_was(
    workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "end.jsonl"
    end = logging_hook(tmp_path / "end.py", log)
    user_hooks(hook_table("SessionEnd", str(end)))
    engine, _journal, _events = engine_for(workspace, tmp_path)
    ending = engine.end_session("resume")
    engine.bind(lambda: (_ for _ in ()).throw(AssertionError("read after the end")))
    await ending
    assert records(log)[0]["session_id"] == "s-1"


async def test_hooks_of_one_event_run_in_parallel(workspace: Path, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    # Each waits until the other has started: only parallel runs both finish in time.
    bodies = [
        f"import pathlib, time\npathlib.Path({str(marks)!r}, '{me}').touch()\n"
        f"for _ in range(200):\n"
        f"    if pathlib.Path({str(marks)!r}, '{other}').exists():\n"
        "        break\n"
        "    time.sleep(0.05)\n"
        "else:\n"
        "    sys.exit(3)\n"
        for me, other in (("a", "b"), ("b", "a"))
    ]
    hooks = [python_hook(tmp_path / f"p{n}.py", body) for n, body in enumerate(bodies)]
    user_hooks(*(hook_table("UserPromptSubmit", str(hook)) for hook in hooks))
    engine, journal, events = engine_for(workspace, tmp_path)
    await asyncio.wait_for(engine.for_task().prompt_submitted("x"), 30)
    assert [run.exit_code for run in journal.hook_runs] == [0, 0]
    finished = [e for e in events if isinstance(e, HookFinished)]
    assert len(finished) == 2
