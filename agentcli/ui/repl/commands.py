"""Slash commands: the table the completer, `/help` and the dispatcher share.

A line is a command when its first word is `/name` (letters and dashes); anything else is a
task for the model, so a message that starts with a path such as `/etc/hosts is wrong` still
goes to the model. An unknown command says which ones exist.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text

from agentcli.catalogue import CATALOGUE, EFFORTS, Catalogue, Effort, choice_notices
from agentcli.errors import UsageError
from agentcli.ui.repl import bang, call_log, context_commands, custom, features, git_commands
from agentcli.ui.term.safe import visible

if TYPE_CHECKING:
    from agentcli.ui.repl.host import ReplHost as Repl

COMMAND_RE = re.compile(r"^/([A-Za-z0-9][A-Za-z0-9_.:-]*)(?:\s+(.*))?$", re.DOTALL)
"""`/name`: the REPL's own commands, and custom commands and skills (`/git:commit`)."""
MODES = ("default", "accept-edits", "read-only", "auto", "yolo")

Handler = Callable[["Repl", str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    usage: str
    help: str
    handler: Handler


def parse(line: str) -> tuple[str, str] | None:
    """`("/mode", "auto")` for a command line, `("!", "git status")` for a shell command the
    user runs themself, None for a task."""
    if line.lstrip().startswith("!"):
        return "!", line.lstrip()[1:].strip()
    match = COMMAND_RE.match(line.strip())
    if match is None:
        return None
    return "/" + match.group(1), (match.group(2) or "").strip()


KEYS = """\
  Enter sends · Alt-Enter, Ctrl-J or a trailing \\ adds a line
  @path completes a workspace file and attaches it to the message
  Ctrl-O or /show opens the latest tool call's full output (/calls lists them)
  Ctrl-T shows or hides the todo list
  !command runs a shell command in the workspace (unconfined: you typed it); its output
    goes to the model with your next message
  Esc or Ctrl-C cancels a running task (after Esc the message is back to edit)
  Ctrl-D or /exit quits
"""


async def _help(repl: Repl, arg: str) -> None:
    text = Text()
    for command in COMMANDS.values():
        text.append(f"  {command.usage:<25}", style="bold")
        text.append(f"{command.help}\n")
    text.append(custom.help_text(repl.custom_catalog(), COMMANDS))
    text.append("\n" + KEYS, style="dim")
    repl.console.print(text, end="")


async def _exit(repl: Repl, arg: str) -> None:
    repl.exiting = True


async def _clear(repl: Repl, arg: str) -> None:
    repl.new_session()
    repl.say("new session: the conversation starts empty")
    if repl.session_id is not None and (live := await repl.session_or_none()) is not None:
        await live.begin()  # the SessionEnd and SessionStart hooks of the change


def _catalogue(repl: Repl) -> Catalogue:
    """The catalogue with the config files' `[models]` (the built-in one if they are broken:
    that is reported when a session starts)."""
    try:
        return repl.options.resolve(repl.workspace).catalogue()
    except UsageError:
        return CATALOGUE


async def _model(repl: Repl, arg: str) -> None:
    catalogue = _catalogue(repl)
    if not arg:
        aliases = ", ".join(f"{a} = {m}" for a, m in catalogue.aliases().items())
        repl.say(f"model: {repl.status.model}  (/model NAME switches; {aliases})")
        return
    if not re.fullmatch(r"[A-Za-z0-9._:@/\[\]-]+", arg):
        repl.error(f"{arg!r} does not look like a model id")
        return
    name = catalogue.resolve(arg)
    repl.set_model(name)
    repl.say(f"model: {name}")
    for notice in choice_notices(catalogue.lookup(name), _effort_now(repl), catalogue):
        repl.say(notice)


def _effort_now(repl: Repl) -> Effort | None:
    """The effort asked for now: /effort or --effort, else the config's (None: the model's)."""
    if repl.options.effort is not None:
        return Effort(repl.options.effort)
    try:
        return repl.options.resolve(repl.workspace).effort
    except UsageError:
        return None


async def _effort(repl: Repl, arg: str) -> None:
    spec = _catalogue(repl).lookup(repl.status.model)
    if not arg:
        wanted = _effort_now(repl)
        used = spec.effort_for(wanted)
        shown = wanted or (f"{used} (the model's default)" if used else "the model's default")
        repl.say(f"effort: {shown}  (/effort {'|'.join(EFFORTS)} sets it)")
        return
    if arg not in EFFORTS:
        repl.error(f"unknown effort {arg!r}; one of {', '.join(EFFORTS)}")
        return
    level = Effort(arg)
    repl.options.effort = level.value
    if repl.session_id is not None:  # the running session's next requests use it too
        live = await repl.session_or_none()
        if live is not None:
            live.set_effort(level)
    repl.say(f"effort: {level}")
    for notice in choice_notices(spec, level):
        repl.say(notice)


async def _mode(repl: Repl, arg: str) -> None:
    if not arg:
        repl.say(f"permission mode: {repl.status.mode}  (one of {', '.join(MODES)})")
        return
    if arg not in MODES:
        repl.error(f"unknown permission mode {arg!r}; one of {', '.join(MODES)}")
        return
    try:
        repl.set_mode(arg)
    except UsageError as exc:
        repl.error(f"error: {exc.message}")
        return
    repl.say(f"permission mode: {arg}")
    if arg == "yolo":
        repl.error(
            "⚠ yolo: nothing asks any more and nothing runs in the OS sandbox: every write and "
            "every command the model proposes runs at once, as you (/mode default goes back)"
        )


async def _cost(repl: Repl, arg: str) -> None:
    from agentcli.ui.repl.status import format_cost, format_tokens

    usage = repl.status.usage
    repl.say(
        f"this session: {repl.status.tasks} task{'' if repl.status.tasks == 1 else 's'} · "
        f"input {format_tokens(usage.input_tokens)} · "
        f"output {format_tokens(usage.output_tokens)} · cache read "
        f"{format_tokens(usage.cache_read_input_tokens)} · cache write "
        f"{format_tokens(usage.cache_creation_input_tokens)} · {format_cost(repl.status.cost)}"
    )


async def _tools(repl: Repl, arg: str) -> None:
    live = await repl.session_or_none()
    if live is None:
        return
    text = Text()
    names = [visible(tool.name, keep="") for tool in live.tools]
    name_width = max((len(name) for name in names), default=0) + 2
    room = max(20, repl.console.width - 2 - name_width - 10)
    for name, tool in zip(names, live.tools, strict=True):
        first = next(iter(tool.description.strip().split(". ")[0].splitlines()), "")
        first = visible(first, keep="")
        text.append(f"  {name:<{name_width}}", style="bold")
        text.append(f"{tool.risk.value:<10}", style="magenta")
        text.append((first if len(first) <= room else first[: room - 1] + "…") + "\n")
    repl.console.print(text, end="", soft_wrap=True)


async def _mcp(repl: Repl, arg: str) -> None:
    """The MCP servers of this session: where each came from, its status and tools."""
    live = await repl.session_or_none()  # starts the servers, if any
    if live is None:
        return
    from agentcli.mcp.config import configured_servers
    from agentcli.mcp.listing import server_lines

    try:
        configured = configured_servers(live.settings, live.workspace, repl.options.mcp_config)
    except UsageError as exc:
        repl.error(f"error: {exc.message}")
        return
    running = None
    if configured.servers:  # the hub (and the SDK) are loaded only when there are servers
        from agentcli.mcp.hub import process_hub

        running = process_hub().servers
    for line in server_lines(configured, running):
        repl.say(line)


async def _hooks(repl: Repl, arg: str) -> None:
    """The session's hooks and their state; `approve` approves the repository's set."""
    if arg not in ("", "approve"):
        repl.error(f"unknown argument {arg!r}: /hooks lists them, /hooks approve approves them")
        return
    live = await repl.session_or_none()
    if live is None:
        return
    for line in live.approve_hooks() if arg else live.hook_lines():
        repl.say(line)


async def _agents(repl: Repl, arg: str) -> None:
    """The subagent types (source, tools, model), the limits, and the subagents running now
    and those of the last task."""
    live = await repl.session_or_none()
    if live is None:
        return
    for line in live.agent_lines():
        repl.say(line)
    last = repl.last_result.subagents if repl.last_result is not None else []
    for entry in last:
        cost = "cost unknown" if entry["cost_usd"] is None else f"${entry['cost_usd']:.4f}"
        turns, calls = entry["turns"], entry["tool_calls"]
        repl.say(
            f"last task: {entry['type']}: {entry['description']} · {entry['state']} · "
            f"{turns} turn{'' if turns == 1 else 's'} · {calls} call{'' if calls == 1 else 's'}"
            f" · {cost}"
        )


async def _skills(repl: Repl, arg: str) -> None:
    live = await repl.session_or_none()
    if live is not None:
        custom.show(repl, live.skills, COMMANDS)


COMMANDS: dict[str, Command] = {
    c.name: c
    for c in (
        Command("/help", "/help", "Show commands and keys.", _help),
        Command("/exit", "/exit", "Leave agentcli (Ctrl-D does too).", _exit),
        Command("/clear", "/clear", "Start a new session with an empty conversation.", _clear),
        Command("/model", "/model [NAME]", "Show or switch the model.", _model),
        Command("/effort", "/effort [LEVEL]", "Show or set the reasoning effort.", _effort),
        Command("/mode", "/mode [MODE]", "Show or switch the permission mode.", _mode),
        Command(
            "/permissions",
            "/permissions",
            "Show the permission mode and rules.",
            features.permissions,
        ),
        Command(
            "/accept",
            "/accept [CMD|tests|off]",
            "Show or set the acceptance checks.",
            features.accept,
        ),
        Command("/check", "/check", "Run the acceptance checks now.", features.check),
        Command("/diff", "/diff", "Show the changes of the current task.", features.diff),
        Command("/undo", "/undo", "Revert the agent's changes of the last task.", features.undo),
        Command(
            "/commit",
            "/commit [MESSAGE]",
            "Commit the files the last task changed (git).",
            git_commands.commit,
        ),
        Command(
            "/branch", "/branch [NAME]", "Show the branch, or start NAME here.", git_commands.branch
        ),
        Command("/cost", "/cost", "Tokens and cost of this session.", _cost),
        Command(
            "/compact",
            "/compact [INSTRUCTIONS]",
            "Summarize older turns to free context (the journal keeps them).",
            context_commands.compact,
        ),
        Command(
            "/context",
            "/context",
            "Show what the model is sent now, with its tokens.",
            context_commands.context,
        ),
        Command("/sessions", "/sessions", "List recent sessions.", features.sessions),
        Command(
            "/resume", "/resume [ID]", "Resume a session (without ID: pick one).", features.resume
        ),
        Command("/tools", "/tools", "List the tools the model can use.", _tools),
        Command("/mcp", "/mcp", "List the MCP servers: source, status, tools.", _mcp),
        Command("/skills", "/skills", "List skills and custom commands: file, state.", _skills),
        Command(
            "/agents",
            "/agents",
            "List the subagent types (source, tools, model) and the subagents running.",
            _agents,
        ),
        Command(
            "/hooks",
            "/hooks [approve]",
            "List the hooks and their state; approve the repository's.",
            _hooks,
        ),
        Command(
            "/calls", "/calls", "List this session's tool calls, numbered.", call_log.list_calls
        ),
        Command(
            "/show",
            "/show [N]",
            "Page through tool call N in full (default: the latest).",
            call_log.show_call,
        ),
    )
}


def argument_choices(name: str) -> list[str]:
    """Completion choices for a command's argument."""
    if name == "/mode":
        return list(MODES)
    if name == "/model":
        return [*CATALOGUE.aliases(), *(spec.id for spec in CATALOGUE.specs)]
    if name == "/effort":
        return list(EFFORTS)
    if name == "/accept":
        return ["tests", "off"]
    if name == "/hooks":
        return ["approve"]
    return []


async def dispatch(repl: Repl, name: str, arg: str) -> None:
    if name == "!":
        await bang.run_command(repl, arg)
        return
    command = COMMANDS.get(name)
    if command is None and await custom.run(repl, name, arg):
        return
    if command is None:
        matches = [c for c in COMMANDS if c.startswith(name)]
        if len(matches) == 1:  # an unambiguous prefix, e.g. /he for /help
            command = COMMANDS[matches[0]]
    if command is None:
        names = [*COMMANDS, *(c.name for c in custom.completions(repl.custom_catalog()))]
        close = difflib.get_close_matches(name, names, n=1)
        guess = f" (did you mean {close[0]}?)" if close else ""
        repl.error(f"unknown command {name}{guess}; commands: {' '.join(COMMANDS)}")
        return
    await command.handler(repl, arg)
