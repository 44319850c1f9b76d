"""`agentcli run`: build the session from options, run one task, report, exit.

Signals: the first SIGINT/SIGTERM cancels the task (model stream and tool waits stop, the history
stays valid, exit 130); a second one exits at once.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agentcli.acceptance import AcceptanceSettings, resolve_commands
from agentcli.config import flags_of, load_settings, resolve_workspace, untrusted_notice
from agentcli.context import ContextSettings, ContextView
from agentcli.convergence import ConvergenceSettings
from agentcli.conversation import ConversationManager
from agentcli.errors import TerminalReason, UsageError
from agentcli.events import EventSink, Notice
from agentcli.instructions import system_prompt
from agentcli.loop import LoopSettings
from agentcli.model import ModelClient
from agentcli.owngit import RepoDecision, decide
from agentcli.paths import data_home
from agentcli.permissions import NonInteractivePrompter, Prompter
from agentcli.permissions.setup import build_permissions
from agentcli.settings import Settings
from agentcli.store.lock import SessionLock
from agentcli.store.queries import SessionRow
from agentcli.tasks import ExitCode, TaskResult, TaskState
from agentcli.tools.base import ToolContext
from agentcli.tools.builtin import builtin_tools
from agentcli.tools.process_group import kill_live_groups
from agentcli.ui.render import StreamJson, TextProgress, print_result
from agentcli.ui.safe import visible
from agentcli.ui.sessions import OpenedSession, find_resumed, open_session
from agentcli.usage import Budget, Usage, price_for


@dataclass(kw_only=True)
class RunOptions:
    task: str | None
    model: str | None = None
    cwd: Path | None = None
    permission_mode: str | None = None
    allow: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)
    max_turns: int | None = None
    max_cost: float | None = None
    max_tokens: int | None = None
    timeout: float | None = None
    accept: list[str] = field(default_factory=list)
    accept_retries: int | None = None
    resume: str | None = None
    continue_: bool = False
    output_format: str = "text"
    quiet: bool = False
    trust_project: bool = False
    """Apply the workspace's in-repo config for this run even if it is not trusted."""


def read_task(task: str | None) -> str:
    """The task text: the argument, or stdin for `-`/no argument; piped stdin plus an argument
    is extra context appended to the task."""
    stdin_piped = sys.stdin is not None and not sys.stdin.isatty()
    if task in (None, "-"):
        if not stdin_piped:
            raise UsageError(
                "no task given", hint='agentcli run "describe the task" (or pipe the task on stdin)'
            )
        text = sys.stdin.read().strip()
        if not text:
            raise UsageError("the task read from stdin is empty")
        return text
    if not task.strip():
        raise UsageError("the task is empty")
    if stdin_piped:
        context = sys.stdin.read()
        if context.strip():
            return f"{task}\n\n<stdin>\n{context.rstrip()}\n</stdin>"
    return task


def build_budget(options: RunOptions, model: str) -> Budget:
    for name, value in (("--max-turns", options.max_turns), ("--max-tokens", options.max_tokens)):
        if value is not None and value < 1:
            raise UsageError(f"{name} must be at least 1 (got {value})")
    for name, number in (("--max-cost", options.max_cost), ("--timeout", options.timeout)):
        if number is not None and number <= 0:
            raise UsageError(f"{name} must be positive (got {number})")
    if options.max_cost is not None and price_for(model) is None:
        raise UsageError(
            f"--max-cost cannot be enforced: the price of model {model!r} is unknown",
            hint="use --max-tokens instead, or a model with a known price",
        )
    return Budget(
        max_turns=options.max_turns,
        max_tokens=options.max_tokens,
        max_cost_usd=options.max_cost,
        timeout_s=options.timeout,
    )


