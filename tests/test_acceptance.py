"""Tasks are `succeeded` only on independent evidence: acceptance checks, repair rounds,
artifact-version binding, the convergence guard, and the task state / exit code table."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from agentcli.acceptance import (
    AcceptanceSettings,
    detect_test_command,
    head_and_tail,
    resolve_commands,
    run_acceptance,
)
from agentcli.call_records import CallStatus, ToolCallRecord
from agentcli.convergence import ConvergenceGuard, ConvergenceSettings
from agentcli.conversation import ConversationManager
from agentcli.errors import UsageError
from agentcli.events import Event, EventSink, ModelResponded, Notice
from agentcli.loop_steps import Nudge, Stop
from agentcli.owngit import find_repo
from agentcli.permissions import NonInteractivePrompter, PermissionMode
from agentcli.permissions.basic import ModePolicy
from agentcli.snapshots import changed_files, take_snapshot
from agentcli.store import MemoryJournal
from agentcli.tasks import ExitCode, TaskState, exit_code_for, task_state_for
from agentcli.terminal_reason import TerminalReason
from agentcli.testing import ScriptedModel, respond, text, tool_use
from agentcli.tools.base import Risk, Tool, ToolContext, ToolInput, ToolOutput
from agentcli.tools.read_file import ReadFile
from agentcli.usage import Budget


class PutInput(ToolInput):
    path: str
    content: str


class Put(Tool[PutInput]):
    """A minimal write tool for these tests."""

    name = "put"
    description = "write a file"
    input_model = PutInput
    risk = Risk.WRITE

    async def call(self, args: PutInput, ctx: ToolContext) -> ToolOutput:
        (ctx.workspace / args.path).write_text(args.content)
        return ToolOutput(text=f"wrote {args.path}")


def manager(
    model: Any,
    workspace: Path,
    commands: tuple[str, ...],
    *,
    retries: int = 3,
    timeout_s: float = 60,
    events: list[Event] | None = None,
    sink: EventSink | None = None,
    journal: MemoryJournal | None = None,
    budget: Budget | None = None,
) -> ConversationManager:
    if sink is None:
        sink = events.append if events is not None else (lambda _e: None)
    return ConversationManager(
        model=model,
        tools=[ReadFile(), Put()],
        tool_context=ToolContext(workspace=workspace, data_dir=workspace.parent / "data"),
        policy=ModePolicy(mode=PermissionMode.YOLO),
        prompter=NonInteractivePrompter(),
        journal=journal or MemoryJournal(),
        system="sys",
        events=sink,
        acceptance=AcceptanceSettings(commands=commands, retries=retries, timeout_s=timeout_s),
        budget=budget,
    )


def git_repo(path: Path) -> Path:
    for args in (["init", "-q"], ["config", "user.email", "t@e"], ["config", "user.name", "t"]):
        subprocess.run(["git", *args], cwd=path, check=True)
    (path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    subprocess.run(["git", "add", "."], cwd=path, check=True)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=path, check=True)
    return path


CHECK = "python3 -c 'import calc; assert calc.add(2, 3) == 5, calc.add(2, 3)'"
FIXED = "def add(a, b):\n    return a + b  # fixed\n"
"""Not the broken file's size: Python takes a .pyc as current when the source's size and mtime
(in whole seconds) match, and a check run in the same second as the fix would import the
broken version's byte-code wherever Python writes it (PYTHONDONTWRITEBYTECODE unset)."""


async def test_a_false_done_claim_fails_and_the_model_saw_the_evidence(workspace: Path) -> None:
    git_repo(workspace)
    claim = respond(text("Fixed! All tests pass."))
    model = ScriptedModel([claim] * 3)
    result = await manager(model, workspace, (CHECK,), retries=2).run_task("fix add")
    assert result.state is TaskState.FAILED and result.exit_code == ExitCode.FAILED
    assert result.reason is TerminalReason.COMPLETED
    assert result.error is not None and "exited 1" in result.error
    # The check ran once; the model changed nothing after it, so each repair round reused its
    # evidence (bound to the same version) instead of running the same check again.
    history = [(c.round, c.reused, c.passed) for c in result.acceptance]
    assert history == [(0, False, False), (1, True, False), (2, True, False)]
    assert len({c.artifact_version for c in result.acceptance}) == 1
    assert result.repair_rounds == 2
    assert "AssertionError: -1" in result.acceptance[0].output_tail
    # The failing evidence went back to the model twice (two repair rounds); the second time
    # it was told plainly that it had changed nothing.
    feedback = [r.messages[-1].text for r in model.requests[1:]]
    assert len(feedback) == 2
    assert all("AssertionError: -1" in f and "exited with code 1" in f for f in feedback)
    assert "agentcli ran the acceptance checks" in feedback[0]
    assert feedback[1].startswith("You changed nothing in the workspace since")


