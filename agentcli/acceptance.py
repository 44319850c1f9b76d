"""Acceptance checks: commands agentcli runs itself, on a known artifact version, to decide
whether a task succeeded. The model's claim that it is done is never evidence.

Each check is bound to the artifact version (`snapshots.take_snapshot`) it ran on. If the checks
themselves change the workspace, they are run once more on the new version; if they change it
again, no stable version was verified and the task cannot succeed.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
import tomllib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentcli.check_setup import (
    CANNOT_START,
    cannot_start,
    hidden_paths_problem,
    named_paths,
)
from agentcli.confinement import WORKSPACE_WRITE, CommandSandbox
from agentcli.errors import UsageError
from agentcli.events import AcceptanceFinished, AcceptanceStarted, EventSink, Notice
from agentcli.ids import new_id
from agentcli.owngit import find_repo
from agentcli.safe_read import MAX_PROJECT_FILE_BYTES, Inside, read_bytes
from agentcli.settings import DEFAULTS
from agentcli.snapshots import Snapshot, SnapshotError, take_snapshot
from agentcli.tasks import CheckEvidence
from agentcli.tools.output import HeadTailCollector
from agentcli.tools.process_group import run_in_group
from agentcli.truncation import keep_ends

DETECT_KEYWORD = "tests"
OUTPUT_TAIL_CHARS = 4000
CAPTURE_BYTES = 64_000
"""Output kept per check (head and tail); the whole output goes to a spill file beyond it."""
FEEDBACK_HEAD_LINES = 30
FEEDBACK_TAIL_LINES = 80
FEEDBACK_MAX_CHARS = 12_000


@dataclass(frozen=True, slots=True, kw_only=True)
class AcceptanceSettings:
    commands: tuple[str, ...] = ()
    retries: int = DEFAULTS.acceptance.retries
    """Repair rounds after a failed check (separate from --max-turns)."""
    timeout_s: float = DEFAULTS.acceptance.timeout_s
    """Per check; a check that runs longer is killed (with its process group) and fails."""


def _project_text(workspace: Path, name: str) -> str | None:
    """A project file's text, read as agentcli reads what it did not write
    (`agentcli.safe_read`); None when there is no such regular file inside the workspace."""
    try:
        inside = Inside.of(workspace)
        data = read_bytes(workspace / name, inside=inside, limit=MAX_PROJECT_FILE_BYTES)
    except OSError:
        return None
    return data.decode("utf-8", errors="replace")


def _pyproject_has_pytest(workspace: Path) -> bool:
    text = _project_text(workspace, "pyproject.toml")
    if text is None:
        return False
    try:
        return "pytest" in tomllib.loads(text).get("tool", {})
    except tomllib.TOMLDecodeError:
        return False


def _npm_test_script(workspace: Path) -> bool:
    text = _project_text(workspace, "package.json")
    if text is None:
        return False
    try:
        scripts = json.loads(text).get("scripts", {})
    except (json.JSONDecodeError, AttributeError):
        return False
    test = scripts.get("test") if isinstance(scripts, dict) else None
    return isinstance(test, str) and "no test specified" not in test


def _make_test_target(workspace: Path) -> bool:
    text = _project_text(workspace, "Makefile")
    return text is not None and bool(re.search(r"^test\s*:", text, re.M))


def detect_test_command(workspace: Path) -> tuple[str, str] | None:
    """The project's test command and why it was chosen, or None. First match wins."""
    pytest = "python -m pytest -q"
    probes: list[tuple[Callable[[], bool], str, str]] = [
        (lambda: _pyproject_has_pytest(workspace), pytest, "pyproject.toml has [tool.pytest]"),
        *(
            (lambda n=name: (workspace / n).is_file(), pytest, f"found {name}")
            for name in ("pytest.ini", "conftest.py", "tox.ini")
        ),
        (lambda: _npm_test_script(workspace), "npm test", "package.json has a test script"),
        (lambda: (workspace / "Cargo.toml").is_file(), "cargo test", "found Cargo.toml"),
        (lambda: (workspace / "go.mod").is_file(), "go test ./...", "found go.mod"),
        (lambda: _make_test_target(workspace), "make test", "Makefile has a test target"),
        (lambda: any((workspace / "tests").glob("test_*.py")), pytest, "found tests/test_*.py"),
    ]
    for probe, command, why in probes:
        if probe():
            return command, why
    return None


def resolve_commands(
    requested: Sequence[str], workspace: Path, events: EventSink
) -> tuple[str, ...]:
    """Expand `tests` into the detected test command; refuse empty commands."""
    commands: list[str] = []
    for command in requested:
        if not command.strip():
            raise UsageError("an acceptance command is empty")
        if command.strip() != DETECT_KEYWORD:
            commands.append(command)
            continue
        detected = detect_test_command(workspace)
        if detected is None:
            raise UsageError(
                "--accept tests: could not detect this project's test command",
                hint='name it instead, e.g. --accept "pytest -q"',
            )
        events(Notice(level="info", message=f"acceptance: using `{detected[0]}` ({detected[1]})"))
        commands.append(detected[0])
    return tuple(dict.fromkeys(commands))


