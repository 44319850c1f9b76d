"""Slash commands that stand on other parts of agentcli: the permission policy, acceptance
checks, and the session core (`agentcli.session`: undo, recorded sessions). Each calls that
part's public functions; where a part offers nothing to call, the command says so plainly
instead of pretending."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text

from agentcli.errors import UndoError, UsageError
from agentcli.permissions.rules import RuleKind
from agentcli.truncation import shorten
from agentcli.ui.repl.calls import read_image
from agentcli.ui.term.diffs import diff_text, file_diff
from agentcli.ui.term.safe import visible

if TYPE_CHECKING:
    from agentcli.session.live import LiveSession
    from agentcli.ui.repl.host import ReplHost as Repl

RULE_KINDS = tuple(kind.value for kind in RuleKind)


def _usage_error(repl: Repl, exc: UsageError) -> None:
    repl.error(exc.message + (f" ({exc.hint})" if exc.hint else ""))


# -- /permissions ----------------------------------------------------------------------------
async def permissions(repl: Repl, arg: str) -> None:
    """`/permissions` shows the mode and rules; `/permissions allow|ask|deny RULE` adds a rule
    for this session."""
    live = await repl.session_or_none()
    if live is None:
        return
    if arg:
        kind, _, rule = arg.partition(" ")
        if kind not in RULE_KINDS or not rule.strip():
            repl.error(
                "usage: /permissions [allow|ask|deny RULE], e.g. /permissions allow shell(make *)"
            )
            return
        _add_rule(repl, live, RuleKind(kind), rule.strip().strip("'\""))
        return
    text = Text()
    text.append("  mode     ", style="bold")
    text.append(f"{repl.status.mode}\n")
    problem = live.sandbox_problem
    state = "on" if live.sandbox_available else (f"off: {problem}" if problem else "off")
    text.append("  sandbox  ", style="bold")
    text.append(f"{state}\n")
    rules = live.rules()
    for kind in RuleKind:
        shown = [f"{rule.text} [{_stored(rule.source, repl.workspace)}]" for rule in rules.of(kind)]
        text.append(f"  {kind.value:<9}", style="bold")
        text.append((", ".join(shown) if shown else "(none)") + "\n")
    text.append(
        "  /mode MODE switches the mode; /permissions allow RULE adds a rule\n", style="dim"
    )
    repl.console.print(text, end="")


def _stored(source: str, workspace: Path) -> str:
    """Where a rule lives, as the user would look for it: `session` (nowhere: this session
    only), a flag, or its file (relative to the workspace when it is one of the workspace's,
    else with the home directory as `~`)."""
    if not source.startswith("/"):
        return source
    path = Path(source)
    if path.is_relative_to(workspace):
        return path.relative_to(workspace).as_posix()
    home = Path.home()
    return f"~/{path.relative_to(home)}" if path.is_relative_to(home) else source


def _add_rule(repl: Repl, live: LiveSession, kind: RuleKind, rule: str) -> None:
    try:
        live.grant_rule(kind, rule)
    except UsageError as exc:
        _usage_error(repl, exc)
        return
    repl.say(f"{kind.value} {rule} (for this session)")


# -- /accept and /check ----------------------------------------------------------------------
async def accept(repl: Repl, arg: str) -> None:
    """`/accept` lists the checks, `/accept CMD` adds one (`tests` detects the project's test
    command), `/accept off` removes them all. They apply from the next task on."""
    live = await repl.session_or_none()
    if live is None or repl.view is None:
        return
    current = live.acceptance.commands
    if not arg:
        if current:
            repl.say("acceptance checks: " + " · ".join(current))
        else:
            repl.say("no acceptance checks: /accept CMD adds one, /accept tests detects the tests")
        return
    if arg == "off":
        live.set_acceptance(())
        repl.say("acceptance checks removed: tasks will end unverified")
        return
    from agentcli.acceptance import resolve_commands

    try:
        added = resolve_commands([arg], repl.workspace, repl.view)
    except UsageError as exc:
        _usage_error(repl, exc)
        return
    commands = tuple(dict.fromkeys((*current, *added)))
    live.set_acceptance(commands)
    repl.say("acceptance checks: " + " · ".join(commands))


async def check(repl: Repl, arg: str) -> None:
    """Run the acceptance checks now, on the workspace as it is."""
    live = await repl.session_or_none()
    if live is None or repl.view is None:
        return
    if not live.acceptance.commands:
        repl.say("no acceptance checks are set: /accept CMD (or /accept tests) first")
        return
    view = repl.view
    repl.status.state, repl.status.task_started = "checking", time.monotonic()
    report, cancelled = await repl.run_cancellable(live.run_checks(view))
    repl.status.task_started = None
    if report is None:
        repl.status.state = "idle"
        if cancelled:
            repl.say("checks cancelled")
        return
    passed = sum(1 for e in report.evidence if e.passed)
    if report.passed:
        repl.status.state = "verified"
        line = Text(f"✓ verified: {passed}/{len(report.evidence)} checks passed on ", style="green")
        line.append(report.final_version[:10])
    else:
        repl.status.state = "not verified"
        line = Text(f"✗ not verified: {visible(report.summary())}", style="red")
    repl.console.print(line)


# -- /diff and /undo -------------------------------------------------------------------------
async def diff(repl: Repl, arg: str) -> None:
    """The changes of the last task, from before the task to now: every file it changed,
    through agentcli's file tools or through commands (from the task's checkpoint)."""
    view, result = repl.view, repl.last_result
    if view is None or result is None:
        repl.say("no task has run in this session yet")
        return
    before = dict(view.first_images)
    others = [name for name in result.changed_files if name not in before]
    if others:
        before.update(await _checkpoint_images(repl, result.task_id, others))
    shown = 0
    for path, image in before.items():
        change = file_diff(path, image, read_image(repl.workspace, {"path": path}))
        if change is not None:
            repl.console.print(
                diff_text(change.lines, max_lines=400, indent="  "), end="", soft_wrap=True
            )
            shown += 1
    missing = [name for name in others if name not in before]
    if missing:
        repl.say(
            "also changed (no copy from before the task to diff against): "
            + ", ".join(missing[:20])
            + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
        )
    if not shown and not missing:
        repl.say("the last task changed no text files (or its changes were undone)")


async def _checkpoint_images(repl: Repl, task_id: str, names: list[str]) -> dict[str, bytes | None]:
    from agentcli.session import records

    workspace, git = repl.workspace, repl.git
    try:
        images = await asyncio.to_thread(
            lambda: records.task_preimages(workspace, task_id, git=git)
        )
    except UndoError:
        return {}
    return {name: images[name] for name in names if name in images}


async def undo(repl: Repl, arg: str) -> None:
    """Revert the files the last task changed (`/undo TASK_ID` for another task). A task of a
    session another live process uses is refused, as `agentcli undo` refuses it."""
    from agentcli.session import records

    task_id = arg or None
    workspace, own, git = repl.workspace, repl.session_id, repl.git
    try:
        result = await asyncio.to_thread(
            lambda: records.undo(workspace, task_id, own_session=own, git=git)
        )
    except UndoError as exc:
        repl.error(f"undo: {exc.message}" + "".join(f"\n    {name}" for name in exc.files))
        return
    if not result.restored and not result.removed:
        repl.say(f"task {result.task_id} left no file changes; nothing to undo")
        return
    lines = [f"restored {n}" for n in result.restored] + [f"removed {n}" for n in result.removed]
    repl.say(f"undid task {result.task_id}:\n    " + "\n    ".join(lines))
    # Whatever was verified was verified on files that just changed back.
    repl.status.state = "undone"


# -- /sessions and /resume -------------------------------------------------------------------
async def sessions(repl: Repl, arg: str) -> None:
    """This workspace's recent sessions, newest first (the current one marked)."""
    from agentcli.session import records

    rows = records.list_sessions(repl.workspace, limit=15)
    if not rows:
        repl.say("no earlier sessions in this workspace")
        return
    current = repl.session_id
    text = Text()
    room = max(20, repl.console.width - 60)
    for row in rows:
        when = time.strftime("%m-%d %H:%M", time.localtime(row.updated_at))
        title = visible(" ".join((row.title or "").split()), keep="")
        mark = "*" if row.id == current else " "
        text.append(f" {mark}{row.id}  ", style="bold" if row.id == current else "")
        text.append(f"{when}  {row.tasks:>2} task{'' if row.tasks == 1 else 's'}  ", style="dim")
        text.append(f"{row.last_state or '-':<12} ", style="dim")
        text.append(title[:room] + ("…" if len(title) > room else "") + "\n")
    text.append("  /resume ID continues one (a unique prefix of the id is enough)\n", style="dim")
    repl.console.print(text, end="")


async def resume(repl: Repl, arg: str) -> None:
    """`/resume ID` continues that session; `/resume` asks which one of this workspace's."""
    from agentcli.ui.repl.picker import pick_session

    target = arg or await pick_session(repl)
    if target is None:
        return
    live = await repl.switch_session(target)
    if live is not None:
        show_resumed(repl, live)


def show_resumed(repl: Repl, live: LiveSession) -> None:
    """Which session the REPL goes on with, and where its conversation stopped."""
    messages = live.messages
    repl.say(f"resumed session {live.session_id} ({len(messages)} messages)")
    last_user = next((m for m in reversed(messages) if m.role == "user" and m.text.strip()), None)
    last_agent = next((m for m in reversed(messages) if m.role == "assistant"), None)
    for who, message in (("you", last_user), ("agent", last_agent)):
        if message is not None and message.text.strip():
            flat = visible(message.text, keep="")
            repl.console.print(Text(f"  {who}: {shorten(flat, 150)}", style="dim"))
