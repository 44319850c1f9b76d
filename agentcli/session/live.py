"""The live session: what a front end (`agentcli run`, the REPL) holds while a session lives,
and the one way it changes while it does.

Every mid-session change is a method here: switching the model, the permission mode or the
reasoning effort, granting a rule, setting the acceptance checks, continuing a recorded session
(`resume`), starting a new one (`clear`), recording settings, closing; and in the user's git
repository (`agentcli.usergit`), starting a branch and committing the last task. Nothing else
assigns the conversation's collaborators; what a caller needs to read is a read-only property.
What is added to a session (hooks, skills, subagents, compaction, batch) plugs into this API:
skills and custom commands run through `command` and `run_command`, and what their
`allowed-tools` grant lasts for one task (`grant_for_task`).

The options the session was opened with are kept and follow the changes (model, mode, effort,
checks), so the session `clear` starts is the one a fresh start with those options would be.

Hooks (`agentcli.hooks`): a session's SessionStart hooks (`startup`, `resume`, `clear`) run at
`begin`, which a front end calls once the session is open, resumed or cleared (and `run_task`
calls first, so they never miss a task); the SessionEnd hooks of a session left by `resume` or
`clear` start at once, and of the last one at `close`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentcli.acceptance import AcceptanceReport, AcceptanceSettings
from agentcli.agents import agent_tool_of
from agentcli.agents.listing import agent_lines
from agentcli.catalogue import Effort
from agentcli.compaction_record import CompactionRecord
from agentcli.context.compaction import CompactionObserver, CompactionOutcome
from agentcli.context.pins import PinSource
from agentcli.context.report import ContextReport
from agentcli.conversation import ConversationManager
from agentcli.errors import GitRefusal, UsageError
from agentcli.events import EventSink
from agentcli.hooks import HookEngine
from agentcli.hooks.listing import approved_lines, hook_lines
from agentcli.messages import Message
from agentcli.model import ModelClient
from agentcli.owngit import RepoDecision
from agentcli.paths import data_home
from agentcli.permissions import PermissionMode
from agentcli.permissions.rules import RuleKind, RulesView
from agentcli.permissions.setup import build_permissions
from agentcli.session.clients import ModelFactory
from agentcli.session.opening import find_resumed, open_session
from agentcli.session.options import SessionOptions
from agentcli.session.records import subagent_messages
from agentcli.settings import Settings
from agentcli.skills import Catalog, Invocation
from agentcli.skills.expand import expanded_pieces, joined, wrapped
from agentcli.skills.grants import TURN_SOURCE
from agentcli.skills.inject import Injected, run_shell_lines
from agentcli.skills.substitute import ShellLine
from agentcli.snapshots import SnapshotError
from agentcli.tasks import CommandOrigin, CommitOutcome, TaskResult, TaskState
from agentcli.terminal_reason import TerminalReason
from agentcli.todo import TodoList
from agentcli.tools.base import Tool
from agentcli.usage import SessionTotals, Usage

if TYPE_CHECKING:  # the user's git is imported when used: most sessions never commit
    from agentcli.usergit.branch import Switched
    from agentcli.usergit.status import RepoStatus


@dataclass(frozen=True, slots=True)
class SessionParts:
    """What the session core builds for a live session."""

    manager: ConversationManager
    models: ModelFactory
    """The factory of its model clients (a model switch uses it)."""
    skills: Catalog | None = None
    """The skills and custom commands found for it (None: none)."""


Renew = Callable[[], SessionParts]
"""Builds the parts of a new session with the options as they are now (what `clear` uses)."""


@dataclass(frozen=True, slots=True)
class CommitReport:
    """What committing the last task did (`outcome`, for the result) and what the user should
    hear about it (`notices`: hooks an untrusted workspace did not run)."""

    outcome: CommitOutcome
    notices: tuple[str, ...] = ()


class LiveSession:
    """A session in use by this process (it holds its lock until `close`)."""

    def __init__(
        self,
        manager: ConversationManager,
        *,
        options: SessionOptions,
        models: ModelFactory,
        renew: Renew | None = None,
        skills: Catalog | None = None,
        start: str = "startup",
    ) -> None:
        """`start`: how the session began, as SessionStart hooks hear it (`startup`: new;
        `resume`: a recorded one)."""
        self._manager = manager
        self._options = options
        self._models = models
        self._renew = renew
        self._skills = skills or Catalog.empty(manager.workspace)
        self._retired: list[ModelClient] = []
        self._closed = False
        self._last_task: tuple[str, TaskResult] | None = None
        """The prompt and result of the last task this process ran in the session."""
        self._start: str | None = start
        """The SessionStart still to fire (None: fired)."""
        self._started = False
        self._ending: list[Awaitable[None]] = []
        """SessionEnd hooks of sessions left behind, running."""
        self._pins: list[PinSource] = []
        self._compaction_observers: list[CompactionObserver] = []

    # -- what it is --------------------------------------------------------------------------
    @property
    def conversation(self) -> ConversationManager:
        """The conversation, to read (its collaborators change only through this object)."""
        return self._manager

    @property
    def session_id(self) -> str:
        return self._manager.session_id

    @property
    def workspace(self) -> Path:
        return self._manager.workspace

    @property
    def data_dir(self) -> Path:
        """The session's own data directory (spill files of long outputs)."""
        return self._manager.tool_context.data_dir

    @property
    def model(self) -> str:
        """The id of the model the next request goes to."""
        return self._manager.model.model

    @property
    def mode(self) -> PermissionMode:
        return self._manager.policy.mode

    @property
    def settings(self) -> Settings:
        return self._manager.settings

    @property
    def tools(self) -> Sequence[Tool[Any]]:
        return self._manager.tools

    @property
    def messages(self) -> Sequence[Message]:
        return self._manager.messages

    @property
    def acceptance(self) -> AcceptanceSettings:
        return self._manager.acceptance

    @property
    def effort(self) -> Effort | None:
        return self._manager.loop_settings.effort

    @property
    def git(self) -> RepoDecision:
        """Whether the workspace is a git repository, as the session decided at its start."""
        return self._manager.repo_decision()

    @property
    def sandbox_available(self) -> bool:
        return self._manager.policy.sandbox_available

    @property
    def sandbox_problem(self) -> str | None:
        return self._manager.policy.sandbox_problem

    def totals(self) -> SessionTotals:
        """What the session's finished tasks used and cost, from its first task on (a resumed
        session's earlier tasks included)."""
        return self._manager.journal.totals()

    @property
    def skills(self) -> Catalog:
        """The skills and custom commands found when the session started, with their state."""
        return self._skills

    def rules(self) -> RulesView:
        """The permission rules in force, read-only."""
        return self._manager.policy.rules_view()

    @property
    def todos(self) -> TodoList:
        """The todo list as `todo_write` last saved it."""
        return self._manager.todos

    @property
    def compaction(self) -> CompactionRecord | None:
        """The compaction in force in what the model is sent (None: nothing is compacted)."""
        return self._manager.context.compaction

    def context_report(self) -> ContextReport:
        """What the model is sent now, part by part, with its tokens (`/context`)."""
        return self._manager.context_report()

    def take_notices(self) -> list[str]:
        """What the permission policy wants the user to hear since the last call."""
        return self._manager.policy.take_notices()

    def hook_lines(self) -> list[str]:
        """The session's hooks, where each comes from and whether it runs (`/hooks`)."""
        hooks = self._manager.hooks
        return hook_lines(hooks.catalog) if isinstance(hooks, HookEngine) else []

    def agent_lines(self) -> list[str]:
        """The subagent types (where each is defined, its tools, model and mode), what was
        left out of their definitions, and the subagents running now (`/agents`)."""
        return agent_lines(agent_tool_of(self._manager.tools))

    def subagent_messages(self, call_id: str) -> list[Message]:
        """The history of the subagent the `agent` call `call_id` ran (its calls and what each
        returned: what the REPL shows of it in full)."""
        return subagent_messages(self.session_id, call_id)

    def approve_hooks(self) -> list[str]:
        """Approve the repository's current set of hooks (`/hooks approve`: a person typed
        it); they run from the next event on. What was approved, in lines."""
        hooks = self._manager.hooks
        if not isinstance(hooks, HookEngine):
            return ["this session has no hooks"]
        hooks.approve()
        return approved_lines(hooks.catalog)

    # -- work --------------------------------------------------------------------------------
    async def begin(self) -> None:
        """Run the hooks of what changed since the last call: the SessionEnd of the sessions
        left (waited for), then this session's SessionStart. Once per change."""
        ending, self._ending = self._ending, []
        for hooks in ending:
            await hooks
        if self._start is not None:
            source, self._start = self._start, None
            self._started = True
            await self._manager.hooks.session_started(source)

    async def run_task(self, prompt: str, *, context: str = "") -> TaskResult:
        """Run one user request to a terminal state (never raises for task-ending conditions).
        `context` goes to the model before `prompt`; the task is recorded by `prompt` alone."""
        await self.begin()
        self._last_task = None  # a task cancelled before its result leaves none to commit
        try:
            result = await self._manager.run_task(prompt, context=context)
            self._last_task = (prompt, result)
            return result
        finally:
            self._end_task_grants()  # a skill the model loaded granted them for this task

    async def run_command(
        self, invoked: Invocation, *, preface: str = "", context: str = ""
    ) -> TaskResult:
        """Run a custom command or skill as one task: its `allowed-tools` granted for the task,
        its shell lines run before anything is sent (a denied one stops it: the result says
        which, and the rule that would allow it), then its text as the task's prompt (between
        `preface` and `context`), with its `model` and `effort` for this task. UsageError when
        its file cannot be read now."""
        await self.begin()
        self._last_task = None
        started = time.monotonic()
        definition = invoked.definition
        pieces = expanded_pieces(invoked, self.workspace)
        self.grant_for_task(definition.grants)
        try:
            injected = Injected()
            if any(isinstance(piece, ShellLine) for piece in pieces):
                runtime = self._manager.tool_runtime()
                injected = await run_shell_lines(pieces, runtime, definition.name)
            if injected.denied is not None:
                return self._not_started(injected, time.monotonic() - started)
            text = wrapped(definition, joined(pieces, injected.outputs)).strip()
            origin = CommandOrigin(
                name=f"/{definition.name}", arguments=invoked.arguments, path=str(definition.path)
            )
            with self._for_this_task(definition.front.model, definition.front.effort):
                prompt = "\n\n".join(part for part in (preface, text, context) if part)
                result = await self._manager.run_task(prompt, command=origin)
            result.tool_calls[:0] = [record.summary() for record in injected.records]
            # Its commit's subject, when the model gives none, is the command as typed.
            self._last_task = (f"{origin.name} {origin.arguments}".strip(), result)
            return result
        finally:
            self._end_task_grants()

    async def run_checks(self, events: EventSink | None = None) -> AcceptanceReport:
        """Run the acceptance checks now, on the workspace as it is (the REPL's /check)."""
        return await self._manager.run_checks(events)

    # -- the user's git repository -----------------------------------------------------------
    @property
    def trusted(self) -> bool:
        """Whether the user trusts the workspace (its own git hooks run only then)."""
        return self._manager.settings.provenance.trusted

    @property
    def last_task(self) -> TaskResult | None:
        """The result of the last task this process ran in the session (None: none yet, or
        it was cancelled before it had one)."""
        return None if self._last_task is None else self._last_task[1]

    def start_branch(self, name: str) -> Switched:
        """Create branch `name` from HEAD and switch to it (GitRefusal if refused: not a
        repository, the branch exists, a merge in progress…)."""
        from agentcli.usergit.branch import create_branch

        return create_branch(self.workspace, name, trusted=self.trusted)

    def check_committable(self, *, branching: bool = False) -> None:
        """GitRefusal now if a task could not be committed (before a run asked to commit it);
        `branching`: a branch is started first, so a detached HEAD is no reason."""
        from agentcli.usergit.commit import check_committable

        check_committable(self.workspace, detached_ok=branching)

    async def commit_last_task(
        self, message: str | None = None, *, unverified: bool = False
    ) -> CommitReport:
        """Commit exactly the files the last task changed, with its summary (or `message`), the
        evidence of its checks and its ids in the message. A task that did not succeed is not
        committed unless `unverified` (the user confirmed it); a refusal of git's after a
        success is a failed commit (the run's exit code says so)."""
        from agentcli.usergit.commit import NothingToCommit, commit_files
        from agentcli.usergit.message import parts_for_task, unverified_reason

        if self._last_task is None:
            raise UsageError("no task of this session to commit yet", hint="run a task first")
        prompt, result = self._last_task
        if result.state is not TaskState.SUCCEEDED and not unverified:
            why = unverified_reason(result)
            return CommitReport(CommitOutcome(skipped=f"the task is not verified: {why}"))
        parts = parts_for_task(result, prompt, message)
        try:
            done = await asyncio.to_thread(
                commit_files, self.workspace, result.changed_files, parts, trusted=self.trusted
            )
        except GitRefusal as exc:
            hint = f" ({exc.hint})" if exc.hint else ""
            return CommitReport(CommitOutcome(skipped=exc.message + hint, failed=True))
        if isinstance(done, NothingToCommit):
            return CommitReport(CommitOutcome(skipped=done.reason))
        return CommitReport(CommitOutcome(sha=done.sha, branch=done.branch), done.notices)

    def repo_status(self) -> RepoStatus | None:
        """The branch and the number of files that differ from HEAD, for a status line (None
        outside git; blocking: run it off the event loop)."""
        from agentcli.usergit.status import repo_status

        repo = self.git.repo
        if repo is None:
            return None
        try:
            tree = self._manager.snapshot_now().tree
        except SnapshotError:
            return None
        return None if tree is None else repo_status(repo, tree)

    async def compact(self, instructions: str | None = None) -> CompactionOutcome:
        """Compact what the model is sent now (`/compact [instructions]`): a summary replaces
        the older turns (the journal keeps them). The outcome says what its request cost."""
        return await self._manager.compact(instructions)

    # -- what other parts add to every compaction (hooks, skills) --------------------------
    def add_pins(self, source: PinSource) -> None:
        """Re-send `source`'s items verbatim after the summary of every later compaction (in
        this session and the ones `clear` starts)."""
        self._pins.append(source)
        self._manager.add_pins(source)

    def observe_compaction(self, observer: CompactionObserver) -> None:
        """Tell `observer` of every compaction: before it starts (it may block it) and after
        it is recorded (PreCompact / PostCompact)."""
        self._compaction_observers.append(observer)
        self._manager.observe_compaction(observer)

    # -- what may change ---------------------------------------------------------------------
    def switch_model(self, name: str) -> None:
        """Send the next requests to model `name` (an id; the caller resolves aliases)."""
        self._retired.append(self._manager.use_model(self._models(name)))
        self._options.model = name
        self.record_settings(model=name)

    def switch_mode(self, mode: PermissionMode) -> list[str]:
        """Switch to permission `mode`: a new policy and sandbox, built as a session started in
        that mode would build them from the session's settings (auto mode gets its OS sandbox),
        keeping the rules granted during the session. Returns what the user should hear."""
        settings = self._manager.settings.model_copy(update={"permission_mode": mode})
        permissions = build_permissions(settings=settings, workspace=self.workspace)
        now = self.rules()
        for kind in RuleKind:
            for rule in now.of(kind):
                if rule.granted:
                    permissions.policy.add_rule(kind, rule.text, rule.source)
        self._manager.use_permissions(permissions.policy, permissions.sandbox, settings)
        self._options.permission_mode = mode.value
        self.record_settings(permission_mode=mode.value)
        return permissions.notices

    def set_effort(self, effort: Effort | None) -> None:
        """Ask for `effort` from the next request on (None: the model's default)."""
        self._manager.use_effort(effort)
        self._options.effort = effort.value if effort is not None else None

    def grant_rule(self, kind: RuleKind, rule: str) -> None:
        """Add a permission rule for the rest of the session (UsageError if it is not one)."""
        self._manager.policy.add_rule(kind, rule, "session")

    def grant_for_task(self, rules: Sequence[str]) -> None:
        """Allow `rules` until the running (or next) task ends: a command's or skill's
        `allowed-tools`. Deny and ask rules, the commands that always ask and the sandbox
        still hold."""
        for rule in rules:
            self._manager.policy.add_rule(RuleKind.ALLOW, rule, TURN_SOURCE)

    def _end_task_grants(self) -> None:
        self._manager.policy.drop_rules(TURN_SOURCE)

    @contextlib.contextmanager
    def _for_this_task(self, model: str | None, effort: Effort | None) -> Iterator[None]:
        """The model and effort a command asks for, for its task (then back as they were)."""
        previous_effort = self.effort
        client = None
        if model is not None and model != "inherit":
            name = self._manager.settings.catalogue().resolve(model)
            if name != self.model:
                client = self._manager.use_model(self._models(name))
        if effort is not None:
            self._manager.use_effort(effort)
        try:
            yield
        finally:
            if client is not None:
                self._retired.append(self._manager.use_model(client))
            if effort is not None:
                self._manager.use_effort(previous_effort)

    def _not_started(self, injected: Injected, duration_s: float) -> TaskResult:
        """The result of a command stopped before its prompt was sent (a denied shell line)."""
        return TaskResult(
            session_id=self.session_id,
            task_id="",
            state=TaskState.FAILED,
            reason=TerminalReason.PERMISSION_DENIED,
            final_text=None,
            turns=0,
            duration_s=duration_s,
            usage=Usage(),
            cost_usd=0.0,
            tool_calls=[record.summary() for record in injected.records],
            permission_denials=list(injected.denials),
            error=injected.denied,
            model=self.model,
        )

    def set_acceptance(self, commands: Sequence[str]) -> None:
        """Check the next tasks with `commands` (none: they end unverified)."""
        self._manager.use_acceptance(commands)
        self._options.accept = list(commands)

    def record_settings(self, **changes: str) -> None:
        """Keep the journal's record of the session's settings true (a resume reads it)."""
        self._manager.journal.record_settings(**changes)

    def resume(self, session_id: str | None, events: EventSink | None = None) -> None:
        """Continue the recorded session `session_id` (None: the latest in the workspace) in
        place of this one: lock it, recover it, then go on from its history with the model and
        permission mode in use now. When it is busy (SessionBusyError) or broken (UsageError),
        this one stays."""
        resumed = find_resumed(session_id, session_id is None, self.workspace)
        if resumed is None:  # cannot happen: an id or --continue names one, or raises
            raise UsageError("no session to resume")
        if resumed.id == self.session_id:
            return  # already this process's session, locked and consistent
        opened = open_session(
            resumed, workspace=self.workspace, model=resumed.model, events=events, git=self.git
        )
        self._leave("resume")
        self._start = "resume"
        self._manager.release()
        self._manager.continue_session(
            session_id=opened.session_id,
            journal=opened.journal,
            checkpoints=opened.checkpoints,
            messages=opened.messages,
            data_dir=data_home() / "sessions" / opened.session_id,
            compacted=opened.compacted,
            todos=opened.todos,
        )
        self.record_settings(model=self.model, permission_mode=self.mode.value)
        self._last_task = None

    def clear(self) -> None:
        """Start a new session with an empty conversation, with the options as they are now
        (a broken config file now is a UsageError, and this session stays)."""
        if self._renew is None:
            raise UsageError("this session cannot start another")
        self._options.resume, self._options.continue_ = None, False
        parts = self._renew()
        manager = parts.manager
        self._last_task = None
        self._leave("clear")
        self._start = "clear"
        self._manager.release()
        self._retired.extend(self._clients())
        self._manager, self._models = manager, parts.models
        self._skills = parts.skills or Catalog.empty(manager.workspace)
        for source in self._pins:
            manager.add_pins(source)
        for observer in self._compaction_observers:
            manager.observe_compaction(observer)

    def _clients(self) -> list[ModelClient]:
        """The model clients of the conversation now (its model, its summarizer)."""
        summarizer = self._manager.summarizer
        return [self._manager.model, *([summarizer] if summarizer is not None else [])]

    def _leave(self, reason: str) -> None:
        """This session ends (its SessionEnd hooks start now, if it started)."""
        if self._started:
            self._ending.append(self._manager.hooks.end_session(reason))
            self._started = False

    async def close(self, reason: str = "other") -> None:
        """Let go of the session (another process may resume it now) and close the model
        clients' connections, after its SessionEnd hooks (`reason`: `other`, or
        `prompt_input_exit` when the REPL's user left). Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self._leave(reason)
        ending, self._ending = self._ending, []
        try:
            for hooks in ending:
                with contextlib.suppress(Exception):  # a hook's trouble never keeps it locked
                    await hooks
        finally:
            self._manager.release()
        for model in [*self._retired, *self._clients()]:
            with contextlib.suppress(Exception):
                await model.aclose()
        self._retired.clear()

    def close_now(self) -> None:
        """Let go of the session without closing connections (no event loop is running)."""
        if not self._closed:
            self._closed = True
            self._manager.release()
