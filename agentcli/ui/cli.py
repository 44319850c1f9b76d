"""The command line, defined once: parse, build options, call the command. No logic lives here.

Every command's body imports what it runs only when it runs, so `--help` and the model-free
commands never load the SDK, the shell parser or the REPL's UI. typer itself costs ~20 ms, and
~50-100 ms more for the pydantic adapters it builds per option (measured in
`bench/bench_startup.py`); `entry.main` spares `--version` and the bare REPL even that, since
neither has anything to parse.

No `from __future__ import annotations` here: typer reads every command's signature when it
builds the command line, and string annotations made it evaluate each of them twice (~13 ms of
every start); evaluated once at import, they cost nothing more there.
"""

import difflib
import functools
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

from agentcli import __version__
from agentcli.errors import UsageError
from agentcli.session.options import SessionOptions
from agentcli.ui.resume_arg import pick_when_bare


class _CoercedWhenGiven:
    """typer's coercion of one parameter, built when a value is given. typer builds a pydantic
    TypeAdapter for every parameter it processes, also for the ~40 options a `run` was not
    given, whose value (None) needs none: ~30 ms of every start. None gets what typer's own
    coercion gives it; any other value goes to the coercion typer builds, unchanged."""

    __slots__ = ()

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        if value is None:  # as typer's RuntimeParam.coerce answers None
            return () if param.multiple or param.nargs == -1 else None
        from typer._coercion import build_runtime_param

        built = build_runtime_param(param.type_descriptor)
        param._runtime_param = built
        return built.coerce(value, param=param, ctx=ctx)


def _coerce_when_given(command: Any) -> None:
    """Give every parameter of `command` and its subcommands `_CoercedWhenGiven` (where typer
    keeps a parameter's coercion as this version does; elsewhere typer's own is left)."""
    for param in command.params:
        if getattr(param, "_runtime_param", ...) is None and hasattr(param, "type_descriptor"):
            param._runtime_param = _CoercedWhenGiven()
    for sub in getattr(command, "commands", {}).values():
        _coerce_when_given(sub)


class _Commands(TyperGroup):
    """A first argument that names no command is a task (`agentcli "fix the failing test"`),
    except a single word close to a command's name, which is most likely a typo."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        _coerce_when_given(self)  # typer made the subcommands first: all of them, at once

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        first = args[0] if args else ""
        if first and not first.startswith("-") and first not in self.commands:
            shown = [name for name, command in self.commands.items() if not command.hidden]
            close = difflib.get_close_matches(first, shown, n=1, cutoff=0.75)
            if close and not any(c.isspace() for c in first):
                raise UsageError(
                    f"no command {first!r}; did you mean {close[0]!r}?",
                    hint=f"to give it to the model as a task: agentcli run {first!r}",
                )
            extra = [arg for arg in args[1:] if not arg.startswith("-")]
            if extra:  # `agentcli fix the bug`: click said "unexpected extra argument(s)"
                typo = difflib.get_close_matches(first, shown, n=1, cutoff=0.6)
                said = f"; did you mean {typo[0]!r}?" if typo else ""
                raise UsageError(
                    f"no command {first!r}{said}",
                    hint=f"a task is one argument: agentcli run {shlex.join([' '.join(args)])}",
                )
            return PROMPT, self.commands[PROMPT], args
        return super().resolve_command(ctx, args)


class _Command(TyperCommand):
    """A command whose usage line names a required argument as `ID`, as man pages and `git`
    do (typer writes `{ID}`, which reads like a placeholder for a set of choices)."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return [
            piece[1:-1] if piece.startswith("{") and piece.endswith("}") else piece
            for piece in super().collect_usage_pieces(ctx)
        ]


PROMPT = "prompt"
"""The hidden command a task given without a command goes to."""

