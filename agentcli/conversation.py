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
from dataclasses import replace
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
from agentcli.catalogue import CATALOGUE, Catalogue, Effort
from agentcli.child_loop import ChildLoop, SessionParts, build_child_loop
from agentcli.compaction_record import CompactionRecord
from agentcli.confinement import UNCONFINED, CommandSandbox
from agentcli.context import ContextView
from agentcli.context.compaction import CompactionObserver, CompactionOutcome, Turn
from agentcli.context.keeper import ContextKeeper, LongSession
from agentcli.context.pins import PinSource
from agentcli.context.report import ContextReport
from agentcli.convergence import ConvergenceGuard, ConvergenceSettings
from agentcli.events import Event, EventSink, Notice, RepairRound, TaskStarted
from agentcli.hook_seams import NO_HOOKS, SessionHooks, TaskHooks
from agentcli.ids import new_id
from agentcli.loop import LoopOutcome, LoopSettings, QueryLoop
from agentcli.loop_steps import Finished, TurnObserver
from agentcli.messages import Message
from agentcli.model import ModelClient, ModelRequest, ModelResponse
from agentcli.model.retry import RetryingModel, RetryPolicy
from agentcli.owngit import RepoDecision, decide
from agentcli.permissions import Answer, PermissionPolicy, PermissionRequest, Prompter
from agentcli.settings import DEFAULTS, Settings
from agentcli.snapshots import Snapshot, SnapshotError, changed_files, take_snapshot
from agentcli.store import Journal
from agentcli.task_hooks import prompt_blocked, prompt_message, settle
from agentcli.task_outcome import Verified, blocked_by_denials, stamped, task_result
from agentcli.task_scope import TaskScope
from agentcli.tasks import CommandOrigin, TaskResult
from agentcli.terminal_reason import TerminalReason
from agentcli.todo import TodoList
from agentcli.tools.base import Tool, ToolContext
from agentcli.tools.runtime import BeforeChange, ToolRuntime
from agentcli.tools.todo_write import TodoWrite
from agentcli.usage import Budget
from agentcli.vocabulary import Decision, PermissionTarget, Risk

T = TypeVar("T")


