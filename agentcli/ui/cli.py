"""The command line, defined once: parse, build options, call the command. No logic lives here.

Every command's body imports what it runs only when it runs, so `--help` and the model-free
commands never load the SDK, the shell parser or the REPL's UI. typer itself costs ~20 ms, and
~50-100 ms more for the pydantic adapters it builds per option (measured in
`bench/bench_startup.py`); `entry.main` spares `--version` and the bare REPL even that, since
neither has anything to parse.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from agentcli import __version__
from agentcli.errors import UsageError

app = typer.Typer(
    name="agentcli",
    help="A terminal coding agent that only calls a task done when its checks pass.",
    no_args_is_help=False,
    add_completion=False,
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
        str | None, typer.Option("-m", "--model", help="REPL: model id.", show_default=False)
    ] = None,
    cwd: Annotated[
        Path | None, typer.Option("-C", "--cwd", help="REPL: workspace directory.")
    ] = None,
    permission_mode: Annotated[
        str | None, typer.Option("--permission-mode", help="REPL: permission mode.")
    ] = None,
    allow: Annotated[list[str], typer.Option("--allow", help="REPL: allow rule. Repeatable.")] = [],  # noqa: B006
    deny: Annotated[list[str], typer.Option("--deny", help="REPL: deny rule. Repeatable.")] = [],  # noqa: B006
    accept: Annotated[
        list[str], typer.Option("--accept", help="REPL: acceptance check. Repeatable.")
    ] = [],  # noqa: B006
) -> None:
    """Start the interactive REPL when no command is given (options before a command are the
    REPL's)."""
    given = model or cwd or permission_mode or allow or deny or accept
    if ctx.invoked_subcommand is not None:
        if given:
            raise UsageError(
                f"options before '{ctx.invoked_subcommand}' are for the REPL",
                hint=f"put them after the command: agentcli {ctx.invoked_subcommand} [OPTIONS]",
            )
        return
    from agentcli.ui.repl.main import main as repl_main
    from agentcli.ui.repl.settings import ReplSettings

    settings = ReplSettings(
        cwd=cwd,
        model=model,
        permission_mode=permission_mode,
        allow=list(allow),
        deny=list(deny),
        accept=list(accept),
    )
    raise typer.Exit(repl_main(settings))


@app.command()
def run(
    task: Annotated[
        str | None,
        typer.Argument(help="The task. '-' or absent with piped stdin reads it from stdin."),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option("-m", "--model", envvar="AGENTCLI_MODEL", help="Model id."),
    ] = None,
    cwd: Annotated[
        Path | None,
        typer.Option("-C", "--cwd", help="Workspace directory (default: current)."),
    ] = None,
    permission_mode: Annotated[
        str | None,
        typer.Option("--permission-mode", help="default, accept-edits, read-only, auto or yolo."),
    ] = None,
    allow: Annotated[
        list[str], typer.Option("--allow", help="Allow rule, e.g. 'shell(pytest *)'. Repeatable.")
    ] = [],  # noqa: B006
    deny: Annotated[list[str], typer.Option("--deny", help="Deny rule. Repeatable.")] = [],  # noqa: B006
    max_turns: Annotated[
        int | None,
        typer.Option("--max-turns", help="Model calls allowed."),
    ] = None,
    max_cost: Annotated[
        float | None,
        typer.Option("--max-cost", help="Cost budget in USD."),
    ] = None,
    max_tokens: Annotated[
        int | None,
        typer.Option("--max-tokens", help="Cumulative token budget."),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", help="Wall-clock limit in seconds."),
    ] = None,
    accept: Annotated[
        list[str],
        typer.Option("--accept", help="Acceptance check command ('tests' to detect). Repeatable."),
    ] = [],  # noqa: B006
    accept_retries: Annotated[
        int | None,
        typer.Option("--accept-retries", help="Repair rounds after a failed check (default 3)."),
    ] = None,
    resume: Annotated[
        str | None,
        typer.Option("--resume", help="Resume session ID."),
    ] = None,
    continue_: Annotated[
        bool, typer.Option("--continue", help="Continue the latest session in this workspace.")
    ] = False,
    output_format: Annotated[
        str, typer.Option("--output-format", help="text, json or stream-json.")
    ] = "text",
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="No progress on stderr.")] = False,
    trust_project: Annotated[
        bool,
        typer.Option(
            "--trust-project", help="Apply this workspace's .agentcli config for this run only."
        ),
    ] = False,
) -> None:
    """Run one task, then exit."""
    from agentcli.ui.run import RunOptions, run_command

    raise typer.Exit(
        run_command(
            RunOptions(
                task=task,
                model=model,
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
            )
        )
    )


sessions_app = typer.Typer(
    help="List, show and export recorded sessions.", no_args_is_help=True, add_completion=False
)
app.add_typer(sessions_app, name="sessions")

_CwdOption = Annotated[
    Path | None, typer.Option("-C", "--cwd", help="Workspace directory (default: current).")
]


@sessions_app.command("list")
def sessions_list(
    cwd: _CwdOption = None,
    all_: Annotated[bool, typer.Option("--all", help="Sessions of every workspace.")] = False,
) -> None:
    """List this workspace's sessions, newest first."""
    from agentcli.ui import sessions

    raise typer.Exit(sessions.sessions_list(cwd, all_))


@sessions_app.command("show")
def sessions_show(
    session_id: Annotated[str, typer.Argument(help="Session id (or prefix).")],
) -> None:
    """Show a session's conversation and each tool call's status."""
    from agentcli.ui import sessions

    raise typer.Exit(sessions.sessions_show(session_id))


@sessions_app.command("export")
def sessions_export(
    session_id: Annotated[str, typer.Argument(help="Session id (or prefix).")],
) -> None:
    """Print a session as JSON: messages, tasks and tool calls."""
    from agentcli.ui import sessions

    raise typer.Exit(sessions.sessions_export(session_id))


@app.command()
def undo(
    task: Annotated[str | None, typer.Option("--task", help="Task id (default: the last).")] = None,
    cwd: _CwdOption = None,
) -> None:
    """Revert the file changes of the last (or given) task."""
    from agentcli.ui import sessions

    raise typer.Exit(sessions.undo_command(cwd, task))


@app.command()
def doctor(cwd: _CwdOption = None) -> None:
    """Check the setup: model config, API key, git, ripgrep and the OS sandbox."""
    from agentcli.ui.doctor import doctor_command

    raise typer.Exit(doctor_command(cwd))


@app.command()
def trust(
    path: Annotated[
        Path | None, typer.Argument(help="Workspace directory (default: current).")
    ] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the trusted workspaces.")] = False,
    revoke: Annotated[bool, typer.Option("--revoke", help="Stop trusting it.")] = False,
) -> None:
    """Trust a workspace: let its own .agentcli config allow things and set the mode."""
    from agentcli.ui.trust_command import trust_command

    raise typer.Exit(trust_command(path, list_=list_, revoke=revoke))


def run_app(args: list[str]) -> int:
    """Run the CLI; UsageError becomes a one-line message and exit code 2."""

    def call() -> int:
        try:
            app(args=args, prog_name="agentcli", standalone_mode=True)
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