async def test_fix_after_failed_check_succeeds_bound_to_the_final_version(workspace: Path) -> None:
    git_repo(workspace)
    model = ScriptedModel(
        [
            respond(text("Done.")),
            respond(tool_use("put", {"path": "calc.py", "content": FIXED})),
            respond(text("Now really fixed.")),
        ]
    )
    result = await manager(model, workspace, (CHECK,)).run_task("fix add")
    assert result.state is TaskState.SUCCEEDED, result.error
    assert result.exit_code == ExitCode.OK
    failed, evidence = result.acceptance  # every check run is in the result, in order
    assert (failed.round, failed.passed, evidence.round, evidence.reused) == (0, False, 1, False)
    assert failed.artifact_version != evidence.artifact_version
    assert evidence.passed and evidence.artifact_version == result.artifact_version
    assert result.repair_rounds == 1
    assert result.artifact_version is not None and result.artifact_version.startswith("git:")
    assert result.changed_files == ["calc.py"]
    # The user's index and HEAD are untouched: calc.py is still an unstaged change. (Untracked
    # files are the check's own: Python leaves __pycache__/ where it may write byte-code.)
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=workspace,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert status.strip() == "M calc.py"


async def test_no_criteria_means_unverified(workspace: Path) -> None:
    result = await manager(ScriptedModel([respond(text("done"))]), workspace, ()).run_task("x")
    assert result.state is TaskState.UNVERIFIED and result.acceptance == []
    assert result.artifact_version is not None and result.artifact_version.startswith("files:")


async def test_a_hanging_check_is_killed_by_its_timeout(workspace: Path) -> None:
    marker = workspace / "child.pid"
    hang = f"sleep 60 & echo $! > {marker}; wait"
    report = await run_acceptance(
        AcceptanceSettings(commands=(hang,), timeout_s=0.5),
        workspace,
        lambda _e: None,
        spill_dir=workspace.parent / "spill",
    )
    (evidence,) = report.evidence
    assert evidence.exit_code is None and not evidence.passed
    assert "timeout" in evidence.output_tail
    assert not await eventually_dead(int(marker.read_text()))


async def test_checks_that_change_the_workspace_every_time_cannot_succeed(workspace: Path) -> None:
    report = await run_acceptance(
        AcceptanceSettings(commands=("date +%s%N >> log.txt",)),
        workspace,
        lambda _e: None,
        spill_dir=workspace.parent / "spill",
    )
    assert not report.stable and not report.passed
    assert "change the workspace" in report.summary()


async def test_a_check_that_leaves_a_background_child_ends_with_its_command(
    workspace: Path,
) -> None:
    marker = workspace / "child.pid"
    report = await run_acceptance(
        AcceptanceSettings(commands=(f"sleep 60 & echo $! > {marker}; echo ok",), timeout_s=30),
        workspace,
        lambda _e: None,
        spill_dir=workspace.parent / "spill",
    )
    (evidence,) = report.evidence
    assert evidence.passed and "ok" in evidence.output_tail
    assert not await eventually_dead(int(marker.read_text()))


async def test_cancel_kills_the_whole_process_group(workspace: Path) -> None:
    marker = workspace / "pid"
    task = asyncio.create_task(
        run_acceptance(
            AcceptanceSettings(commands=(f"sleep 60 & echo $! > {marker}; sleep 60",)),
            workspace,
            lambda _e: None,
            spill_dir=workspace.parent / "spill",
        )
    )
    deadline = time.monotonic() + 60  # bounds a hang: a loaded machine starts shells slowly
    while not (marker.exists() and marker.read_text().strip()) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not await eventually_dead(int(marker.read_text()))