@dataclass(frozen=True, slots=True, kw_only=True)
class AcceptanceReport:
    evidence: tuple[CheckEvidence, ...]
    final: Snapshot | None
    """The workspace as the checks left it (None when no version could be computed)."""
    stable: bool
    """False when the checks kept changing the workspace: no version was verified."""
    unverifiable: str | None = None
    """Why no artifact version could be computed, if none could: nothing was verified."""

    @property
    def final_version(self) -> str:
        return self.final.version if self.final is not None else ""

    @property
    def passed(self) -> bool:
        return (
            self.stable
            and self.unverifiable is None
            and all(e.passed and e.artifact_version == self.final_version for e in self.evidence)
        )

    @property
    def failed(self) -> list[CheckEvidence]:
        return [e for e in self.evidence if not e.passed]

    def setup_problem(self, earlier: Sequence[CheckEvidence] = ()) -> str | None:
        """Why a check of this report could not start at all, if one could not: a setup error,
        not the model's to fix. A check that started in an `earlier` round of the task and does
        not start now was broken since, by the task: that is the model's to repair."""
        for check in self.evidence:
            if check.setup_problem is None:
                continue
            started = any(
                e.command == check.command
                and e.exit_code is not None
                and e.exit_code not in CANNOT_START
                for e in earlier
            )
            if not started:
                return check.setup_problem
        return None

    def summary(self) -> str:
        problem = self.setup_problem()
        if problem is not None:
            return problem
        if self.unverifiable is not None:
            return f"no artifact version could be computed ({self.unverifiable})"
        if not self.stable:
            return "the acceptance checks change the workspace each time they run"
        return "; ".join(
            f"`{e.command}` " + ("timed out" if e.exit_code is None else f"exited {e.exit_code}")
            for e in self.failed
        )


Snapshotter = Callable[[Path], Snapshot]
Approver = Callable[[str], Awaitable[bool]]
"""Without a sandbox a check runs the model's code unconfined: asks whether that may happen."""
NOT_APPROVED = (
    "not run: there is no OS sandbox here, so this check would run the code the model wrote "
    "unconfined, and no one approved that (in a terminal you are asked; --permission-mode yolo "
    "runs checks unconfined without asking)"
)


async def run_acceptance(
    settings: AcceptanceSettings,
    workspace: Path,
    events: EventSink,
    *,
    spill_dir: Path,
    sandbox: CommandSandbox | None = None,
    snapshot: Snapshotter | None = None,
    approve: Approver | None = None,
) -> AcceptanceReport:
    """Run every check on the current artifact version. Full outputs of long checks are saved
    under `spill_dir` (the session's data directory: the feedback the model gets names those
    files, so they must outlive the call; a temporary directory here was never removed).
    `snapshot` takes the artifact version by the session's decision about git; without one,
    that decision is made now, once. Without a sandbox, `approve` is asked before each check
    runs (unconfined); a check it refuses is not run, and fails."""
    if snapshot is None:
        repo = await asyncio.to_thread(find_repo, workspace)
        snapshot = functools.partial(take_snapshot, repo=repo)
    try:
        return await _run_on_versions(
            settings, workspace, events, sandbox, spill_dir, snapshot, approve
        )
    except SnapshotError as exc:
        evidence = await _run_all(settings, workspace, None, events, sandbox, spill_dir, approve)
        return AcceptanceReport(evidence=evidence, final=None, stable=False, unverifiable=str(exc))


async def _run_on_versions(
    settings: AcceptanceSettings,
    workspace: Path,
    events: EventSink,
    sandbox: CommandSandbox | None,
    spill: Path,
    snapshot: Snapshotter,
    approve: Approver | None = None,
) -> AcceptanceReport:
    before = await asyncio.to_thread(snapshot, workspace)
    evidence = await _run_all(settings, workspace, before.version, events, sandbox, spill, approve)
    after = await asyncio.to_thread(snapshot, workspace)
    if after.version == before.version:
        return AcceptanceReport(evidence=evidence, final=after, stable=True)
    events(
        Notice(
            level="warning",
            message="the acceptance checks changed the workspace; "
            "running them again on the new version",
        )
    )
    evidence = await _run_all(settings, workspace, after.version, events, sandbox, spill, approve)
    final = await asyncio.to_thread(snapshot, workspace)
    return AcceptanceReport(evidence=evidence, final=final, stable=final.version == after.version)


