"""`agentcli run`: turn the options into settings and a budget, have the session core
(`agentcli.session`) build the session, run one task, report, exit.

Every ending is reported the same way: a task's own result, or, when the run cannot start or
go on (a usage or configuration error, a broken journal, Ctrl-C before the task, a bug), a
failure (`ui.failure`) said on stderr and, in json and stream-json mode, printed as the one
result object with the failure's subtype as `terminal_reason` and its message as `error`.

Signals: the first SIGINT/SIGTERM cancels the task (model stream and tool waits stop, the history
stays valid, exit 130); a second one exits at once.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import math
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agentcli.config import flags_of, load_settings, untrusted_notice
from agentcli.conversation import ConversationManager
from agentcli.errors import UsageError
from agentcli.events import EventSink, Notice
from agentcli.model import ModelClient
from agentcli.permissions import Prompter
from agentcli.session.build import build_manager as build_session
from agentcli.session.build import locate
from agentcli.settings import Settings
from agentcli.tasks import ExitCode, TaskResult, TaskState, task_state_for
from agentcli.terminal_reason import TerminalReason
from agentcli.tools.process_group import kill_live_groups
from agentcli.ui.failure import Failure, failure_of, report
from agentcli.ui.render import StreamJson, TextProgress, print_result
from agentcli.ui.resume_arg import PICK, no_picker_here
from agentcli.ui.safe import visible
from agentcli.usage import Budget, Usage

FORMATS = ("text", "json", "stream-json")


@dataclass(kw_only=True)
class RunOptions:
    task: str | None
    model: str | None = None
    effort: str | None = None
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
    mcp_config: list[Path] = field(default_factory=list)
    """`--mcp-config FILE`: MCP servers, in `.mcp.json` format."""
    provider: str | None = None


def read_task(task: str | None) -> str:
    """The task text: the argument, or stdin for `-`/no argument; piped stdin plus an argument
    is extra context appended to the task."""
    stdin_piped = sys.stdin is not None and not sys.stdin.isatty()
    if task in (None, "-"):
        if not stdin_piped:
            raise UsageError(
                "no task given", hint='agentcli run "describe the task" (or pipe the task on stdin)'
            )
        text = read_stdin().strip()
        if not text:
            raise UsageError("the task read from stdin is empty")
        return text
    if not task.strip():
        raise UsageError("the task is empty")
    if stdin_piped:
        context = read_stdin()
        if context.strip():
            return f"{task}\n\n<stdin>\n{context.rstrip()}\n</stdin>"
    return task


def read_stdin() -> str:
    """All of stdin, which must be UTF-8 text (the model is sent text; bytes that are not
    would be mangled or lost on the way)."""
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # a text stream put in place of the real stdin
        return sys.stdin.read()
    data: bytes = buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"stdin is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})",
            hint="convert it first, e.g. `iconv -f latin1 -t utf-8`, or pass the task as an "
            "argument",
        ) from exc


def build_budget(options: RunOptions) -> Budget:
    """The limits the flags set (the core checks the price `--max-cost` needs)."""
    for name, value in (("--max-turns", options.max_turns), ("--max-tokens", options.max_tokens)):
        if value is not None and value < 1:
            raise UsageError(f"{name} must be at least 1 (got {value})")
    for name, number in (("--max-cost", options.max_cost), ("--timeout", options.timeout)):
        if number is not None and not math.isfinite(number):
            raise UsageError(f"{name} must be a finite number (got {number})")
        if number is not None and number <= 0:
            raise UsageError(f"{name} must be positive (got {number})")
    return Budget(
        max_turns=options.max_turns,
        max_tokens=options.max_tokens,
        max_cost_usd=options.max_cost,
        timeout_s=options.timeout,
    )


def event_sink(options: RunOptions) -> EventSink:
    if options.output_format == "stream-json":
        return StreamJson()
    # json keeps stdout for the one result object; progress still goes to stderr.
    return TextProgress(quiet=options.quiet)


def build_manager(
    options: RunOptions,
    events: EventSink,
    *,
    model_factory: Callable[[str], ModelClient] | None = None,
    prompter: Prompter | None = None,
) -> ConversationManager:
    """The session for `run`: the options become settings (over the environment and the
    config files) and a budget; the session core does the rest."""
    target = locate(options.cwd, resume=options.resume, continue_=options.continue_)
    settings = run_settings(options, target.workspace, events)
    budget = build_budget(options)
    return build_session(
        target,
        settings,
        events=events,
        budget=budget,
        model_factory=model_factory,
        prompter=prompter,
        say=say,
        warn=functools.partial(announce, events=events),
        mcp_config=options.mcp_config,
    )


def say(notice: str) -> None:
    """Tell the user something once, on stderr (what the session core says at the start)."""
    sys.stderr.write(f"agentcli: {visible(notice)}\n")


def run_settings(options: RunOptions, workspace: Path, events: EventSink) -> Settings:
    """The settings of this run: the options over the environment over the config files (the
    in-repo ones only as far as the workspace is trusted)."""
    settings = load_settings(
        workspace,
        flags=flags_of(
            model=options.model,
            effort=options.effort,
            permission_mode=options.permission_mode,
            allow=options.allow,
            deny=options.deny,
            accept=options.accept,
            accept_retries=options.accept_retries,
            provider=options.provider,
        ),
        trusted=True if options.trust_project else None,
    )
    announce_untrusted(settings, events)
    return settings


def announce_untrusted(settings: Settings, events: EventSink) -> None:
    """What was ignored of an untrusted workspace's config is said once (`announce`)."""
    notice = untrusted_notice(settings)
    if notice is not None:
        announce(notice, events)


