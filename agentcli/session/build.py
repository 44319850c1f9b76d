"""The composition root: from `Settings` (resolved once by the UI from flags, environment and
config files) and what was asked for (a new session or which one to resume, the budget) to a
ConversationManager ready for tasks. `agentcli run` and the REPL both build theirs here.

Everything that can reject the invocation (a busy session, a bad budget, an unknown price, a
broken acceptance command, no API key) is checked before a session is created or recovered; the
model client (the HTTP library, or the SDK: ~2 s to import) is made only when the first request
goes out, after the session and the task's prompt are journaled.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentcli.acceptance import AcceptanceSettings, resolve_commands
from agentcli.agents import AgentTool
from agentcli.agents import discover as discover_agents
from agentcli.catalogue import ModelSpec, choice_notices
from agentcli.context import ContextSettings, ContextView
from agentcli.context.compaction import CompactionSettings
from agentcli.context.keeper import LongSession
from agentcli.convergence import ConvergenceSettings
from agentcli.conversation import ConversationManager
from agentcli.errors import UsageError
from agentcli.events import EventSink, Notice
from agentcli.hooks import HookEngine, NotifyingPrompter, SessionFacts, session_hooks
from agentcli.hooks.compaction import CompactionHooks
from agentcli.instructions import Instructions, load_instructions, system_prompt
from agentcli.loop import LoopSettings
from agentcli.mcp.config import configured_servers
from agentcli.mcp.session import problem_reporter, start_servers
from agentcli.model import ModelClient
from agentcli.model.retry import RetryingModel, RetryPolicy
from agentcli.owngit import RepoDecision, decide
from agentcli.paths import data_home, resolve_workspace
from agentcli.permissions import NonInteractivePrompter, Prompter
from agentcli.permissions.setup import SessionPermissions, build_permissions
from agentcli.provider import Provider
from agentcli.session.clients import ModelFactory, provider_factory
from agentcli.session.live import LiveSession, SessionParts
from agentcli.session.openai_model import openai_notices, recorded_base_url, session_base_url
from agentcli.session.opening import OpenedSession, find_resumed, open_session
from agentcli.session.options import SessionOptions
from agentcli.session.records import messages_so_far
from agentcli.session.skills import (
    SessionSkills,
    session_skills,
    with_skill_dirs,
    with_skills,
)
from agentcli.settings import Settings
from agentcli.skills.pinned import skill_pins
from agentcli.store.db import connect
from agentcli.store.lock import SessionLock
from agentcli.store.queries import SessionRow
from agentcli.todo import TodoBoard
from agentcli.tools.base import Tool, ToolContext
from agentcli.tools.builtin import builtin_tools
from agentcli.tools.todo_write import TodoWrite
from agentcli.usage import Budget


@dataclass(frozen=True, kw_only=True)
class SessionTarget:
    """Where the session runs, and the recorded session it continues (None: a new one)."""

    workspace: Path
    resumed: SessionRow | None = None


def locate(
    cwd: Path | None, *, resume: str | None = None, continue_: bool = False
) -> SessionTarget:
    """The session `--resume ID` / `--continue` name, and its workspace: `-C` if given, else
    the resumed session's, else the current directory."""
    resumed = find_resumed(resume, continue_, resolve_workspace(cwd))
    workspace = resolve_workspace(cwd or (Path(resumed.workspace) if resumed else None))
    return SessionTarget(workspace=workspace, resumed=resumed)


def session_provider(target: SessionTarget, settings: Settings) -> Settings:
    """A resumed session keeps the provider it recorded unless a flag or the environment names
    one (as it keeps its model)."""
    recorded = target.resumed.settings.get("provider") if target.resumed is not None else None
    origin = settings.origin("provider")
    if recorded not in tuple(Provider) or (origin is not None and origin.path is None):
        return settings
    return settings.with_provider(Provider(recorded))