def _not_run(
    command: str, version: str | None, why: str = NOT_APPROVED, *, setup: bool = False
) -> CheckEvidence:
    return CheckEvidence(
        command=command,
        exit_code=None,
        passed=False,
        artifact_version=version,
        output_tail=why,
        duration_s=0.0,
        full_output=why,
        setup_problem=why if setup else None,
    )


async def _run_all(
    settings: AcceptanceSettings,
    workspace: Path,
    version: str | None,
    events: EventSink,
    sandbox: CommandSandbox | None,
    spill_dir: Path,
    approve: Approver | None = None,
) -> tuple[CheckEvidence, ...]:
    results = []
    for number, command in enumerate(settings.commands, 1):
        if sandbox is None and approve is not None and not await approve(command):
            results.append(_not_run(command, version))
            continue
        argv, env = ["bash", "-c", command], None
        if sandbox is not None:
            # Checks run the model's code: in the workspace-write profile, like an approved
            # command (the network as `sandbox.network` says). The check itself is the user's:
            # it sees what its command names (`agentcli.check_setup`), never a hidden path.
            named = named_paths(command, cwd=workspace, environ=os.environ)
            hidden = hidden_paths_problem(command, sandbox.hides(named))
            if hidden is not None:
                results.append(_not_run(command, version, hidden, setup=True))
                continue
            prepared = sandbox.prepare(argv, WORKSPACE_WRITE.reading(named))
            argv, env = prepared.argv, prepared.env
        events(AcceptanceStarted(command=command, artifact_version=version))
        collector = HeadTailCollector(CAPTURE_BYTES, spill_dir / f"check-{number}-{new_id()}.txt")
        outcome = await run_in_group(
            argv, cwd=workspace, timeout_s=settings.timeout_s, collector=collector, env=env
        )
        output = outcome.output.text
        if outcome.timed_out:
            output += f"\n[killed: the check ran longer than its timeout of {settings.timeout_s}s]"
        evidence = CheckEvidence(
            command=command,
            exit_code=outcome.exit_code,
            passed=outcome.exit_code == 0,
            artifact_version=version,
            output_tail=_evidence_tail(output),
            duration_s=outcome.duration_s,
            full_output=output,
            setup_problem=cannot_start(
                command, outcome.exit_code, output, sandboxed=sandbox is not None
            ),
        )
        events(
            AcceptanceFinished(
                command=command,
                passed=evidence.passed,
                exit_code=outcome.exit_code,
                duration_s=round(outcome.duration_s, 3),
                artifact_version=version,
            )
        )
        results.append(evidence)
    return tuple(results)


def _evidence_tail(output: str) -> str:
    """The end of a check's output kept as evidence (`output_tail` says it is the end)."""
    kept = keep_ends(output, 0, OUTPUT_TAIL_CHARS)
    return output if kept is None else kept.tail


def failure_feedback(
    report: AcceptanceReport, round_number: int, rounds: int, *, unchanged: bool = False
) -> str:
    """The user turn that shows the model why the task is not done yet (`unchanged`: the model
    changed nothing since these checks failed, so they were not run again)."""
    if unchanged:
        opening = (
            "You changed nothing in the workspace since the acceptance checks failed, so "
            "agentcli did not run them again: the same failure stands (repair round "
            f"{round_number} of {rounds}). Answering without changing the code cannot pass "
            "them. Fix the cause; do not change the checks themselves."
        )
    else:
        opening = (
            "agentcli ran the acceptance checks on the current state of the workspace and they "
            f"did not pass (repair round {round_number} of {rounds}). The task is not done "
            "until they pass. Fix the cause; do not change the checks themselves."
        )
    parts = [opening]
    if not report.stable:
        parts.append(
            "The checks modified tracked or untracked files each time they ran, so "
            "no stable version could be verified."
        )
    for check in report.failed:
        status = (
            "was killed after its timeout"
            if check.exit_code is None
            else f"exited with code {check.exit_code}"
        )
        parts.append(
            f"$ {check.command}\n({status}, {check.duration_s:.1f}s)\n"
            f"{head_and_tail(check.full_output)}"
        )
    return "\n\n".join(parts)


def head_and_tail(output: str) -> str:
    """A failed check's output as the model is shown it: the first and last lines (errors
    usually sit at the end), then at most FEEDBACK_MAX_CHARS of those."""
    text = output
    lines = keep_ends(output.splitlines(), FEEDBACK_HEAD_LINES, FEEDBACK_TAIL_LINES)
    if lines is not None:
        notice = f"[... {lines.omitted} lines omitted ...]"
        text = "\n".join([*lines.head, notice, *lines.tail])
    half = FEEDBACK_MAX_CHARS // 2
    chars = keep_ends(text, half, half)
    if chars is not None:
        text = f"{chars.head}\n[... output shortened ...]\n{chars.tail}"
    return text