def make_model(name: str) -> ModelClient:
    if not (os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")):
        raise UsageError(
            "ANTHROPIC_API_KEY is not set",
            hint="export ANTHROPIC_API_KEY=sk-ant-… (or set ANTHROPIC_AUTH_TOKEN)",
        )
    from agentcli.model.anthropic import AnthropicModel  # the ~2 s SDK import happens here

    return AnthropicModel(name)


def event_sink(options: RunOptions) -> EventSink:
    if options.output_format == "stream-json":
        return StreamJson()
    # json keeps stdout for the one result object; progress still goes to stderr.
    return TextProgress(quiet=options.quiet)


def build_manager(
    options: RunOptions,
    events: EventSink,
    *,
    model_factory: Callable[[str], ModelClient] = make_model,
    prompter: Prompter | None = None,
) -> ConversationManager:
    """The session for `run` (and, with a deferred model and a terminal prompter, the REPL)."""
    resumed = find_resumed(options.resume, options.continue_, resolve_workspace(options.cwd))
    workspace = resolve_workspace(options.cwd or (Path(resumed.workspace) if resumed else None))
    settings = run_settings(options, workspace, events)
    # A resumed session keeps its model unless a flag or the environment names one.
    origin = settings.origin("model")
    from_files = origin is None or origin.path is not None
    model_name = resumed.model if resumed is not None and from_files else settings.model
    permissions = build_permissions(settings=settings, workspace=workspace)
    for notice in permissions.notices:
        sys.stderr.write(f"agentcli: {visible(notice)}\n")
    budget = build_budget(options, model_name)
    # Everything that can reject the invocation runs before the SDK import and the session.
    acceptance = build_acceptance(settings, workspace, events)
    convergence = ConvergenceSettings(
        repeat_limit=settings.convergence.repeat_limit,
        failure_limit=settings.convergence.failure_limit,
    )
    context = build_context(settings)
    # Once, before the model can write anything: is the workspace a git repository? Snapshots,
    # checkpoints and recovery all use this answer for the whole session (owngit.decision).
    git = decide(workspace)
    model, session = open_with_model(
        resumed,
        model_factory,
        model_name,
        workspace=workspace,
        settings={
            "permission_mode": settings.permission_mode.value,
            "allow": options.allow,
            "deny": options.deny,
        },
        events=events,
        git=git,
    )
    return ConversationManager(
        session_id=session.session_id,
        messages=session.messages,
        model=model,
        tools=builtin_tools(),
        tool_context=ToolContext(
            workspace=workspace,
            data_dir=data_home() / "sessions" / session.session_id,
            sandbox=permissions.sandbox,
        ),
        policy=permissions.policy,
        prompter=prompter or NonInteractivePrompter(),
        journal=session.journal,
        checkpoints=session.checkpoints,
        system=system_prompt(workspace),
        events=events,
        budget=budget,
        loop_settings=LoopSettings(denial_limit=permissions.denial_limit),
        acceptance=acceptance,
        convergence=convergence,
        context=ContextView(context),
        git=git,
    )


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


def run_settings(options: RunOptions, workspace: Path, events: EventSink) -> Settings:
    """The settings of this run: the options over the environment over the config files (the
    in-repo ones only as far as the workspace is trusted). What was ignored is said once: as a
    Notice (stream-json, the REPL; text progress prints it on stderr) and on stderr wherever the
    Notice would not land there."""
    settings = load_settings(
        workspace,
        flags=flags_of(
            model=options.model,
            permission_mode=options.permission_mode,
            allow=options.allow,
            deny=options.deny,
            accept=options.accept,
            accept_retries=options.accept_retries,
        ),
        trusted=True if options.trust_project else None,
    )
    notice = untrusted_notice(settings)
    if notice is not None:
        events(Notice(level="warning", message=notice))
        if isinstance(events, StreamJson) or (isinstance(events, TextProgress) and events.quiet):
            sys.stderr.write(f"agentcli: {visible(notice)}\n")
    return settings


def build_acceptance(settings: Settings, workspace: Path, events: EventSink) -> AcceptanceSettings:
    """Criteria are set before the work: `--accept` flags, else `[acceptance] commands`."""
    config = settings.acceptance
    return AcceptanceSettings(
        commands=resolve_commands(config.commands, workspace, events),
        retries=config.retries,
        timeout_s=config.timeout_s,
    )


def build_context(settings: Settings) -> ContextSettings:
    """`[context]`: when old tool results stop being sent to the model in full."""
    config = settings.context
    return ContextSettings(
        window_tokens=config.window_tokens,
        elide_at=config.elide_at,
        keep_recent=config.keep_recent,
    )


def aborted_result(manager: ConversationManager) -> TaskResult:
    return TaskResult(
        session_id=manager.session_id,
        task_id="",
        state=TaskState.ABORTED,
        reason=TerminalReason.ABORTED,
        final_text=None,
        turns=0,
        duration_s=0.0,
        usage=Usage(),
        cost_usd=None,
        error="cancelled before the task started",
    )


async def _run_with_signals(manager: ConversationManager, prompt: str) -> TaskResult:
    loop = asyncio.get_running_loop()
    task = asyncio.create_task(manager.run_task(prompt))
    signals_seen = 0

    def on_signal() -> None:
        nonlocal signals_seen
        signals_seen += 1
        if signals_seen > 1:
            kill_live_groups()  # the graceful stop the first signal began is skipped
            os._exit(ExitCode.ABORTED)
        task.cancel()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    try:
        return await task
    except asyncio.CancelledError:
        return aborted_result(manager)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        close = getattr(manager.model, "aclose", None)
        if close is not None:
            await close()


def _collect_garbage_again() -> None:
    """The entry point builds the session with the garbage collector off; the task needs it.
    What start-up built (modules, classes, the SDK's types) lives as long as the process, so it
    is frozen out of every later collection instead of being traversed by each one."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def terminal_prompter() -> Prompter | None:
    """In a terminal, `run` asks (on stderr, so stdout keeps only the answer); without one
    (stdin or stderr not a TTY) there is no one to ask and every ask is a denial."""
    if not (sys.stdin is not None and sys.stdin.isatty() and sys.stderr.isatty()):
        return None
    from prompt_toolkit.output import create_output

    from agentcli.ui.prompter import TerminalPrompter
    from agentcli.ui.safe import safe_console

    return TerminalPrompter(safe_console(file=sys.stderr), output=create_output(stdout=sys.stderr))


def run_command(options: RunOptions) -> int:
    """Run one task; return the process exit code. UsageError propagates (exit 2)."""
    if options.output_format not in ("text", "json", "stream-json"):
        raise UsageError(
            f"unknown --output-format {options.output_format!r}",
            hint="one of text, json, stream-json",
        )
    prompt = read_task(options.task)
    events = event_sink(options)
    manager = build_manager(options, events, prompter=terminal_prompter())
    _collect_garbage_again()
    result = asyncio.run(_run_with_signals(manager, prompt))
    print_result(result, options.output_format, quiet=options.quiet)
    return int(result.exit_code)
