"""`/commit [MESSAGE]` and `/branch [NAME]`, and the repository part of the status line.

Both stand on the session (`LiveSession.commit_last_task`, `start_branch`, `repo_status`); the
git work runs in a worker thread, off the event loop. `/commit` commits the last task's files
as `run --commit` would; when that task's checks did not pass (it failed, or had none) it asks
first, and the commit message then says it is not verified.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from prompt_toolkit import PromptSession

from agentcli.errors import GitRefusal
from agentcli.tasks import TaskState
from agentcli.usergit.message import unverified_reason

if TYPE_CHECKING:
    from agentcli.session.live import LiveSession
    from agentcli.ui.repl.host import ReplHost as Repl

CHANGES_THE_REPOSITORY = frozenset({"!", "/undo", "/clear", "/resume"})
"""Commands after which the status line's count of changed files is read again (tasks too)."""


async def refresh_status(repl: Repl, live: LiveSession | None = None) -> None:
    """Read the branch and the number of changed files again, for the status line."""
    live = live or (await repl.session_or_none() if repl.session_id is not None else None)
    if live is None:
        return
    status = await asyncio.to_thread(live.repo_status)
    repl.status.repo = status.label() if status is not None else ""


async def branch(repl: Repl, arg: str) -> None:
    """`/branch` shows the branch; `/branch NAME` creates NAME from HEAD and switches to it."""
    live = await repl.session_or_none()
    if live is None:
        return
    if not arg:
        status = await asyncio.to_thread(live.repo_status)
        if status is None:
            repl.say("not a git repository (git init makes one)")
            return
        repl.status.repo = status.label()
        where = f"on branch {status.branch}" if status.branch else "HEAD is detached"
        repl.say(f"{where} · {status.changed} changed  (/branch NAME starts a new branch here)")
        return
    try:
        switched = await asyncio.to_thread(live.start_branch, arg)
    except GitRefusal as exc:
        repl.error(f"branch: {exc.message}" + (f" ({exc.hint})" if exc.hint else ""))
        return
    repl.say(f"switched to a new branch {switched.branch}")
    await refresh_status(repl, live)


async def commit(repl: Repl, arg: str) -> None:
    """`/commit [MESSAGE]`: commit exactly the files the last task changed."""
    live = await repl.session_or_none()
    if live is None:
        return
    last = live.last_task
    if last is None:
        repl.error("no task to commit yet: /commit commits the files the last task changed")
        return
    unverified = last.state is not TaskState.SUCCEEDED
    if unverified:
        repl.error(f"the last task is not verified: {unverified_reason(last)}")
        if not await _confirm(repl, "  commit its files anyway? [y/N] "):
            repl.say("not committed")
            return
    report = await live.commit_last_task(arg or None, unverified=unverified)
    for notice in report.notices:
        repl.error(notice)
    outcome = report.outcome
    if outcome.sha is not None:
        repl.say(f"committed {outcome.sha[:12]} on {outcome.branch}")
    else:
        repl.error(f"not committed: {outcome.skipped}")
    await refresh_status(repl, live)


async def _confirm(repl: Repl, question: str) -> bool:
    session: PromptSession[str] = PromptSession(**repl.io)
    try:
        answer = await session.prompt_async(question, handle_sigint=False)
    except (KeyboardInterrupt, EOFError):
        return False
    return answer.strip().lower() in ("y", "yes")