def session_model(target: SessionTarget, settings: Settings) -> str:
    """A resumed session keeps its model unless a flag or the environment names one. An alias
    (`opus`) becomes the id of the model it names."""
    origin = settings.origin("model")
    if target.resumed is not None and (origin is None or origin.path is not None):
        return target.resumed.model
    return settings.catalogue().resolve(settings.model)


def check_budget(budget: Budget, spec: ModelSpec, role: str = "model") -> None:
    if budget.max_cost_usd is not None and spec.price is None:
        raise UsageError(
            f"--max-cost cannot be enforced: the price of {role} {spec.id!r} is unknown",
            hint=f'use --max-tokens instead, or give its prices under [models."{spec.id}"]',
        )


def summarizer_name(settings: Settings, budget: Budget) -> str | None:
    """The model that writes compaction summaries when it is not the session's own
    (`[context] compact_model`); its price, like the model's, must be known for --max-cost."""
    name = settings.context.compact_model
    if name is None:
        return None
    catalogue = settings.catalogue()
    resolved = catalogue.resolve(name)
    check_budget(budget, catalogue.lookup(resolved), "compact_model")
    return resolved


def long_session(
    settings: Settings,
    workspace: Path,
    session: OpenedSession,
    summarizer: ModelClient | None,
    reread_system: Callable[[], str],
) -> tuple[LongSession, list[Tool[Any]]]:
    """Compaction and the todo list of a session, and the tools they offer the model;
    `reread_system`: the system prompt made again (the instruction files re-read)."""
    board = TodoBoard(session.todos)
    given = LongSession(
        compaction=CompactionSettings.of(settings.context),
        summarizer=summarizer,
        reread_system=reread_system,
        compacted=session.compacted,
        todos=board,
    )
    return given, [TodoWrite(board)] if settings.tools.todo else []


def open_live(
    options: SessionOptions,
    *,
    events: EventSink,
    prompter: Prompter | None = None,
    say: Callable[[str], None] = lambda _notice: None,
    announce: Callable[[Settings], None] = lambda _settings: None,
    warn: Callable[[str], None] | None = None,
    model_factory: ModelFactory | None = None,
) -> LiveSession:
    """The live session `options` ask for (`run`, the REPL): a new one, or the recorded one
    `--resume ID` / `--continue` name. `announce` hears the settings of each session it starts
    (to say what an untrusted workspace's config could not set); `say` what the user should
    hear once at the start; `warn` what they must hear whatever the output (a file of the
    workspace agentcli refused to read; default: a warning Notice event); `model_factory`
    replaces the provider's clients (tests)."""

    def build(*, resume: bool) -> SessionParts:
        target = (
            locate(options.cwd, resume=options.resume, continue_=options.continue_)
            if resume
            else locate(options.cwd)
        )
        settings = session_provider(target, options.resolve(target.workspace))
        announce(settings)
        return _build(
            target,
            settings,
            events=events,
            budget=options.budget(),
            model_factory=model_factory,
            prompter=prompter,
            say=say,
            warn=warn,
            mcp_config=options.mcp_config,
        )

    parts = build(resume=True)
    return LiveSession(
        parts.manager,
        options=options,
        models=parts.models,
        skills=parts.skills,
        renew=lambda: build(resume=False),
        start="resume" if options.resume or options.continue_ else "startup",
    )


def build_manager(
    target: SessionTarget,
    settings: Settings,
    *,
    events: EventSink,
    budget: Budget | None = None,
    model_factory: ModelFactory | None = None,
    prompter: Prompter | None = None,
    say: Callable[[str], None] = lambda _notice: None,
    warn: Callable[[str], None] | None = None,
    mcp_config: Sequence[Path] = (),
) -> ConversationManager:
    """The session for `run` and the REPL: permissions and sandbox, budget, acceptance
    checks, the model client (the provider's, `provider_factory`, unless a factory is given),
    the journal (new, or resumed and recovered) and the tools of the MCP servers configured
    (`mcp_config`: `--mcp-config` files). `say` gets what the user should hear once at the
    start (e.g. that no sandbox is available); `warn` what they must hear whatever the output
    (a file of the workspace agentcli refused to read; default: a warning Notice event)."""
    return _build(
        target,
        settings,
        events=events,
        budget=budget,
        model_factory=model_factory,
        prompter=prompter,
        say=say,
        warn=warn,
        mcp_config=mcp_config,
    ).manager


