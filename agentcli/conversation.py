"""ConversationManager: the session's durable state and the life of each task in it.

It owns the session id, the message history, the settings, the tools' shared context and the
journal; for each user request it creates a task, runs a QueryLoop over the history, and turns
the loop's outcome (plus acceptance evidence) into a TaskResult with a task state decided by code.

Slow work on the workspace runs in worker threads, started here where it is needed: the start
and end snapshots (artifact versions), the version the convergence guard asks for after a failed
call, and the undo checkpoint (`checkpoints`), which the tool runtime awaits before the first
call of a task that may change something starts, and which is ended before the task is recorded
as finished; around each such call, which paths it changed (`attribution`), so that a task's
`changed_files` and its undo are what its own calls changed. The journal only records.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from agentcli.acceptance import (
    AcceptanceReport,
    AcceptanceSettings,
    failure_feedback,
    run_acceptance,
)
from agentcli.attachments import expand
from agentcli.attribution import Checkpoints, TaskPaths, around_changes
from agentcli.catalogue import CATALOGUE, Catalogue
from agentcli.context import ContextView
from agentcli.convergence import ConvergenceGuard, ConvergenceSettings
from agentcli.events import EventSink, Notice, RepairRound, TaskStarted
from agentcli.ids import new_id
from agentcli.loop import LoopOutcome, LoopSettings, QueryLoop
from agentcli.loop_steps import Finished, TurnObserver
from agentcli.messages import Message
from agentcli.model import ModelClient, ModelRequest, ModelResponse
from agentcli.model.retry import RetryingModel, RetryPolicy
from agentcli.owngit import RepoDecision, decide
from agentcli.permissions import Answer, PermissionPolicy, PermissionRequest, Prompter
from agentcli.sandbox.profile import UNCONFINED
from agentcli.settings import DEFAULTS, Settings
from agentcli.snapshots import Snapshot, SnapshotError, changed_files, take_snapshot
from agentcli.store import Journal
from agentcli.task_outcome import Verified, blocked_by_denials, stamped, task_result
from agentcli.tasks import TaskResult
from agentcli.terminal_reason import TerminalReason
from agentcli.tools.base import Tool, ToolContext
from agentcli.tools.runtime import BeforeChange, ToolRuntime
from agentcli.usage import Budget
from agentcli.vocabulary import Decision, PermissionTarget, Risk

T = TypeVar("T")


@dataclass(kw_only=True)
class ConversationManager:
    model: ModelClient
    tools: Sequence[Tool[Any]]
    tool_context: ToolContext
    policy: PermissionPolicy
    prompter: Prompter
    journal: Journal
    system: str
    events: EventSink
    budget: Budget = field(default_factory=Budget)
    loop_settings: LoopSettings = field(default_factory=LoopSettings)
    retry_policy: RetryPolicy = field(default_factory=RetryPolicy)
    acceptance: AcceptanceSettings = field(default_factory=AcceptanceSettings)
    convergence: ConvergenceSettings = field(default_factory=ConvergenceSettings)
    context: ContextView = field(default_factory=ContextView)
    """The session's elision watermark: it carries over from task to task (and starts over by
    itself when the history is swapped, as by the REPL's /resume)."""
    session_id: str = field(default_factory=new_id)
    messages: list[Message] = field(default_factory=list)
    git: RepoDecision | None = None
    """Whether the workspace is a git repository, decided once when the session started (and
    when the manager is built, if not given): snapshots and checkpoints never re-detect it."""
    checkpoints: Checkpoints | None = None
    """Where each task's undo checkpoint goes (None: tasks are not undoable)."""
    settings: Settings = field(default_factory=lambda: DEFAULTS)
    """What the session was configured with (the REPL's /mode builds on it)."""
    instruction_files: Sequence[Path] = ()
    """The AGENTS.md / CLAUDE.md files in the system prompt, said once at the first task."""
    catalogue: Catalogue = CATALOGUE
    """The models' limits, prices and request rules (with the config's `[models]`)."""
    task_paths: TaskPaths = field(init=False)
    """What each task's own calls changed (`agentcli.attribution`)."""

    def __post_init__(self) -> None:
        decision = self.repo_decision()
        self.task_paths = TaskPaths(decision.workspace, decision.repo)
        self._instructions_told = False

    def _tell_instructions(self) -> None:
        if self._instructions_told or not self.instruction_files:
            return
        self._instructions_told = True
        workspace = self.tool_context.workspace
        shown = [
            str(p.relative_to(workspace)) if p.is_relative_to(workspace) else str(p)
            for p in self.instruction_files
        ]
        self.events(Notice(level="info", message=f"instructions from {', '.join(shown)}"))

    def repo_decision(self) -> RepoDecision:
        if self.git is None:
            self.git = decide(self.tool_context.workspace)
        return self.git

    def snapshot_now(self) -> Snapshot:
        """The workspace's artifact version now, by the session's decision about git (blocking:
        run it off the event loop)."""
        decision = self.repo_decision()
        return take_snapshot(decision.workspace, decision.repo)

    async def approve_unconfined_check(self, command: str) -> bool:
        """Without a sandbox an acceptance check runs the model's code unconfined: the policy
        decides (yolo allows, a deny rule denies, anything else asks a person, every time)."""
        target = PermissionTarget(
            rule_class="shell",
            subject=command,
            summary=f"run the acceptance check {command}",
            outside_sandbox=True,
        )
        verdict = self.policy.decide(Risk.EXECUTE, target)
        if verdict.decision is not Decision.ASK:
            return verdict.decision is Decision.ALLOW
        answer = await self.prompter.ask(
            PermissionRequest(
                call_id=f"acceptance-{new_id()}",
                tool="acceptance check",
                risk=Risk.EXECUTE,
                target=target,
                suggested_rule=None,
                preview=f"$ {command}\nin {self.tool_context.workspace}",
                reason="there is no OS sandbox: the check runs the model's code unconfined",
                confinement=UNCONFINED,
            )
        )
        return answer.answer is not Answer.NO

    def new_loop(
        self, observers: Sequence[TurnObserver] = (), task_id: str | None = None
    ) -> QueryLoop:
        """A QueryLoop for one task, with its own runtime, counters and deadline; with the
        task's id, its calls that may change something wait for its undo checkpoint."""
        runtime = ToolRuntime(
            self.tools,
            ctx=self.tool_context,
            policy=self.policy,
            prompter=self.prompter,
            journal=self.journal,
            events=self.events,
            before_change=self._before_change(task_id),
        )
        loop: QueryLoop
        model = RetryingModel(self.model, self.retry_policy, deadline=lambda: loop.deadline)
        loop = QueryLoop(
            model=model,
            runtime=runtime,
            journal=self.journal,
            system=self.system,
            events=self.events,
            budget=self.budget,
            settings=self.loop_settings,
            observers=observers,
            context=self.context,
            catalogue=self.catalogue,
        )
        return loop

    def _before_change(self, task_id: str | None) -> BeforeChange | None:
        if task_id is None:
            return None
        return around_changes(task_id, self.task_paths, self.checkpoints)

    async def run_task(self, prompt: str) -> TaskResult:
        """Run one user request to a terminal state. Never raises for task-ending conditions.

        The model works until it ends its turn; then agentcli runs the acceptance checks on the
        artifact version at that moment. A failed check goes back to the model as evidence for
        another round, until the checks pass or the repair rounds run out.
        """
        task_id = new_id()
        started = time.monotonic()
        workspace = self.tool_context.workspace
        self.events(
            TaskStarted(
                session_id=self.session_id, task_id=task_id, prompt=prompt, model=self.model.model
            )
        )
        self.journal.task_started(task_id, prompt, self.acceptance.commands)
        self._tell_instructions()
        expanded = await expand(prompt, self.tool_context, self.policy)
        for notice in expanded.notices:
            self.events(Notice(level="warning", message=notice))
        # The start snapshot (a git tree write, or a hash of every file) is taken while the first
        # request is on its way instead of delaying it; nothing can change the workspace before
        # the first response, and the loop gets that response only once the snapshot is done.
        start_task = asyncio.create_task(self._snapshot())
        guard = ConvergenceGuard(artifact_version=self._version_or_none, settings=self.convergence)
        loop = self.new_loop(observers=[guard], task_id=task_id)
        loop.model = _AfterPending(loop.model, start_task)
        request = Message.user(expanded.text)
        self.journal.message_appended(request)
        try:
            outcome = await loop.run([*self.messages, request])
        finally:
            start_snapshot = await self._finishing(loop, asyncio.shield(start_task))
        verified = await self._verify(loop, outcome)
        outcome, end_snapshot = verified.outcome, verified.end_snapshot
        self.messages = outcome.messages
        if end_snapshot is None:
            end_snapshot = await self._finishing(loop, self._snapshot())
        result = task_result(
            session_id=self.session_id,
            task_id=task_id,
            model=self.model.model,
            loop=loop,
            verified=verified,
            duration_s=time.monotonic() - started,
            retries=self.acceptance.retries if self.acceptance.commands else None,
        )
        if end_snapshot is not None:
            result.artifact_version = end_snapshot.version
            if start_snapshot is not None:
                every = changed_files(start_snapshot, end_snapshot, workspace)
                result.changed_files = self.task_paths.own(task_id, every)
                blocked_by_denials(result)
        if self.checkpoints is not None:
            # The end snapshot is the end state the checkpoint records: nothing ran since.
            tree = end_snapshot.tree if end_snapshot is not None else None
            ended = asyncio.to_thread(self.checkpoints.task_ended, task_id, end_tree=tree)
            await self._finishing(loop, ended)
        self.journal.task_finished(result)
        return result

    async def _verify(self, loop: QueryLoop, outcome: LoopOutcome) -> Verified:
        """Check what the model ended with; send failing evidence back for another round while
        rounds remain. A round in which the model changed nothing reuses the evidence (bound to
        the same artifact version) instead of running the same checks again, and says so."""
        verified = Verified(outcome=outcome)
        report: AcceptanceReport | None = None
        while verified.outcome.reason is TerminalReason.COMPLETED and self.acceptance.commands:
            unchanged = report is not None and await self._unchanged_since(report)
            if report is not None and unchanged:
                report = replace(report, evidence=stamped(report.evidence, verified.rounds, True))
            else:
                report = await self._check(loop)
                if report is None:
                    break
                report = replace(report, evidence=stamped(report.evidence, verified.rounds))
            problem = report.setup_problem(earlier=verified.history)
            verified.report = report
            verified.history.extend(report.evidence)
            if problem is not None:
                # Not the model's to fix (a check that cannot start): no repair round.
                loop.stopped = Finished(TerminalReason.CONFIG_ERROR, problem)
                verified.end_snapshot = report.final
                break
            if report.passed or verified.rounds >= self.acceptance.retries:
                verified.end_snapshot = report.final
                break
            verified.rounds += 1
            self.events(
                RepairRound(
                    round=verified.rounds,
                    of=self.acceptance.retries,
                    failed=[check.command for check in report.failed],
                    unchanged=unchanged,
                )
            )
            text = failure_feedback(
                report, verified.rounds, self.acceptance.retries, unchanged=unchanged
            )
            feedback = Message.user(text)
            self.journal.message_appended(feedback)
            verified.outcome = await loop.run([*verified.outcome.messages, feedback])
        return verified

    async def _unchanged_since(self, report: AcceptanceReport) -> bool:
        """Whether the workspace is still the version `report`'s checks ran on."""
        if report.final is None or not report.stable:
            return False
        now = await self._snapshot()
        return now is not None and now.version == report.final_version

    async def _snapshot(self) -> Snapshot | None:
        """The workspace's artifact version, or None (with a notice) if it cannot be taken."""
        try:
            snapshot = await asyncio.to_thread(self.snapshot_now)
        except SnapshotError as exc:
            self.events(Notice(level="warning", message=f"no artifact version: {exc}"))
            return None
        if snapshot.note:
            self.events(Notice(level="warning", message=snapshot.note))
        return snapshot

    async def _version_or_none(self) -> str | None:
        """The artifact version now, for the convergence guard (after a failed call): taken in
        a worker thread, as every snapshot is."""
        try:
            snapshot = await asyncio.to_thread(self.snapshot_now)
        except SnapshotError:
            return None
        return snapshot.version

    async def _check(self, loop: QueryLoop) -> AcceptanceReport | None:
        """Run the checks; None if the task was cancelled or ran out of time meanwhile."""
        return await self._finishing(loop, self._check_in_time(loop))

    async def _check_in_time(self, loop: QueryLoop) -> AcceptanceReport | None:
        # The task's wall-clock limit covers its checks too (each also has its own timeout).
        try:
            async with asyncio.timeout_at(loop.event_loop_deadline()) as scope:
                return await run_acceptance(
                    self.acceptance,
                    self.tool_context.workspace,
                    self.events,
                    sandbox=self.tool_context.sandbox,
                    spill_dir=self.tool_context.data_dir / "spill",
                    snapshot=lambda _workspace: self.snapshot_now(),
                    approve=self.approve_unconfined_check,
                )
        except TimeoutError:
            if not scope.expired():
                raise
            loop.stopped = Finished(
                TerminalReason.TIMEOUT,
                f"the task's time limit of {self.budget.timeout_s}s ran out while the "
                "acceptance checks ran",
            )
            return None

    @staticmethod
    async def _finishing(loop: QueryLoop, work: Awaitable[T]) -> T | None:
        """Await a step outside the loop (checks, snapshots). A cancel meanwhile marks the task
        aborted and gives None, instead of escaping run_task before the task is recorded."""
        try:
            return await work
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            if loop.stopped is None:
                loop.stopped = Finished(
                    TerminalReason.ABORTED, "cancelled while the task was finishing"
                )
            return None


class _AfterPending:
    """A ModelClient that hands back its first response only once `pending` is done."""

    def __init__(self, inner: ModelClient, pending: asyncio.Future[Any]) -> None:
        self.inner = inner
        self.pending = pending

    @property
    def model(self) -> str:
        return self.inner.model

    async def complete(self, request: ModelRequest, on_event: EventSink) -> ModelResponse:
        response = await self.inner.complete(request, on_event)
        # Shielded: a cancel of the task must not cancel the snapshot run_task still awaits.
        await asyncio.shield(self.pending)
        return response