def alive(pid: int) -> bool:
    """True if the process exists and is not a zombie (killed but not yet reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def eventually_dead(pid: int, within_s: float = 30.0) -> bool:
    """Poll until the process is gone; returns whether it is still alive at the end."""
    deadline = time.monotonic() + within_s
    while alive(pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return alive(pid)


def record(name: str, inp: dict[str, Any], result: str, *, error: bool = False) -> ToolCallRecord:
    return ToolCallRecord(
        call_id="c",
        name=name,
        input=inp,
        result_text=result,
        status=CallStatus.FAILED if error else CallStatus.SUCCEEDED,
    )


def version_of(value: Callable[[], str]) -> Callable[[], Awaitable[str | None]]:
    """An artifact version for the guard, as the conversation gives it one (awaited)."""

    async def artifact_version() -> str | None:
        return value()

    return artifact_version


async def test_guard_nudges_once_then_stops_on_identical_repeats() -> None:
    guard = ConvergenceGuard(artifact_version=version_of(lambda: "v1"))
    same = [record("read_file", {"path": "a"}, "1\tx")]
    assert await guard.after_tools(same) is None
    assert await guard.after_tools(same) is None
    nudge = await guard.after_tools(same)
    assert isinstance(nudge, Nudge)
    assert 'read_file {"path":"a"}' in nudge.text and "3 times" in nudge.text
    stop = await guard.after_tools(same)
    assert isinstance(stop, Stop) and stop.reason is TerminalReason.NO_PROGRESS


async def test_guard_treats_changing_output_and_changing_artifact_as_progress() -> None:
    version = {"v": 0}
    guard = ConvergenceGuard(artifact_version=version_of(lambda: f"v{version['v']}"))
    for n in range(10):  # polling a job whose output changes
        polled = [record("shell", {"command": "tail log"}, f"line {n}")]
        assert await guard.after_tools(polled) is None
    for n in range(10):  # a failing test re-run after each edit
        version["v"] = n
        out = f"FAILED ({n} passed)"
        failed = [record("shell", {"command": "pytest"}, out, error=True)]
        assert await guard.after_tools(failed) is None


async def test_guard_catches_failures_on_an_unchanged_artifact_with_noisy_output() -> None:
    guard = ConvergenceGuard(artifact_version=version_of(lambda: "same"))
    verdicts = [
        await guard.after_tools([record("shell", {"command": "make"}, f"took {n}ms", error=True)])
        for n in range(4)
    ]
    assert verdicts[:2] == [None, None]
    assert isinstance(verdicts[2], Nudge) and "failed 3 times" in verdicts[2].text
    assert isinstance(verdicts[3], Stop)


async def test_guard_catches_ab_alternation() -> None:
    guard = ConvergenceGuard(
        artifact_version=version_of(lambda: "v"), settings=ConvergenceSettings(repeat_limit=10)
    )
    a = [record("read_file", {"path": "a"}, "A")]
    b = [record("read_file", {"path": "b"}, "B")]
    verdicts = [await guard.after_tools(batch) for batch in (a, b, a, b, a)]
    assert verdicts[:3] == [None, None, None]
    assert isinstance(verdicts[3], Nudge) and "alternating" in verdicts[3].text
    assert isinstance(verdicts[4], Stop)


async def test_repeated_identical_failing_call_ends_no_progress_after_one_nudge(
    workspace: Path,
) -> None:
    model = ScriptedModel(
        [respond(tool_use("read_file", {"path": "missing.py"})) for _ in range(4)]
    )
    result = await manager(model, workspace, ()).run_task("read it")
    assert result.reason is TerminalReason.NO_PROGRESS
    assert result.state is TaskState.FAILED and result.exit_code == ExitCode.FAILED
    nudges = [m.text for r in model.requests for m in r.messages[-1:] if "convergence" in m.text]
    assert len(nudges) == 1


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"pyproject.toml": "[tool.pytest.ini_options]\n"}, "python -m pytest -q"),
        ({"package.json": '{"scripts": {"test": "jest"}}'}, "npm test"),
        ({"package.json": '{"scripts": {"test": "echo \\"Error: no test specified\\""}}'}, None),
        ({"Cargo.toml": "[package]\n"}, "cargo test"),
        ({"go.mod": "module x\n"}, "go test ./..."),
        ({"Makefile": "build:\n\techo\ntest:\n\techo ok\n"}, "make test"),
        ({"tests/test_x.py": "def test(): pass\n"}, "python -m pytest -q"),
        ({"README.md": "hi"}, None),
    ],
)
def test_detect_test_command(workspace: Path, files: dict[str, str], expected: str | None) -> None:
    for name, content in files.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(content)
    found = detect_test_command(workspace)
    assert (found[0] if found else None) == expected


def test_accept_tests_says_what_it_chose_or_fails_clearly(workspace: Path) -> None:
    seen: list[Event] = []
    with pytest.raises(UsageError, match="could not detect"):
        resolve_commands(["tests"], workspace, seen.append)
    (workspace / "go.mod").write_text("module x\n")
    assert resolve_commands(["tests", "make lint"], workspace, seen.append) == (
        "go test ./...",
        "make lint",
    )
    assert any(isinstance(e, Notice) and "go test" in e.message for e in seen)


def test_head_and_tail_keeps_both_ends() -> None:
    output = "\n".join(f"line {n}" for n in range(50_000))
    shown = head_and_tail(output)
    assert "line 0" in shown and "line 49999" in shown and "omitted" in shown
    assert len(shown) < 13_000


@pytest.mark.parametrize(
    ("reason", "passed", "state", "code"),
    [
        (TerminalReason.COMPLETED, None, TaskState.UNVERIFIED, 0),
        (TerminalReason.COMPLETED, True, TaskState.SUCCEEDED, 0),
        (TerminalReason.COMPLETED, False, TaskState.FAILED, 1),
        (TerminalReason.MAX_TURNS, None, TaskState.BUDGET_EXHAUSTED, 3),
        (TerminalReason.BUDGET_EXCEEDED, True, TaskState.BUDGET_EXHAUSTED, 3),
        (TerminalReason.TIMEOUT, None, TaskState.BUDGET_EXHAUSTED, 3),
        (TerminalReason.PERMISSION_DENIED, None, TaskState.FAILED, 4),
        (TerminalReason.ABORTED, None, TaskState.ABORTED, 130),
        (TerminalReason.FATAL_TOOL_ERROR, None, TaskState.FAILED, 1),
        (TerminalReason.MODEL_ERROR, None, TaskState.FAILED, 1),
        (TerminalReason.REFUSED, None, TaskState.FAILED, 1),
        (TerminalReason.CONTEXT_EXHAUSTED, None, TaskState.FAILED, 1),
        (TerminalReason.NO_PROGRESS, None, TaskState.FAILED, 1),
    ],
)
def test_terminal_reason_to_state_and_exit_code(
    reason: TerminalReason, passed: bool | None, state: TaskState, code: int
) -> None:
    assert task_state_for(reason, passed) is state
    assert exit_code_for(state, reason) == code


async def test_a_corrupt_git_index_falls_back_to_a_file_hash_and_says_so(workspace: Path) -> None:
    git_repo(workspace)
    (workspace / ".git" / "index").write_bytes(b"DIRC garbage")
    events: list[Event] = []
    model = ScriptedModel(
        [respond(tool_use("put", {"path": "calc.py", "content": FIXED})), respond(text("fixed"))]
    )
    result = await manager(model, workspace, (CHECK,), events=events).run_task("fix add")
    assert result.state is TaskState.SUCCEEDED, result.error
    assert result.artifact_version is not None and result.artifact_version.startswith("files:")
    assert "calc.py" in result.changed_files
    assert any(isinstance(e, Notice) and "file-tree hash" in e.message for e in events)


async def test_checks_without_any_artifact_version_cannot_succeed(workspace: Path) -> None:
    from agentcli.snapshots import SnapshotError

    def broken(_workspace: Path) -> Any:
        raise SnapshotError("too many files")

    report = await run_acceptance(
        AcceptanceSettings(commands=("true",)),
        workspace,
        lambda _e: None,
        spill_dir=workspace.parent / "spill",
        snapshot=broken,
    )
    assert report.evidence[0].passed and not report.passed
    assert "too many files" in report.summary()


@pytest.mark.parametrize("commands", [(), ("true",)])
async def test_cancel_after_the_model_ended_still_finishes_and_records_the_task(
    workspace: Path, commands: tuple[str, ...]
) -> None:
    """A cancel that lands after the model's last response (while the task takes its final
    snapshot, or just before its checks) aborts the task on the record instead of escaping
    run_task and leaving the journal's task `running`."""
    journal = MemoryJournal()
    current: list[asyncio.Task[Any]] = []

    def cancel_on_final_response(event: Event) -> None:
        if isinstance(event, ModelResponded) and event.tool_calls == 0:
            current[0].cancel()

    conversation = manager(
        ScriptedModel([respond(text("done"))]),
        workspace,
        commands,
        sink=cancel_on_final_response,
        journal=journal,
    )
    current.append(asyncio.create_task(conversation.run_task("do it")))
    result = await current[0]
    assert result.state is TaskState.ABORTED
    assert result.reason is TerminalReason.ABORTED
    assert result.task_id and journal.tasks[result.task_id]["state"] == "aborted"
    assert conversation.messages[-1].text == "done"