def _build(
    target: SessionTarget,
    settings: Settings,
    *,
    events: EventSink,
    budget: Budget | None,
    model_factory: ModelFactory | None,
    prompter: Prompter | None,
    say: Callable[[str], None],
    mcp_config: Sequence[Path],
    warn: Callable[[str], None] | None = None,
) -> SessionParts:
    """The manager, the factory that made its model client (a model switch uses it), and
    the skills and commands found for it."""
    workspace = target.workspace
    settings = session_provider(target, settings)
    settings, moved = session_base_url(
        settings, target.resumed.settings if target.resumed is not None else None
    )
    model_factory = model_factory or provider_factory(settings, resumed=target.resumed is not None)
    model_name = session_model(target, settings)
    catalogue = settings.catalogue()
    spec = catalogue.lookup(model_name)
    skills = session_skills(workspace, settings, spec, events)
    settings = with_skill_dirs(settings, skills)  # their scripts run in the sandbox too
    permissions = build_permissions(settings=settings, workspace=workspace)
    for notice in permissions.notices:
        say(notice)
    budget = budget or Budget()
    check_budget(budget, spec)
    compact_model = summarizer_name(settings, budget)
    acceptance = AcceptanceSettings(
        commands=resolve_commands(settings.acceptance.commands, workspace, events),
        retries=settings.acceptance.retries,
        timeout_s=settings.acceptance.timeout_s,
    )
    mcp_servers = configured_servers(settings, workspace, mcp_config)  # a broken file: refused
    # Once, before the model can write anything: is the workspace a git repository? Snapshots,
    # checkpoints and recovery all use this answer for the whole session (owngit.decision).
    git = decide(workspace)
    instructions = load_instructions(workspace)
    model, session = open_with_model(
        target.resumed,
        model_factory,
        model_name,
        workspace=workspace,
        settings={
            "permission_mode": settings.permission_mode.value,
            "provider": settings.provider.value,
            **recorded_base_url(settings),
            "allow": settings.flag_rules("allow"),
            "deny": settings.flag_rules("deny"),
        },
        events=events,
        git=git,
    )
    notices = (
        openai_notices(spec, settings.effort)
        if settings.provider is Provider.OPENAI
        else choice_notices(spec, settings.effort, catalogue)
    )
    for notice in [*([moved] if moved else []), *notices]:
        events(Notice(level="warning", message=notice))
    for notice in instructions.skipped:
        (warn or (lambda n: events(Notice(level="warning", message=n))))(notice)
    # Only for a session that will run: a refused one (busy, no API key) starts no program.
    mcp = start_servers(mcp_servers, workspace, report=problem_reporter(events, say), say=say)
    hooks = session_hooks(
        settings, workspace, events=events, sandbox_problem=_hooks_sandbox_problem(permissions)
    )
    for notice in hooks.catalog.notices():
        say(notice)
    if prompter is not None:  # a person is asked: Notification hooks tell them
        prompter = NotifyingPrompter(prompter, hooks)
    retry_policy = RetryPolicy(
        idle_timeout_s=settings.api.idle_timeout_s,
        max_retry_after_s=settings.api.max_retry_wait_s,
    )
    summarizer = (
        RetryingModel(model_factory(compact_model), retry_policy) if compact_model else None
    )
    long, own_tools = long_session(
        settings,
        workspace,
        session,
        summarizer,
        lambda: with_skills(
            system_prompt(workspace, instructions=load_instructions(workspace)), skills
        ),
    )
    agents = _agent_tool(settings, workspace, instructions, skills, model_factory, say)
    manager = ConversationManager(
        session_id=session.session_id,
        messages=session.messages,
        model=model,
        tools=[
            *builtin_tools(),
            *own_tools,
            *([agents] if agents else []),
            *mcp.tools(),
            *skills.tools,
        ],
        tool_context=ToolContext(
            workspace=workspace,
            data_dir=data_home() / "sessions" / session.session_id,
            sandbox=permissions.sandbox,
            read_roots=skills.read_roots,
        ),
        policy=permissions.policy,
        prompter=prompter or NonInteractivePrompter(),
        journal=session.journal,
        checkpoints=session.checkpoints,
        system=with_skills(system_prompt(workspace, instructions=instructions), skills),
        instruction_files=tuple(instructions.paths),
        events=events,
        budget=budget,
        loop_settings=LoopSettings(denial_limit=permissions.denial_limit, effort=settings.effort),
        catalogue=catalogue,
        retry_policy=retry_policy,
        acceptance=acceptance,
        convergence=ConvergenceSettings(
            repeat_limit=settings.convergence.repeat_limit,
            failure_limit=settings.convergence.failure_limit,
        ),
        context=ContextView(
            ContextSettings(
                window_tokens=settings.context.window_tokens,
                elide_at=settings.context.elide_at,
                keep_recent=settings.context.keep_recent,
            )
        ),
        git=git,
        settings=settings,
        hooks=hooks,
        long_session=long,
    )
    _bind_hooks(hooks, manager)
    manager.observe_compaction(CompactionHooks(hooks))  # PreCompact; SessionStart `compact`
    manager.add_pins(lambda: skill_pins(manager.messages))  # skills used: re-sent after one
    if agents is not None:
        agents.bind(manager)
    return SessionParts(manager, model_factory, skills.catalog)


