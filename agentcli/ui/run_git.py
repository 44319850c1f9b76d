"""`agentcli run --branch NAME` and `--commit`: what `run` does in the user's git repository
before and after its task, and how it says so. The work is the session's
(`LiveSession.start_branch`, `commit_last_task`); this module only decides when, and reports.

Before the task: a run asked to commit refuses at once (exit 2) what would make the commit
impossible anyway (no repository, a detached HEAD without `--branch`, a merge in progress, no
identity), so no model time is spent on a task that cannot end as asked; then `--branch`
creates and switches. After it: a task that succeeded is committed, anything else is not, and
one line on stderr says which (`agentcli: not committed: …` even with `--quiet`).
"""

from __future__ import annotations

import sys
from dataclasses import replace

from agentcli.events import EventSink, Notice
from agentcli.session.live import LiveSession
from agentcli.session.options import SessionOptions
from agentcli.tasks import TaskResult
from agentcli.ui.render import StreamJson
from agentcli.ui.term.safe import visible


def wants_commit(options: SessionOptions, live: LiveSession) -> bool:
    """`--commit` / `--no-commit`, else the config's `[git] commit`."""
    return options.commit if options.commit is not None else live.settings.git.commit


def before_task(options: SessionOptions, live: LiveSession, events: EventSink) -> None:
    """Refuse now what would make the asked-for commit impossible; then start `--branch`.
    GitRefusal (a usage error: exit 2) says why not."""
    if wants_commit(options, live):
        live.check_committable(branching=options.branch is not None)
    if options.branch is not None:
        switched = live.start_branch(options.branch)
        start = f" at {switched.start[:12]}" if switched.start else ""
        events(Notice(level="info", message=f"switched to a new branch {switched.branch}{start}"))


async def after_task(
    options: SessionOptions, live: LiveSession, events: EventSink, result: TaskResult
) -> TaskResult:
    """The result, with what committing it did when the run commits."""
    if not wants_commit(options, live):
        return result
    report = await live.commit_last_task()
    for notice in report.notices:
        _tell(f"{notice}", events, options, warning=True)
    outcome = report.outcome
    if outcome.sha is not None:
        _tell(f"committed {outcome.sha[:12]} on {outcome.branch}", events, options, warning=False)
    elif outcome.skipped is not None:
        _tell(f"not committed: {outcome.skipped}", events, options, warning=True)
    error = f"not committed: {outcome.skipped}" if outcome.failed else result.error
    return replace(result, commit=outcome, error=error)


def _tell(message: str, events: EventSink, options: SessionOptions, *, warning: bool) -> None:
    """A stream-json notice; elsewhere a line on stderr (a warning even with --quiet)."""
    if isinstance(events, StreamJson):
        events(Notice(level="warning" if warning else "info", message=message))
    elif warning or not options.quiet:
        sys.stderr.write(f"agentcli: {visible(message)}\n")