def announce(notice: str, events: EventSink) -> None:
    """A warning the user must hear whatever the output format: as a Notice (stream-json,
    the REPL; text progress prints it on stderr) and on stderr wherever the Notice would not
    land there."""
    events(Notice(level="warning", message=notice))
    if isinstance(events, StreamJson) or (isinstance(events, TextProgress) and events.quiet):
        say(notice)


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
            # From here to the process's exit (the result, the loop's and the interpreter's
            # teardown) a signal ends the process at once, never as a KeyboardInterrupt
            # raised wherever the teardown happens to be.
            signal.signal(sig, _exit_at_once)
        close = getattr(manager.model, "aclose", None)
        if close is not None:
            await close()


def _exit_at_once(_signum: int, _frame: object) -> None:
    kill_live_groups()
    os._exit(ExitCode.ABORTED)


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
    """Run one task; return the process exit code. Whatever ends the run, the user is told in
    the output format asked for (an unknown format itself is a plain usage error, exit 2)."""
    if options.output_format not in FORMATS:
        raise UsageError(
            f"unknown --output-format {options.output_format!r}",
            hint="one of text, json, stream-json",
        )
    started = time.monotonic()
    manager: ConversationManager | None = None
    stream: StreamJson | None = None
    try:
        if options.resume == PICK:
            raise no_picker_here()
        prompt = read_task(options.task)
        events = event_sink(options)
        stream = events if isinstance(events, StreamJson) else None
        manager = build_manager(options, events, prompter=terminal_prompter())
        if stream is not None:
            stream.start(
                session_id=manager.session_id,
                cwd=str(manager.tool_context.workspace),
                model=manager.model.model,
                permission_mode=manager.settings.permission_mode.value,
                tools=[tool.name for tool in manager.tools],
            )
        _collect_garbage_again()
        result = asyncio.run(_run_with_signals(manager, prompt))
    except (Exception, KeyboardInterrupt) as exc:
        failure = failure_of(exc)
        session_id = "" if manager is None else manager.session_id
        duration_s = time.monotonic() - started
        return report_failure(failure, options, session_id, duration_s, stream)
    print_result(result, options.output_format, quiet=options.quiet, stream=stream)
    return int(result.exit_code)


def report_failure(
    failure: Failure,
    options: RunOptions,
    session_id: str,
    duration_s: float,
    stream: StreamJson | None = None,
) -> int:
    """Say why the run ended without a task result: on stderr, and in json and stream-json mode
    as the result object (no session or task yet: their ids are empty)."""
    code = report(failure)
    if options.output_format != "text":
        error = failure.message + (f" (hint: {failure.hint})" if failure.hint else "")
        result = TaskResult(
            session_id=session_id,
            task_id="",
            state=task_state_for(failure.reason, None),
            reason=failure.reason,
            final_text=None,
            turns=0,
            duration_s=duration_s,
            usage=Usage(),
            cost_usd=None,
            error=error,
        )
        print_result(result, options.output_format, quiet=True, stream=stream)
    return code