McpConfigOption = Annotated[
    list[Path], typer.Option("--mcp-config", metavar="FILE", help="MCP servers file. Repeatable.")
]
# Options `run` and the bare `agentcli` share (without a terminal, the bare command is a run;
# in the REPL the limits apply to each task).
MaxTurnsOption = Annotated[
    int | None, typer.Option("--max-turns", metavar="N", help="Model calls allowed (per task).")
]
MaxCostOption = Annotated[
    float | None, typer.Option("--max-cost", metavar="USD", help="Cost budget in USD (per task).")
]
MaxTokensOption = Annotated[
    int | None,
    typer.Option("--max-tokens", metavar="N", help="Cumulative token budget (per task)."),
]
TimeoutOption = Annotated[
    float | None,
    typer.Option("--timeout", metavar="SECONDS", help="Wall-clock limit in seconds (per task)."),
]
AcceptRetriesOption = Annotated[
    int | None,
    typer.Option(
        "--accept-retries", metavar="N", help="Repair rounds after a failed check (default 3)."
    ),
]
OutputFormatOption = Annotated[
    str,
    typer.Option(
        "--output-format", metavar="FORMAT", help="text, json or stream-json (no terminal)."
    ),
]
QuietOption = Annotated[
    bool, typer.Option("-q", "--quiet", help="No progress on stderr (no terminal).")
]

app = typer.Typer(
    name="agentcli",
    cls=_Commands,
    help=(
        "A terminal coding agent that only calls a task done when its checks pass.\n\n"
        'agentcli starts the REPL; agentcli "TASK" starts it with a task (without a terminal, '
        "both run the task: piped stdin is the task or its context)."
    ),
    no_args_is_help=False,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"agentcli {__version__}")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def root(
    ctx: typer.Context,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
    model: Annotated[
        str | None,
        typer.Option(
            "-m", "--model", metavar="MODEL", help="REPL: model id or alias.", show_default=False
        ),
    ] = None,
    cwd: Annotated[
        Path | None, typer.Option("-C", "--cwd", metavar="DIR", help="REPL: workspace directory.")
    ] = None,
    permission_mode: Annotated[
        str | None, typer.Option("--permission-mode", metavar="MODE", help="REPL: permission mode.")
    ] = None,
    allow: Annotated[
        list[str], typer.Option("--allow", metavar="RULE", help="REPL: allow rule. Repeatable.")
    ] = [],  # noqa: B006
    deny: Annotated[
        list[str], typer.Option("--deny", metavar="RULE", help="REPL: deny rule. Repeatable.")
    ] = [],  # noqa: B006
    accept: Annotated[
        list[str],
        typer.Option("--accept", metavar="CMD", help="REPL: acceptance check. Repeatable."),
    ] = [],  # noqa: B006
    effort: Annotated[
        str | None,
        typer.Option("--effort", metavar="LEVEL", help="REPL: low, medium, high, xhigh or max."),
    ] = None,
    mcp_config: McpConfigOption = [],  # noqa: B006
    resume: Annotated[
        str | None,
        typer.Option(
            "--resume",
            metavar="[ID]",
            help="REPL: resume session ID; without ID, pick one of this workspace's sessions.",
        ),
    ] = None,
    continue_: Annotated[
        bool,
        typer.Option("--continue", help="REPL: continue the latest session in this workspace."),
    ] = False,
    provider: Annotated[
        str | None,
        typer.Option("--provider", metavar="NAME", help="REPL: anthropic or openai."),
    ] = None,
    trust_project: Annotated[
        bool,
        typer.Option("--trust-project", help="REPL: apply this workspace's config, .mcp.json."),
    ] = False,
    max_turns: MaxTurnsOption = None,
    max_cost: MaxCostOption = None,
    max_tokens: MaxTokensOption = None,
    timeout: TimeoutOption = None,
    accept_retries: AcceptRetriesOption = None,
    output_format: OutputFormatOption = "text",
    quiet: QuietOption = False,
) -> None:
    """Start the interactive REPL when no command is given: `agentcli ["TASK"]` (with stdin not
    a terminal, a run, as `agentcli run` with the same options: the task from stdin, or TASK
    with stdin as context). Options before a command are the REPL's."""
    limits = (max_turns, max_cost, max_tokens, timeout, accept_retries)
    given = any(
        (model, cwd, permission_mode, allow, deny, accept, effort, resume, continue_, provider)
    ) or bool(mcp_config or trust_project or quiet or output_format != "text")
    given = given or any(limit is not None for limit in limits)
    if ctx.invoked_subcommand == PROMPT:
        return  # the prompt command reads these options from this context
    if ctx.invoked_subcommand is not None:
        if given:
            raise UsageError(
                f"options before '{ctx.invoked_subcommand}' are for the REPL",
                hint=f"put them after the command: agentcli {ctx.invoked_subcommand} [OPTIONS]",
            )
        return
    from agentcli.ui.start import interactive_or_run

    raise typer.Exit(interactive_or_run(None, ctx.params))


