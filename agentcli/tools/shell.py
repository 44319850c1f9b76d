"""`shell`: run a bash command in the workspace root.

Each call is a fresh `bash -c` in its own process group with stdin closed, confined as its
permission decision says (`ToolContext.confinement`: the read-only or workspace-write sandbox
profile, or unconfined when yolo or a person approved running it outside); stdout and stderr
are interleaved in order and capped head+tail with the total line count; on timeout or
cancellation the whole group is killed. The exit code is
in the result; a non-zero exit is reported as an error result, except exit 1 of commands for
which 1 means "no match" or "differs" (grep, rg, diff, cmp, test).

`is_read_only_command` decides whether a command may run in parallel with other reads. It is
deliberately conservative: anything it does not fully understand is treated as a writer.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from pydantic import Field

from agentcli.confinement import LEFTOVERS_NOTE, WORKSPACE_WRITE
from agentcli.environment import without_own_credentials
from agentcli.errors import ToolError, ToolErrorKind
from agentcli.permissions.commands import is_read_only
from agentcli.permissions.shell import parse_command
from agentcli.tools.base import (
    EXCLUSIVE,
    PermissionTarget,
    Resources,
    Risk,
    Tool,
    ToolContext,
    ToolInput,
    ToolOutput,
    tree_resource,
)
from agentcli.tools.output import NOTICE_ROOM, HeadTailCollector, new_spill_path
from agentcli.tools.process_group import CommandResult, run_in_group

DEFAULT_TIMEOUT_S = 120.0
MAX_TIMEOUT_S = 600.0
HEADER_ROOM = 300

_EXIT_1_IS_NORMAL = {
    "grep": "no line matched",
    "egrep": "no line matched",
    "fgrep": "no line matched",
    "rg": "no line matched",
    "diff": "the inputs differ",
    "cmp": "the inputs differ",
    "test": "the test is false",
    "[": "the test is false",
}


class ShellInput(ToolInput):
    command: str = Field(min_length=1, description="The bash command to run.")
    timeout: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TIMEOUT_S,
        description=f"Seconds before the command is stopped (default {DEFAULT_TIMEOUT_S:g}, "
        f"max {MAX_TIMEOUT_S:g}).",
    )
    outside_sandbox: bool = Field(
        default=False,
        description="Run outside the OS sandbox. Only after the same command failed because "
        "of the sandbox and cannot work inside it; the user is asked every time, and may say "
        "no. Say why in your message.",
    )


class Shell(Tool[ShellInput]):
    name = "shell"
    description = (
        "Run a bash command in the workspace root and return its exit code and output (stdout "
        "and stderr interleaved). Each call is a fresh shell: `cd` and variables do not carry "
        "over. stdin is closed, so interactive commands fail instead of waiting. The command "
        f"is stopped after `timeout` seconds (default {DEFAULT_TIMEOUT_S:g}, max "
        f"{MAX_TIMEOUT_S:g}) together with every process it started; background processes "
        "still running when it exits are stopped too. Long output keeps its beginning and end; "
        "the middle is saved to a file the result names. A non-zero exit code is reported as "
        "an error, except exit code 1 of grep, rg, diff, cmp and test. Commands run in an OS "
        "sandbox: writes only in the workspace and $TMPDIR, no network, no access to secrets "
        "or other processes, unless the user opened more for that command. Use read_file, grep "
        "and glob rather than cat, grep or find to read and search files."
    )
    input_model = ShellInput
    risk = Risk.EXECUTE

    def permission_target(self, args: ShellInput, ctx: ToolContext) -> PermissionTarget:
        summary = args.command if len(args.command) <= 200 else f"{args.command[:200]}…"
        outside = " OUTSIDE the sandbox" if args.outside_sandbox else ""
        return PermissionTarget(
            rule_class="shell",
            subject=args.command,
            summary=f"run{outside} {summary}",
            outside_sandbox=args.outside_sandbox,
        )

    def preview(self, args: ShellInput, ctx: ToolContext) -> str:
        return f"$ {args.command}\nin {ctx.workspace}"

    def resources(self, args: ShellInput, ctx: ToolContext) -> Resources:
        if is_read_only_command(args.command):
            return Resources(reads=frozenset({tree_resource(Path("/"))}))
        return EXCLUSIVE

    async def call(self, args: ShellInput, ctx: ToolContext) -> ToolOutput:
        argv = [bash_path(ctx.workspace), "-c", args.command]
        env = without_own_credentials(os.environ)
        confinement = ctx.confinement
        if ctx.sandbox is not None:
            prepared = ctx.sandbox.prepare(argv, confinement or WORKSPACE_WRITE)
            argv, env = prepared.argv, dict(prepared.env)
        elif confinement is not None and confinement.sandboxed:
            # The decision said "sandboxed" but there is no sandbox: never run it unconfined.
            raise ToolError(
                ToolErrorKind.PERMISSION_DENIED,
                "this command may only run in the OS sandbox, which this session does not "
                "have; it did not run",
            )
        timeout = args.timeout or DEFAULT_TIMEOUT_S
        limit = max(ctx.output_cap - NOTICE_ROOM - HEADER_ROOM, 1000)
        collector = HeadTailCollector(limit, new_spill_path(ctx.data_dir, "shell"))
        result = await run_in_group(
            argv, cwd=ctx.workspace, timeout_s=timeout, collector=collector, env=env
        )
        output = result.output.text.rstrip("\n") or "(no output)"
        if result.timed_out:
            raise ToolError(
                ToolErrorKind.TIMEOUT,
                f"the command did not finish within {timeout:g} s and was stopped, together "
                "with every process it started. If it needs longer, pass a larger `timeout` "
                f"(max {MAX_TIMEOUT_S:g}); otherwise make it finish faster. Output before it "
                f"was stopped ({_size(result)}):\n{output}",
            )
        return _success(args.command, result, output, ctx)


@functools.cache
def bash_path(workspace: Path) -> str:
    """The bash on PATH that no command can have written: never one in the workspace (a
    `.venv/bin` or `node_modules/.bin` a sandboxed command filled would otherwise run the next
    command, an unconfined one too); "bash" if there is none."""
    inside = workspace.resolve()
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if not entry or not os.path.isabs(entry):  # noqa: PTH117 - a string from PATH
            continue
        candidate = Path(entry) / "bash"
        real = candidate.resolve()
        if real.is_relative_to(inside) or not os.access(real, os.X_OK):
            continue
        if real.is_file():
            return str(real)
    return "bash"


def _success(command: str, result: CommandResult, output: str, ctx: ToolContext) -> ToolOutput:
    sandboxed = ctx.sandbox is not None and (ctx.confinement is None or ctx.confinement.sandboxed)
    leftovers = result.stopped_leftovers
    if sandboxed and LEFTOVERS_NOTE in output:
        # The sandbox's PID 1 stopped them; its note becomes ours.
        output = output.replace(LEFTOVERS_NOTE + "\n", "").replace(LEFTOVERS_NOTE, "")
        output = output.rstrip("\n") or "(no output)"
        leftovers = True
    code = result.exit_code
    assert code is not None
    normal_failure = _EXIT_1_IS_NORMAL.get(_last_program(command)) if code == 1 else None
    if code < 0:
        status = f"killed by signal {-code}"
    elif normal_failure:
        status = f"exit code 1 ({normal_failure}; not an error)"
    else:
        status = f"exit code {code}"
    header = f"{status}; {result.duration_s:.2f} s; {_size(result)}"
    notes = []
    if leftovers:
        notes.append(
            "[background processes were still running when the command exited and were "
            "stopped; run a server and its client in one command if you need both]"
        )
    if result.output_held:
        notes.append(
            "[a process that left the command's process group (its own session) still holds "
            "the output open: it was not stopped, and what it writes from now on is not read]"
        )
    failed = code != 0 and not normal_failure
    # The sandbox's own notes (a planted .git removed) are explained whatever the exit code.
    own_note = "agentcli sandbox: " in result.output.text
    if (failed or own_note) and ctx.sandbox is not None and sandboxed:
        explanation = ctx.sandbox.explain_failure(
            result.output.text, code, ctx.confinement or WORKSPACE_WRITE
        )
        if explanation:
            notes.append(f"[sandbox: {explanation}]")
    text = "\n".join([header, output, *notes])
    return ToolOutput(
        text=text,
        is_error=failed,
        source={
            "command": command,
            "exit_code": code,
            "duration_s": round(result.duration_s, 3),
            "output_lines": result.output.total_lines,
            "output_bytes": result.output.total_bytes,
        },
    )


def _size(result: CommandResult) -> str:
    lines = result.output.total_lines
    return f"{lines} line{'' if lines == 1 else 's'} of output"


def _last_program(command: str) -> str:
    """The program whose exit code bash reports: the name of the last simple command."""
    parsed = parse_command(command)
    return Path(parsed.parts[-1].name).name if parsed.ok and parsed.parts else ""


def is_read_only_command(command: str) -> bool:
    """True only for commands that certainly change nothing (the permission policy's built-in
    read-only set, from the parsed command: see `agentcli.permissions.commands`)."""
    return is_read_only(command)
