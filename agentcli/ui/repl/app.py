"""The REPL: read a line, run it as a slash command or as a task, repeat.

Start-up stays light so the prompt is ready at once: before the first prompt only
prompt-toolkit, rich's console and the config are imported; the loop, the tools, rich markdown
and the Anthropic SDK load in a background thread once the prompt is on screen.

While a task runs, SIGINT (Ctrl-C) cancels that asyncio task — the model stream and running
commands stop, the loop answers every open tool call, the history stays valid — and the REPL
returns to the prompt. The terminal's echo is off meanwhile so stray keys do not garble the
output; they are discarded when the task ends, so type-ahead can never send a message by
accident.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from prompt_toolkit.application import get_app_or_none
from prompt_toolkit.input import Input
from prompt_toolkit.output import Output
from rich.console import Console
from rich.text import Text

from agentcli.errors import UsageError
from agentcli.paths import data_home, resolve_workspace
from agentcli.provider import Provider
from agentcli.session.options import SessionOptions
from agentcli.ui.repl import commands, custom
from agentcli.ui.repl.bang import take_context
from agentcli.ui.repl.call_log import ShowLatestCall, show_call
from agentcli.ui.repl.input import ReplCompleter, color_depth, make_session, open_history
from agentcli.ui.repl.opening import open_first
from agentcli.ui.repl.preload import Preloader
from agentcli.ui.repl.status import Status
from agentcli.ui.repl.terminal import quiet_terminal, signal_handler
from agentcli.ui.repl.welcome import has_api_key
from agentcli.ui.term.safe import visible

if TYPE_CHECKING:
    from agentcli.events import EventSink
    from agentcli.owngit import RepoDecision
    from agentcli.permissions import Prompter
    from agentcli.session.live import LiveSession
    from agentcli.skills.catalog import Catalog
    from agentcli.tasks import TaskResult
    from agentcli.ui.repl.stream import TaskView

    SessionBuilder = Callable[[SessionOptions, EventSink, Prompter], LiveSession]

T = TypeVar("T")
HISTORY_FILE = "repl_history"
ERROR_LOG = "repl-errors.log"
FORCE_QUIT_PRESSES = 3


class Repl:
    def __init__(
        self,
        options: SessionOptions,
        *,
        console: Console,
        input: Input | None = None,
        output: Output | None = None,
        preloader: Preloader | None = None,
        build: SessionBuilder | None = None,
    ) -> None:
        self.options = options
        """What the REPL was started with; `/model`, `/mode`, `/effort` and `/accept` change
        it for the sessions started later (`/clear`)."""
        self._build = build
        self.console = console
        self.workspace = resolve_workspace(options.cwd)
        # Shown until the session exists; then the session's own settings are shown. A broken
        # config file or option is a usage error now, before the first prompt.
        resolved = options.resolve(self.workspace)
        self.status = Status(model=resolved.model, mode=resolved.permission_mode.value)
        self.transport = resolved.api.transport
        self.needs_anthropic_key = resolved.provider is Provider.ANTHROPIC  # else checked later
        self.exiting = False
        self.preloader = preloader or Preloader(then=self._warm_up)
        self.io: dict[str, Any] = {"input": input, "output": output}
        self._live: LiveSession | None = None
        self._view: TaskView | None = None
        self._task: asyncio.Task[Any] | None = None
        self.last_result: TaskResult | None = None
        self.shell_notes: list[str] = []
        self._draft = ""
        self._sigints = 0
        self._found: Catalog | None = None
        """The skills and commands found before a session exists (for completion)."""
        self.session = make_session(
            history=open_history(data_home() / HISTORY_FILE),
            completer=ReplCompleter(
                {name: c.help for name, c in commands.COMMANDS.items()},
                self.workspace,
                commands.argument_choices,
                custom=lambda: custom.completions(self.custom_catalog()),
            ),
            toolbar=self._toolbar,
            depth=color_depth(console.color_system),
            input=input,
            output=output,
            toggle_todos=self._toggle_todos,
        )
        self.session.app.after_render += self._first_render

    # -- small helpers the commands use ----------------------------------------------------
    def say(self, message: str) -> None:
        self.console.print(Text(f"  {visible(message)}", style="cyan"))

    def error(self, message: str) -> None:
        self.console.print(Text(f"  {visible(message)}", style="red"))

    def usage_error(self, exc: UsageError) -> None:
        self.error(f"error: {exc.message}" + (f" ({exc.hint})" if exc.hint else ""))

    def new_session(self) -> None:
        """Start a new session (`/clear`); UsageError (this one stays) if it cannot be."""
        if self._live is not None:
            self._live.clear()
        else:
            self.options.resume, self.options.continue_ = None, False
        self.last_result = None
        self.status.reset_session()

    def set_model(self, name: str) -> None:
        self.options.model = name
        self.status.model = name
        if self._live is not None:
            self._live.switch_model(name)

    def set_mode(self, mode: str) -> None:
        """Switch the permission mode now; raises UsageError for a broken config."""
        self.options.permission_mode = mode
        self.status.mode = mode
        if self._live is not None:
            from agentcli.permissions import PermissionMode

            for notice in self._live.switch_mode(PermissionMode(mode)):
                self.console.print(Text(f"  {visible(notice)}", style="yellow"))

    @property
    def view(self) -> TaskView | None:
        return self._view

    @property
    def session_id(self) -> str | None:
        return self._live.session_id if self._live is not None else None

    @property
    def git(self) -> RepoDecision | None:
        """The session's decision whether the workspace is a git repository (None before a
        session exists: then whoever needs one decides for itself, once)."""
        return self._live.git if self._live is not None else None

    async def switch_session(self, session_id: str) -> LiveSession | None:
        """Continue the recorded session `session_id` (recovered first) in place of the current
        one; the model and permission mode stay what they are now. None after saying why not."""
        live = await self.session_or_none()
        if live is None:
            return None
        try:
            live.resume(session_id, self._view)
        except UsageError as exc:
            self.usage_error(exc)
            return None
        await live.begin()
        self.last_result = None
        self.status.reset_session(live.totals())
        self._show_todos(live)
        return live

    def _show_todos(self, live: LiveSession) -> None:
        """The todo list a resumed session left (shown above the prompt)."""
        self.status.todos = [item.to_json() for item in live.todos]

    def custom_catalog(self) -> Catalog:
        if self._live is not None:
            return self._live.skills
        if self._found is None:
            from agentcli.skills.catalog import discover

            self._found = discover(self.workspace, trusted=False)
        return self._found

    async def session_or_none(self) -> LiveSession | None:
        """The current session, opened on first use; None (after saying why) if it cannot be."""
        if self._live is None:
            try:
                self._live = await self._open_session()
            except UsageError as exc:
                self.usage_error(exc)
                return None
        return self._live

    async def view_now(self) -> TaskView:
        """The live view tasks and `!command`s draw on, made on first use (no session needed)."""
        if self._view is None:
            stream = await self.preloader.load("agentcli.ui.repl.stream")
            self._view = stream.TaskView(
                self.console, self.status, self.workspace, watch_escape=self.io["input"] is None
            )
        return self._view

    @property
    def data_dir(self) -> Path:
        """Where the REPL's spill files go: the session's data dir, or before a session exists
        (a `!command` needs none) the user shell's own."""
        return self._live.data_dir if self._live is not None else data_home() / "user-shell"

    async def _open_session(self) -> LiveSession:
        backend = await self.preloader.load("agentcli.ui.repl.backend")
        prompter_module = await self.preloader.load("agentcli.ui.term.prompter")
        view = await self.view_now()
        prompter = prompter_module.TerminalPrompter(
            self.console, suspend=view.paused, previewed=view.previewed, **self.io
        )
        build = self._build or backend.open_repl_session
        live = build(self.options, view, prompter)
        self.status.reset_session(live.totals())  # a resumed session's tasks count too
        self.status.model = live.model
        self.needs_anthropic_key = live.settings.provider is Provider.ANTHROPIC  # resumed
        self.status.mode = live.mode.value
        await live.begin()
        self._show_todos(live)
        for notice in custom.clashes(live.skills, commands.COMMANDS):
            self.say(notice)
        return live

    # -- the loop --------------------------------------------------------------------------
    def _first_render(self, _app: object) -> None:
        self.session.app.after_render -= self._first_render
        self.preloader.start()

    def _warm_up(self) -> None:
        """In the preload thread: make the model client, and find the skills and commands
        (for Tab after `/`), so neither waits for the user's first message."""
        try:
            if self._build is None and self.needs_anthropic_key:  # the real builder's client
                from agentcli.session.clients import warm_model

                warm_model(self.status.model, self.transport)
        finally:
            self.custom_catalog()

    def _toolbar(self) -> str:
        columns = self.session.app.output.get_size().columns
        todos = [visible(item, keep="")[: columns - 2] for item in self.status.checklist(idle=True)]
        return "\n ".join([*todos, self.status.line(max(20, columns - 2))])

    def _toggle_todos(self) -> None:
        self.status.show_todos = not self.status.show_todos

    async def run(self, first_task: str | None = None) -> int:
        """Run until /exit, Ctrl-D or SIGTERM (first opening the session asked for, then
        running `first_task`, as if typed). Returns the process exit code."""
        pending = [first_task] if first_task and first_task.strip() else []
        loop = asyncio.get_running_loop()
        with (
            signal_handler(loop, signal.SIGINT, self._on_sigint),
            signal_handler(loop, signal.SIGTERM, self._on_sigterm),
        ):
            try:
                if (code := await open_first(self)) is not None:
                    return code
                while not self.exiting:
                    line = pending.pop() if pending else await self._read_line()
                    if line is None:
                        break
                    await self.handle(line)
            finally:
                if self._live is not None:
                    await self._live.close("prompt_input_exit")
        return 0

    async def _read_line(self) -> str | None:
        draft, self._draft = self._draft, ""
        while True:
            try:
                return await self.session.prompt_async(default=draft, handle_sigint=False)
            except ShowLatestCall as request:  # Ctrl-O; what was typed stays typed
                draft = request.draft
                await show_call(self, "")
            except KeyboardInterrupt:
                self.console.print(Text("  (to exit, press Ctrl-D or type /exit)", style="dim"))
                return ""
            except EOFError:
                return None

    async def handle(self, line: str) -> None:
        """One line from the user: a slash command or a task."""
        if not line.strip():
            return
        parsed = commands.parse(line)
        try:
            if parsed is not None:
                await commands.dispatch(self, *parsed)
            else:
                await self.run_task(line.strip())
        except UsageError as exc:
            self.usage_error(exc)
        except Exception as exc:  # a broken command or session must not end the REPL
            self._internal_error(exc)
        self.console.print()

    async def run_task(self, prompt: str, *, command: bool = False) -> None:
        """Run `prompt` as a task (`command`: it is `/name args`, a custom command or skill)."""
        if self.needs_anthropic_key and not has_api_key():
            self.error(
                "tasks need ANTHROPIC_API_KEY, which is not set: export ANTHROPIC_API_KEY=sk-ant-… "
                "and start agentcli again (your message is in the history: press ↑)"
            )
            return
        live = await self.session_or_none()
        if live is None:
            return
        if command:
            from agentcli.skills import invocation

            invoked = invocation(live.skills, prompt)
            if invoked is None:  # found before the session, not in it
                self.error(f"no command {prompt.split()[0]} in this session (/skills lists them)")
                return
            work = live.run_command(invoked, preface=take_context(self.shell_notes))
        else:
            work = live.run_task(prompt, context=take_context(self.shell_notes))
        self.status.task_began()
        if self._view is not None:
            self._view.begin_task()
        result, cancelled = await self.run_cancellable(work)
        if cancelled:
            from agentcli.tasks import aborted_before_start

            result = aborted_before_start(live.session_id)
        if self._view is not None and self._view.escape.take_pressed():
            self._draft = prompt  # Esc: the message is back at the prompt, to edit or resend
        self.last_result = result
        from agentcli.ui.repl.verdict import policy_notices, report_task

        view = self._view
        proposed, executed = (view.proposed, view.executed) if view else (0, 0)
        report_task(self.console, self.status, result, proposed=proposed, executed=executed)
        policy_notices(self.console, live.take_notices())

    async def run_cancellable(self, work: Coroutine[Any, Any, T]) -> tuple[T | None, bool]:
        """Run `work` as a task that Ctrl-C cancels, with the live view on screen.

        Returns (its result, False), or (None, True) when it was cancelled, or (None, False)
        after reporting an internal error in one line.
        """
        view = self._view
        if view is None:
            work.close()
            return None, False
        view.start()
        self._sigints = 0
        task = asyncio.create_task(work)
        self._task = task
        try:
            with quiet_terminal(enabled=self.io["input"] is None):
                return await task, False
        except asyncio.CancelledError:
            if not task.cancelled():
                raise
            return None, True
        except UsageError as exc:  # e.g. a command's file that went away since the start
            self.usage_error(exc)
            return None, False
        except Exception as exc:
            self._internal_error(exc)
            return None, False
        finally:
            self._task = None
            view.stop()

    def _internal_error(self, exc: BaseException) -> None:
        """A bug, not a task outcome: one line for the user, the traceback in a log file."""
        from agentcli.ui.term.errorlog import log_internal_error

        log = log_internal_error(exc, ERROR_LOG)
        where = f" (details in {log})" if log is not None else ""
        self.error(f"internal error: {type(exc).__name__}: {exc}{where}")

    # -- signals ---------------------------------------------------------------------------
    def _on_sigint(self) -> None:
        task = self._task
        if task is None or task.done():
            return
        self._sigints += 1
        if self._sigints >= FORCE_QUIT_PRESSES:
            sys.stderr.write("\nagentcli: cancel did not finish; quitting\n")
            from agentcli.tools.process_group import kill_live_groups

            kill_live_groups()  # the graceful stop cancellation began is skipped
            os._exit(130)
        if self._sigints == 1:
            self.console.print(Text("  cancelling…", style="yellow"))
        else:
            self.console.print(
                Text("  still cancelling; Ctrl-C once more quits agentcli", style="yellow")
            )
        task.cancel()

    def _on_sigterm(self) -> None:
        self.exiting = True
        if self._task is not None and not self._task.done():
            self._task.cancel()
        elif (app := get_app_or_none()) is not None and app.is_running:
            app.exit(exception=EOFError())  # the prompt, or a question such as /resume's
