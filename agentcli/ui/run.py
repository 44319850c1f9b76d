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
import os
import signal
import sys
import time
from collections.abc import Coroutine
from typing import Any

from agentcli.config import untrusted_notice
from agentcli.errors import UsageError
from agentcli.events import EventSink, Notice
from agentcli.permissions import Prompter
from agentcli.session.build import open_live
from agentcli.session.clients import ModelFactory
from agentcli.session.live import LiveSession
from agentcli.session.options import PICK, SessionOptions
from agentcli.settings import Settings
from agentcli.skills import task_invocation
from agentcli.tasks import ExitCode, TaskResult, aborted_before_start, task_state_for
from agentcli.tools.process_group import kill_live_groups
from agentcli.ui.failure import Failure, failure_of, report
from agentcli.ui.render import StreamJson, TextProgress, print_result
from agentcli.ui.resume_arg import no_picker_here
from agentcli.ui.term.safe import visible
from agentcli.usage import Usage


def task_and_context(task: str | None) -> tuple[str, str]:
    """The task (the argument, or stdin for `-`/no argument), and the extra context piped
    stdin gives an argument, as the model is shown it (empty: none)."""
    stdin_piped = sys.stdin is not None and not sys.stdin.isatty()
    if task in (None, "-"):
        if not stdin_piped:
            raise UsageError(
                "no task given", hint='agentcli run "describe the task" (or pipe the task on stdin)'
            )
        text = read_stdin().strip()
        if not text:
            raise UsageError("the task read from stdin is empty")
        return text, ""
    if not task.strip():
        raise UsageError("the task is empty")
    if stdin_piped:
        context = read_stdin()
        if context.strip():
            return task, f"<stdin>\n{context.rstrip()}\n</stdin>"
    return task, ""


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


def event_sink(options: SessionOptions) -> EventSink:
    if options.output_format == "stream-json":
        return StreamJson()
    # json keeps stdout for the one result object; progress still goes to stderr.
    return TextProgress(quiet=options.quiet)


def open_run_session(
    options: SessionOptions,
    events: EventSink,
    *,
    model_factory: ModelFactory | None = None,
    prompter: Prompter | None = None,
) -> LiveSession:
    """The session for `run`: the options become settings (over the environment and the
    config files) and a budget; the session core does the rest."""
    return open_live(
        options,
        events=events,
        prompter=prompter,
        say=say,
        announce=lambda settings: announce_untrusted(settings, events),
        warn=functools.partial(announce, events=events),
        model_factory=model_factory,
    )


def say(notice: str) -> None:
    """Tell the user something once, on stderr (what the session core says at the start)."""
    sys.stderr.write(f"agentcli: {visible(notice)}\n")


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


def task_work(live: LiveSession, task: str, context: str) -> Coroutine[Any, Any, TaskResult]:
    """What running the task means: a custom command or skill when it starts with one
    (`/name args`: expanded by the session, the piped context after it), else the text as it
    is. UsageError for a name close to a command's (a typo)."""
    invoked = task_invocation(live.skills, task)
    if invoked is not None:
        return live.run_command(invoked, context=context)
    return live.run_task(f"{task}\n\n{context}" if context else task)


async def _run_with_signals(live: LiveSession, work: Coroutine[Any, Any, TaskResult]) -> TaskResult:
    loop = asyncio.get_running_loop()
    task = asyncio.create_task(work)
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
        return aborted_before_start(live.session_id)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
            # From here to the process's exit (the result, the loop's and the interpreter's
            # teardown) a signal ends the process at once, never as a KeyboardInterrupt
            # raised wherever the teardown happens to be.
            signal.signal(sig, _exit_at_once)
        await live.close()


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

    from agentcli.ui.term.prompter import TerminalPrompter
    from agentcli.ui.term.safe import safe_console

    return TerminalPrompter(safe_console(file=sys.stderr), output=create_output(stdout=sys.stderr))


def run_command(options: SessionOptions) -> int:
    """Run one task; return the process exit code. Whatever ends the run, the user is told in
    the output format asked for (an unknown format itself is a plain usage error, exit 2)."""
    options.check_format()
    started = time.monotonic()
    live: LiveSession | None = None
    stream: StreamJson | None = None
    try:
        if options.resume == PICK:
            raise no_picker_here()
        text, context = task_and_context(options.task)
        events = event_sink(options)
        stream = events if isinstance(events, StreamJson) else None
        live = open_run_session(options, events, prompter=terminal_prompter())
        if stream is not None:
            stream.start(
                session_id=live.session_id,
                cwd=str(live.workspace),
                model=live.model,
                permission_mode=live.mode.value,
                tools=[tool.name for tool in live.tools],
            )
        work = task_work(live, text, context)
        _collect_garbage_again()
        result = asyncio.run(_run_with_signals(live, work))
    except (Exception, KeyboardInterrupt) as exc:
        failure = failure_of(exc)
        session_id = "" if live is None else live.session_id
        duration_s = time.monotonic() - started
        return report_failure(failure, options, session_id, duration_s, stream)
    print_result(result, options.output_format, quiet=options.quiet, stream=stream)
    return int(result.exit_code)


def report_failure(
    failure: Failure,
    options: SessionOptions,
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