async def test_the_task_time_limit_also_bounds_the_acceptance_checks(workspace: Path) -> None:
    """`--timeout` is a wall-clock limit for the whole task: a check still running when it
    runs out is stopped, and the task ends `timeout` (exit 3), not after the check's own
    (much longer) timeout."""
    marker = workspace.parent / "pid"  # outside the workspace: the check changes nothing
    conversation = manager(
        ScriptedModel([respond(text("done"))]),
        workspace,
        (f"echo $$ > {marker}; sleep 30",),
        timeout_s=60,
        budget=Budget(timeout_s=1.0),
    )
    result = await conversation.run_task("do it")
    assert result.reason is TerminalReason.TIMEOUT
    assert result.exit_code is ExitCode.LIMITS
    assert result.error is not None and "acceptance checks" in result.error
    assert not await eventually_dead(int(marker.read_text()))


@pytest.mark.parametrize("in_git", [True, False])
def test_changed_files_names_unicode_and_spaced_paths_as_they_are(
    workspace: Path, in_git: bool
) -> None:
    """git quotes such paths in its default output; the result must carry the real names,
    relative to the workspace even when it is a subdirectory of the repository."""
    root = workspace
    if in_git:
        git_repo(workspace)
        root = workspace / "sub"
        root.mkdir()
    repo = find_repo(root)
    assert (repo is not None) == in_git
    before = take_snapshot(root, repo)
    (root / "ünï cödé.txt").write_text("hi\n")
    (root / "plain.txt").write_text("x\n")
    after = take_snapshot(root, repo)
    assert changed_files(before, after, root) == ["plain.txt", "ünï cödé.txt"]


def test_without_a_git_executable_the_workspace_is_hashed_as_files(
    workspace: Path, tmp_path: Path
) -> None:
    """No git executable on PATH must mean "hash the files", not a failed task."""
    git_repo(workspace)
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    code = (
        "from pathlib import Path\n"
        "from agentcli.checkpoints import Checkpointer\n"
        "from agentcli.owngit import decide\n"
        "from agentcli.snapshots import take_snapshot\n"
        "from agentcli.store.sqlite import SqliteJournal\n"
        "git = decide(Path('.'))\n"
        "print(take_snapshot(Path('.'), git.repo).version, git.repo)\n"
        "journal = SqliteJournal.create('S1', workspace=Path('.').resolve(), model='m')\n"
        "journal.task_started('T1', 'p')\n"
        "Checkpointer(journal.conn, git).before_change('T1', None)\n"
        "print(journal.conn.execute('SELECT kind FROM checkpoints').fetchone()[0])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=workspace,
        env={**os.environ, "PATH": str(empty_bin)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [done.stdout.split()[0], "None", "files"]
    assert done.stdout.startswith("files:")