@app.command(PROMPT, hidden=True)
def prompt(
    ctx: typer.Context,
    task: Annotated[str, typer.Argument(metavar="TASK", help="The task to start with.")],
) -> None:
    """`agentcli "TASK"`: the REPL starting with TASK in a terminal, else `agentcli run TASK`."""
    assert ctx.parent is not None
    from agentcli.ui.start import interactive_or_run

    raise typer.Exit(interactive_or_run(task, ctx.parent.params))


@app.command()
def run(
    task: Annotated[
        str | None,
        typer.Argument(
            metavar="TASK", help="The task. '-' or absent with piped stdin reads it from stdin."
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "-m", "--model", envvar="AGENTCLI_MODEL", metavar="MODEL", help="Model id or alias."
        ),
    ] = None,
    effort: Annotated[
        str | None,
        typer.Option(
            "--effort", metavar="LEVEL", help="Reasoning effort: low, medium, high, xhigh or max."
        ),
    ] = None,
    cwd: Annotated[
        Path | None,
        typer.Option("-C", "--cwd", metavar="DIR", help="Workspace directory (default: current)."),
    ] = None,
    permission_mode: Annotated[
        str | None,
        typer.Option(
            "--permission-mode",
            metavar="MODE",
            help="default, accept-edits, read-only, auto or yolo.",
        ),
    ] = None,
    allow: Annotated[
        list[str],
        typer.Option(
            "--allow", metavar="RULE", help="Allow rule, e.g. 'shell(pytest *)'. Repeatable."
        ),
    ] = [],  # noqa: B006
    deny: Annotated[
        list[str], typer.Option("--deny", metavar="RULE", help="Deny rule. Repeatable.")
    ] = [],  # noqa: B006
    max_turns: MaxTurnsOption = None,
    max_cost: MaxCostOption = None,
    max_tokens: MaxTokensOption = None,
    timeout: TimeoutOption = None,
    accept: Annotated[
        list[str],
        typer.Option(
            "--accept",
            metavar="CMD",
            help="Acceptance check command ('tests' to detect). Repeatable.",
        ),
    ] = [],  # noqa: B006
    accept_retries: AcceptRetriesOption = None,
    resume: Annotated[
        str | None,
        typer.Option("--resume", metavar="ID", help="Resume session ID."),
    ] = None,
    continue_: Annotated[
        bool, typer.Option("--continue", help="Continue the latest session in this workspace.")
    ] = False,
    output_format: OutputFormatOption = "text",
    quiet: QuietOption = False,
    trust_project: Annotated[
        bool,
        typer.Option("--trust-project", help="Apply this workspace's config and .mcp.json here."),
    ] = False,
    mcp_config: McpConfigOption = [],  # noqa: B006
    provider: Annotated[
        str | None,
        typer.Option("--provider", metavar="NAME", help="anthropic (default) or openai."),
    ] = None,
    branch: Annotated[
        str | None,
        typer.Option("--branch", metavar="NAME", help="Create branch NAME from HEAD first."),
    ] = None,
    commit: Annotated[
        bool | None,
        typer.Option(
            "--commit/--no-commit",
            help="Commit the task's files if it succeeds.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Run one task, then exit."""
    if permission_mode != "yolo":  # yolo runs commands unconfined: no sandbox to probe
        from agentcli.sandbox.support import start_probe

        start_probe()  # on another core while the imports below run
    from agentcli.ui.run import run_command

    options = SessionOptions(
        task=task,
        model=model,
        effort=effort,
        cwd=cwd,
        permission_mode=permission_mode,
        allow=allow,
        deny=deny,
        max_turns=max_turns,
        max_cost=max_cost,
        max_tokens=max_tokens,
        timeout=timeout,
        accept=accept,
        accept_retries=accept_retries,
        resume=resume,
        continue_=continue_,
        output_format=output_format,
        quiet=quiet,
        trust_project=trust_project,
        mcp_config=mcp_config,
        provider=provider,
        branch=branch,
        commit=commit,
    )
    raise typer.Exit(run_command(options))


@app.command()
def batch(
    tasks_file: Annotated[Path, typer.Argument(metavar="TASKS.jsonl", help="One task a line.")],
    out: Annotated[Path | None, typer.Option(metavar="DIR", help="Default: batch-<time>.")] = None,
    workers: Annotated[int, typer.Option(metavar="N", help="Tasks at once (local).")] = 4,
    engine: Annotated[str, typer.Option(metavar="ENGINE", help="local or ray.")] = "local",
    ray_address: Annotated[str | None, typer.Option(metavar="ADDR", help="Ray cluster.")] = None,
    max_cost: Annotated[float | None, typer.Option(metavar="USD", help="Batch budget.")] = None,
    model: Annotated[str | None, typer.Option("-m", "--model", metavar="MODEL")] = None,
    permission_mode: Annotated[str | None, typer.Option(metavar="MODE", help="auto.")] = None,
    accept: Annotated[list[str], typer.Option(metavar="CMD", help="For every task.")] = [],  # noqa: B006
    resume: Annotated[bool, typer.Option("--resume", help="Latest batch-* of TASKS.")] = False,
    retry_failed: Annotated[bool, typer.Option("--retry-failed", help="Failed: again.")] = False,
    skip_bad_lines: Annotated[bool, typer.Option("--skip-bad-lines", help="Run the rest.")] = False,
    cpus_per_task: Annotated[float, typer.Option(metavar="N", help="Ray: CPUs a task.")] = 1.0,
    max_requests: Annotated[int | None, typer.Option(metavar="N", help="Requests at once.")] = None,
) -> None:
    """Run many tasks, each in its own checkout: results.jsonl, preds.json, a summary."""
    options = dict(locals())  # every parameter is the BatchOptions field of the same name
    from agentcli.ui.batch_command import batch_command

    raise typer.Exit(batch_command(options))


sessions_app = typer.Typer(
    help="List, show and export recorded sessions.", no_args_is_help=True, add_completion=False
)
app.add_typer(sessions_app, name="sessions")

_CwdOption = Annotated[
    Path | None,
    typer.Option("-C", "--cwd", metavar="DIR", help="Workspace directory (default: current)."),
]


@sessions_app.command("list")
def sessions_list(
    cwd: _CwdOption = None,
    all_: Annotated[bool, typer.Option("--all", help="Sessions of every workspace.")] = False,
) -> None:
    """List this workspace's sessions, newest first."""
    from agentcli.ui import sessions

    raise typer.Exit(sessions.sessions_list(cwd, all_))


@sessions_app.command("show", cls=_Command)
def sessions_show(
    session_id: Annotated[str, typer.Argument(metavar="ID", help="Session id (or prefix).")],
) -> None:
    """Show a session's conversation and each tool call's status."""
    from agentcli.ui import sessions

    raise typer.Exit(sessions.sessions_show(session_id))


@sessions_app.command("export", cls=_Command)
def sessions_export(
    session_id: Annotated[str, typer.Argument(metavar="ID", help="Session id (or prefix).")],
) -> None:
    """Print a session as JSON: messages, tasks and tool calls."""
    from agentcli.ui import sessions

    raise typer.Exit(sessions.sessions_export(session_id))


@app.command()
def undo(
    task: Annotated[
        str | None, typer.Option("--task", metavar="ID", help="Task id (default: the last).")
    ] = None,
    cwd: _CwdOption = None,
) -> None:
    """Revert the file changes of the last (or given) task."""
    from agentcli.ui import sessions

    raise typer.Exit(sessions.undo_command(cwd, task))


@app.command()
def doctor(cwd: _CwdOption = None) -> None:
    """Check the setup: model, API key, git, ripgrep, the OS sandbox."""
    from agentcli.ui.doctor import doctor_command

    raise typer.Exit(doctor_command(cwd))


@app.command()
def trust(
    path: Annotated[
        Path | None,
        typer.Argument(metavar="PATH", help="Workspace directory (default: current)."),
    ] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the trusted workspaces.")] = False,
    revoke: Annotated[bool, typer.Option("--revoke", help="Stop trusting it.")] = False,
) -> None:
    """Trust a workspace's own .agentcli config (or --list, --revoke)."""
    from agentcli.ui.trust_command import trust_command

    raise typer.Exit(trust_command(path, list_=list_, revoke=revoke))


mcp_app = typer.Typer(help="MCP servers.", no_args_is_help=True, add_completion=False)
app.add_typer(mcp_app, name="mcp")


@mcp_app.command("list")
def mcp_list(
    cwd: _CwdOption = None,
    mcp_config: McpConfigOption = [],  # noqa: B006
    connect: Annotated[bool, typer.Option(help="Start them to show status and tools.")] = True,
) -> None:
    """List the MCP servers: where each comes from, status and tools."""
    from agentcli.ui.mcp_command import mcp_list as list_servers

    raise typer.Exit(list_servers(cwd, mcp_config, connect=connect))


hooks_app = typer.Typer(
    help="The workspace's hooks: list them, approve the repository's.",
    invoke_without_command=True,
    add_completion=False,
)
app.add_typer(hooks_app, name="hooks")


@hooks_app.callback()
def hooks_list(ctx: typer.Context, cwd: _CwdOption = None) -> None:
    """List every hook: event, matcher, command, where it comes from, whether it runs."""
    if ctx.invoked_subcommand is None:
        from agentcli.ui.hooks_command import hooks_command

        raise typer.Exit(hooks_command(cwd))


@hooks_app.command("approve")
def hooks_approve(cwd: _CwdOption = None) -> None:
    """Approve the repository's current set of hooks (their exact content)."""
    from agentcli.ui.hooks_command import hooks_command

    raise typer.Exit(hooks_command(cwd, approve=True))


skills_app = typer.Typer(
    help="Skills and custom commands.", no_args_is_help=True, add_completion=False
)
app.add_typer(skills_app, name="skills")


@skills_app.command("lint")
def skills_lint(
    path: Annotated[
        Path | None,
        typer.Argument(metavar="PATH", help="A file or directory (default: every one found)."),
    ] = None,
    cwd: _CwdOption = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="SKILL.md keys outside the agentskills spec too.")
    ] = False,
) -> None:
    """Check skill and command files: one line per problem, exit 1 if any."""
    from agentcli.ui.skills_command import lint_command

    raise typer.Exit(lint_command(cwd, path, strict=strict))


@functools.cache
def _command() -> Any:
    """The click command typer builds from `app` (~35 ms): once per process, also when the
    process runs several commands (the tests' in-process runs). Called directly rather than
    through `app(...)`, which would also install typer's excepthook: `guarded` reports every
    exception itself."""
    return typer.main.get_command(app)


def run_app(args: list[str]) -> int:
    """Run the CLI; UsageError becomes a one-line message and exit code 2."""

    def call() -> int:
        try:
            _command()(args=pick_when_bare(args), prog_name="agentcli", standalone_mode=True)
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        return 0

    return guarded(call)


def guarded(call: Callable[[], int]) -> int:
    """Run a command: whatever stops it becomes one line on stderr and its exit code
    (`ui.failure`: 2 for a usage or configuration error, 130 for Ctrl-C, 1 and a traceback in
    the error log for a bug)."""
    try:
        return call()
    except (Exception, KeyboardInterrupt) as exc:  # Ctrl-C before a command handles SIGINT
        from agentcli.ui.failure import failure_of, report

        return report(failure_of(exc))