class ConversationManager:
    """One session's conversation and the life of each task in it. Its collaborators are its
    own: what may change while the session lives changes through the methods below (called by
    `session.live.LiveSession`, which front ends hold), never by assigning them from outside."""

    def __init__(
        self,
        *,
        model: ModelClient,
        tools: Sequence[Tool[Any]],
        tool_context: ToolContext,
        policy: PermissionPolicy,
        prompter: Prompter,
        journal: Journal,
        system: str,
        events: EventSink,
        budget: Budget | None = None,
        loop_settings: LoopSettings | None = None,
        retry_policy: RetryPolicy | None = None,
        acceptance: AcceptanceSettings | None = None,
        convergence: ConvergenceSettings | None = None,
        context: ContextView | None = None,
        session_id: str | None = None,
        messages: Sequence[Message] = (),
        git: RepoDecision | None = None,
        checkpoints: Checkpoints | None = None,
        settings: Settings = DEFAULTS,
        instruction_files: Sequence[Path] = (),
        catalogue: Catalogue = CATALOGUE,
        hooks: SessionHooks = NO_HOOKS,
        long_session: LongSession | None = None,
    ) -> None:
        """`context`: the session's elision watermark, carried over from task to task (it
        starts over by itself when the history is swapped, as by a resume). `git`: whether the
        workspace is a git repository, decided once when the session started (decided here if
        not given): snapshots and checkpoints never re-detect it. `checkpoints`: where each
        task's undo checkpoint goes (None: tasks are not undoable). `settings`: what the
        session was configured with. `instruction_files`: the AGENTS.md / CLAUDE.md files in
        the system prompt, said once at the first task. `catalogue`: the models' limits,
        prices and request rules (with the config's `[models]`). `hooks`: the session's.
        `long_session`: compaction, the todo list, and what a resumed session had of them."""
        self._model = model
        self._tools = tuple(tools)
        self._tool_context = tool_context
        self._policy = policy
        self._prompter = prompter
        self._journal = journal
        self._system = system
        self._events = events
        self._budget = budget or Budget()
        self._loop_settings = loop_settings or LoopSettings()
        self._retry_policy = retry_policy or RetryPolicy()
        self._acceptance = acceptance or AcceptanceSettings()
        self._convergence = convergence or ConvergenceSettings()
        self._context = context or ContextView()
        self._session_id = session_id or new_id()
        self._messages = list(messages)
        self._git = git
        self._checkpoints = checkpoints
        self._settings = settings
        self._instruction_files = tuple(instruction_files)
        self._catalogue = catalogue
        self._hooks = hooks
        decision = self.repo_decision()
        self._task_paths = TaskPaths(decision.workspace, decision.repo)
        """What each task's own calls changed (`agentcli.attribution`)."""
        self._instructions_told = False
        self._long = ContextKeeper(
            long_session or LongSession(),
            view=self._context,
            history=self._messages,
            record=lambda record: self._journal.compaction_recorded(record),
            events=events,
            catalogue=catalogue,
            acceptance=lambda: self._acceptance.commands,
            tools_board=next((t.board for t in self._tools if isinstance(t, TodoWrite)), None),
        )

    # -- what the session is ---------------------------------------------------------------
    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def messages(self) -> Sequence[Message]:
        """The conversation so far (read-only: tasks and resumes change it)."""
        return tuple(self._messages)

    @property
    def model(self) -> ModelClient:
        return self._model

    @property
    def tools(self) -> Sequence[Tool[Any]]:
        return self._tools

    @property
    def workspace(self) -> Path:
        return self._tool_context.workspace

    @property
    def tool_context(self) -> ToolContext:
        return self._tool_context

    @property
    def policy(self) -> PermissionPolicy:
        return self._policy

    @property
    def journal(self) -> Journal:
        return self._journal

    @property
    def settings(self) -> Settings:
        return self._settings

    @property
    def acceptance(self) -> AcceptanceSettings:
        return self._acceptance

    @property
    def convergence(self) -> ConvergenceSettings:
        return self._convergence

    @property
    def context(self) -> ContextView:
        return self._context

    @property
    def loop_settings(self) -> LoopSettings:
        return self._loop_settings

    @property
    def hooks(self) -> SessionHooks:
        return self._hooks

    @property
    def prompter(self) -> Prompter:
        return self._prompter

    @property
    def catalogue(self) -> Catalogue:
        return self._catalogue

    @property
    def budget(self) -> Budget:
        """Each task's limits (`--max-turns`, `--max-cost`, ...)."""
        return self._budget

    def emit(self, event: Event) -> None:
        """Tell the session's renderers about `event` (a subagent's, labelled)."""
        self._events(event)

    @property
    def todos(self) -> TodoList:
        """The todo list as `todo_write` last saved it."""
        return self._long.todos.items

    @property
    def summarizer(self) -> ModelClient | None:
        """The client of `[context] compact_model` (None: the session's model summarizes)."""
        return self._long.summarizer

    # -- long sessions (`agentcli.context`) ------------------------------------------------
    def add_pins(self, source: PinSource) -> None:
        """Re-send `source`'s items verbatim after the summary of every later compaction."""
        self._long.add_pins(source)

    def observe_compaction(self, observer: CompactionObserver) -> None:
        """Tell `observer` of every compaction: before it (it may block it) and after."""
        self._long.observe(observer)

    async def compact(self, instructions: str | None = None) -> CompactionOutcome:
        """Compact what the model is sent, now (`/compact`, between tasks); what its request
        cost is in the outcome, for the caller to count."""
        turn = Turn(
            model=RetryingModel(self._model, self._retry_policy),
            system=self._system,
            tools=[tool.spec() for tool in self._tools],
        )
        window = self._catalogue.lookup(self._model.model).context_window
        outcome = await self._long.compact(
            self._messages, turn, window=window, instructions=instructions
        )
        self._system = outcome.system or self._system  # the instruction files, re-read
        return outcome

    def context_report(self) -> ContextReport:
        """What the model is sent now, part by part, with estimated tokens (`/context`)."""
        return self._long.report(
            self._messages,
            window=self._catalogue.lookup(self._model.model).context_window,
            system=self._system,
            instruction_files=self._instruction_files,
            tools=[tool.spec() for tool in self._tools],
        )

    # -- what may change while it lives ----------------------------------------------------
    def use_model(self, model: ModelClient) -> ModelClient:
        """Send the next requests to `model`; returns the client it replaces (to close)."""
        old, self._model = self._model, model
        return old

    def use_permissions(
        self, policy: PermissionPolicy, sandbox: CommandSandbox | None, settings: Settings
    ) -> None:
        """Decide the next calls with `policy`, run commands in `sandbox` (a mode switch)."""
        self._policy = policy
        self._tool_context.sandbox = sandbox
        self._settings = settings

    def use_acceptance(self, commands: Sequence[str]) -> None:
        """Check the next tasks with `commands` (none: tasks end unverified)."""
        self._acceptance = replace(self._acceptance, commands=tuple(commands))

    def use_effort(self, effort: Effort | None) -> None:
        """Ask for `effort` in the next requests (None: the model's default)."""
        self._loop_settings = replace(self._loop_settings, effort=effort)

    def continue_session(
        self,
        *,
        session_id: str,
        journal: Journal,
        checkpoints: Checkpoints | None,
        messages: Sequence[Message],
        data_dir: Path,
        compacted: CompactionRecord | None = None,
        todos: TodoList = (),
    ) -> None:
        """Go on with another recorded session (a resume): its journal, checkpoints and
        history, its compaction in force and its todo list. The stale-read guard is per
        conversation: what the old one read, this one has not seen. The caller has let go of
        the old journal and checkpoints."""
        self._session_id = session_id
        self._journal = journal
        self._checkpoints = checkpoints
        self._messages = list(messages)
        self._tool_context.data_dir = data_dir
        self._tool_context.read_hashes.clear()
        self._long.resumed(self._messages, compacted, todos)

    def release(self) -> None:
        """Let go of the session (its lock, the checkpoints' connection): another process may
        resume it from now on. The manager is not used after this."""
        self._journal.release()
        if self._checkpoints is not None:
            self._checkpoints.close()

    def _tell_instructions(self) -> None:
        if self._instructions_told or not self._instruction_files:
            return
        self._instructions_told = True
        workspace = self._tool_context.workspace
        shown = [
            str(p.relative_to(workspace)) if p.is_relative_to(workspace) else str(p)
            for p in self._instruction_files
        ]
        self._events(Notice(level="info", message=f"instructions from {', '.join(shown)}"))

    def repo_decision(self) -> RepoDecision:
        if self._git is None:
            self._git = decide(self._tool_context.workspace)
        return self._git

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
        verdict = self._policy.decide(Risk.EXECUTE, target)
        if verdict.decision is not Decision.ASK:
            return verdict.decision is Decision.ALLOW
        answer = await self._prompter.ask(
            PermissionRequest(
                call_id=f"acceptance-{new_id()}",
                tool="acceptance check",
                risk=Risk.EXECUTE,
                target=target,
                suggested_rule=None,
                preview=f"$ {command}\nin {self._tool_context.workspace}",
                reason="there is no OS sandbox: the check runs the model's code unconfined",
                confinement=UNCONFINED,
            )
        )
        return answer.answer is not Answer.NO

    def new_loop(
        self,
        observers: Sequence[TurnObserver] = (),
        task_id: str | None = None,
        hooks: TaskHooks | None = None,
    ) -> QueryLoop:
        """A QueryLoop for one task, with its own runtime, counters and deadline; with the
        task's id, its calls that may change something wait for its undo checkpoint."""
        runtime = self.tool_runtime(task_id, hooks)
        loop: QueryLoop
        model = RetryingModel(self._model, self._retry_policy, deadline=lambda: loop.deadline)
        loop = QueryLoop(
            model=model,
            runtime=runtime,
            journal=self._journal,
            system=self._system,
            events=self._events,
            budget=self._budget,
            settings=self._loop_settings,
            observers=observers,
            context=self._context,
            catalogue=self._catalogue,
            compactor=self._long.compactor,
        )
        if task_id is not None:
            runtime.task = TaskScope(task_id=task_id, root_task_id=task_id, account=loop)
        return loop

    def child_loop(self, scope: TaskScope, child: ChildLoop) -> QueryLoop:
        """The loop of a subagent's child task, working for the task of `scope`
        (`agentcli.child_loop`): what is the child's own comes in `child`, the rest is the
        session's."""
        return build_child_loop(
            scope,
            child,
            SessionParts(
                tool_context=self._tool_context,
                changes=lambda task_id, seen: around_changes(
                    task_id, self._task_paths, self._checkpoints, seen=seen
                ),
                retry_policy=self._retry_policy,
                loop_settings=self._loop_settings,
                context=self._context.settings,
                catalogue=self._catalogue,
                guard=lambda: ConvergenceGuard(
                    artifact_version=self._version_or_none, settings=self._convergence
                ),
            ),
        )

    def tool_runtime(
        self, task_id: str | None = None, hooks: TaskHooks | None = None
    ) -> ToolRuntime:
        """The runtime of the model's calls in a task, and of calls made outside one (a custom
        command's shell lines run as the model's shell calls do, its PreToolUse and
        PostToolUse hooks included)."""
        return ToolRuntime(
            self._tools,
            ctx=self._tool_context,
            policy=self._policy,
            prompter=self._prompter,
            journal=self._journal,
            events=self._events,
            before_change=self._before_change(task_id),
            hooks=hooks if hooks is not None else self._hooks.for_task(),
        )

    def _before_change(self, task_id: str | None) -> BeforeChange | None:
        if task_id is None:
            return None
        return around_changes(task_id, self._task_paths, self._checkpoints)

    async def run_task(
        self, prompt: str, *, context: str = "", command: CommandOrigin | None = None
    ) -> TaskResult:
        """Run one user request (`command`: the custom command it came from) to a terminal
        state. Never raises for task-ending conditions.

        The model works until it ends its turn; then agentcli runs the acceptance checks on the
        artifact version at that moment. A failed check goes back to the model as evidence for
        another round, until the checks pass or the repair rounds run out. `context` (what the
        user's own `!command`s printed) goes to the model before the prompt; the task is
        recorded by its prompt alone, as the user typed it.
        """
        task_id = new_id()
        started = time.monotonic()
        workspace = self._tool_context.workspace
        self._events(
            TaskStarted(
                session_id=self._session_id, task_id=task_id, prompt=prompt, model=self._model.model
            )
        )
        self._journal.task_started(task_id, prompt, self._acceptance.commands, command)
        self._tell_instructions()
        self._long.task_started(task_id, prompt)
        expanded = await expand(prompt, self._tool_context, self._policy)
        for notice in expanded.notices:
            self._events(Notice(level="warning", message=notice))
        hooks = self._hooks.for_task()
        submitted = await hooks.prompt_submitted(prompt)
        if (block := submitted.block) is not None:
            result = prompt_blocked(self._session_id, task_id, self._model.model, block, started)
            self._journal.task_finished(result)
            return result
        # The start snapshot (a git tree write, or a hash of every file) is taken while the first
        # request is on its way instead of delaying it; nothing can change the workspace before
        # the first response, and the loop gets that response only once the snapshot is done.
        start_task = asyncio.create_task(self._snapshot())
        guard = ConvergenceGuard(artifact_version=self._version_or_none, settings=self._convergence)
        loop = self.new_loop(observers=[guard, hooks], task_id=task_id, hooks=hooks)
        loop.model = _AfterPending(loop.model, start_task)
        typed = f"{context}\n\n{expanded.text}" if context else expanded.text
        request = prompt_message(typed, submitted.context)
        self._journal.message_appended(request)
        try:
            outcome = await loop.run([*self._messages, request])
        finally:
            start_snapshot = await self._finishing(loop, asyncio.shield(start_task))
        verified = await self._verify(loop, outcome, hooks)
        outcome, end_snapshot = verified.outcome, verified.end_snapshot
        self._messages = outcome.messages
        self._system = loop.system  # a compaction in the task re-read the instruction files
        if end_snapshot is None:
            end_snapshot = await self._finishing(loop, self._snapshot())
        result = task_result(
            session_id=self._session_id,
            task_id=task_id,
            model=self._model.model,
            loop=loop,
            verified=verified,
            duration_s=time.monotonic() - started,
            retries=self._acceptance.retries if self._acceptance.commands else None,
        )
        result.hook_blocks = [block.to_json() for block in hooks.blocks]
        if loop.runtime.task is not None:  # what the hooks blocked of its subagents' calls
            result.hook_blocks += loop.runtime.task.hook_blocks()
        result.compactions, result.todos = self._long.task_ended()
        if end_snapshot is not None:
            result.artifact_version = end_snapshot.version
            if start_snapshot is not None:
                every = changed_files(start_snapshot, end_snapshot, workspace)
                result.changed_files = self._task_paths.own(task_id, every)
                blocked_by_denials(result)
        if self._checkpoints is not None:
            # The end snapshot is the end state the checkpoint records: nothing ran since.
            tree = end_snapshot.tree if end_snapshot is not None else None
            ended = asyncio.to_thread(self._checkpoints.task_ended, task_id, end_tree=tree)
            await self._finishing(loop, ended)
        self._journal.task_finished(result)
        return result

    async def _verify(self, loop: QueryLoop, outcome: LoopOutcome, hooks: TaskHooks) -> Verified:
        """Check what the model ended with, once the Stop hooks let it end; send failing
        evidence back for another round while rounds remain. A round in which the model changed
        nothing reuses the evidence (bound to the same artifact version) instead of running the
        same checks again, and says so."""

        async def settled(ended: LoopOutcome) -> LoopOutcome:
            return await settle(loop, ended, hooks, self._journal, self._events, self._finishing)

        verified = Verified(outcome=await settled(outcome))
        report: AcceptanceReport | None = None
        while verified.outcome.reason is TerminalReason.COMPLETED and self._acceptance.commands:
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
            if report.passed or verified.rounds >= self._acceptance.retries:
                verified.end_snapshot = report.final
                break
            verified.rounds += 1
            self._events(
                RepairRound(
                    round=verified.rounds,
                    of=self._acceptance.retries,
                    failed=[check.command for check in report.failed],
                    unchanged=unchanged,
                )
            )
            text = failure_feedback(
                report, verified.rounds, self._acceptance.retries, unchanged=unchanged
            )
            self._long.checks_failed(text)
            feedback = Message.user(text)
            self._journal.message_appended(feedback)
            verified.outcome = await settled(await loop.run([*verified.outcome.messages, feedback]))
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
            self._events(Notice(level="warning", message=f"no artifact version: {exc}"))
            return None
        if snapshot.note:
            self._events(Notice(level="warning", message=snapshot.note))
        return snapshot

    async def _version_or_none(self) -> str | None:
        """The artifact version now, for the convergence guard (after a failed call): taken in
        a worker thread, as every snapshot is."""
        try:
            snapshot = await asyncio.to_thread(self.snapshot_now)
        except SnapshotError:
            return None
        return snapshot.version

    async def run_checks(self, events: EventSink | None = None) -> AcceptanceReport:
        """Run the acceptance checks on the workspace as it is now (reporting to `events`,
        default the session's)."""
        return await run_acceptance(
            self._acceptance,
            self._tool_context.workspace,
            events or self._events,
            sandbox=self._tool_context.sandbox,
            spill_dir=self._tool_context.data_dir / "spill",
            snapshot=lambda _workspace: self.snapshot_now(),
            approve=self.approve_unconfined_check,
        )

    async def _check(self, loop: QueryLoop) -> AcceptanceReport | None:
        """Run the checks; None if the task was cancelled or ran out of time meanwhile."""
        return await self._finishing(loop, self._check_in_time(loop))

    async def _check_in_time(self, loop: QueryLoop) -> AcceptanceReport | None:
        # The task's wall-clock limit covers its checks too (each also has its own timeout).
        try:
            async with asyncio.timeout_at(loop.event_loop_deadline()) as scope:
                return await self.run_checks()
        except TimeoutError:
            if not scope.expired():
                raise
            loop.stopped = Finished(
                TerminalReason.TIMEOUT,
                f"the task's time limit of {self._budget.timeout_s}s ran out while the "
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

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def complete(self, request: ModelRequest, on_event: EventSink) -> ModelResponse:
        response = await self.inner.complete(request, on_event)
        # Shielded: a cancel of the task must not cancel the snapshot run_task still awaits.
        await asyncio.shield(self.pending)
        return response