def _agent_tool(
    settings: Settings,
    workspace: Path,
    instructions: Instructions,
    skills: SessionSkills,
    models: ModelFactory,
    say: Callable[[str], None],
) -> AgentTool | None:
    """The `agent` tool with the session's subagent types (None: `[agents] max_depth = 0`);
    what was left out of their definitions is said once."""
    if settings.agents.max_depth < 1:
        return None
    catalog = discover_agents(workspace)
    for notice in catalog.notices:
        say(notice)
    return AgentTool(
        catalog=catalog,
        limits=settings.agents,
        models=models,
        system=lambda role: with_skills(
            system_prompt(workspace, instructions=instructions, role=role), skills
        ),
    )


def _hooks_sandbox_problem(permissions: SessionPermissions) -> str | None:
    """Why hooks that must run sandboxed cannot run in this session (None: they can)."""
    if permissions.sandbox is not None:
        return None
    policy = permissions.policy
    return policy.sandbox_problem or f"{policy.mode.value} mode runs nothing in the sandbox"


def _bind_hooks(hooks: HookEngine, manager: ConversationManager) -> None:
    """The hooks read the session from the manager at each event (a resume or a mode switch
    changes its id, journal, mode and sandbox)."""

    def facts() -> SessionFacts:
        return SessionFacts(
            session_id=manager.session_id,
            workspace=manager.workspace,
            data_dir=manager.tool_context.data_dir,
            mode=manager.policy.mode.value,
            model=manager.model.model,
            sandbox=manager.tool_context.sandbox,
            record=manager.journal.hook_ran,
            transcript=lambda: messages_so_far(manager.session_id),
        )

    hooks.bind(facts)


def open_with_model(
    resumed: SessionRow | None,
    model_factory: Callable[[str], ModelClient],
    model_name: str,
    *,
    workspace: Path,
    settings: dict[str, object],
    events: EventSink,
    git: RepoDecision | None = None,
) -> tuple[ModelClient, OpenedSession]:
    """The model client and the session. A session another live process uses is refused first,
    at once and before the SDK import; its lock is then held until the process exits."""
    lock = SessionLock.acquire(resumed.id) if resumed is not None else None
    try:
        connect().close()  # a journal that cannot be used is refused before the SDK import
        model = model_factory(model_name)
        session = open_session(
            resumed,
            lock=lock,
            workspace=workspace,
            model=model_name,
            settings=settings,
            events=events,
            git=git,
        )
    except BaseException:
        if lock is not None:
            lock.release()
        raise
    return model, session
