"""What the REPL opens on: a new session, or the recorded one `--resume ID` or `--continue`
names, or (a bare `--resume`) the one the user picks from this workspace's sessions, with the
same picker as `/resume`.

What can be checked before the terminal is taken over is checked then (`check_resumable`): an
unknown id, nothing to continue or nothing to pick is one line on stderr and exit 2, as for
`run`. Picking none (Esc, Ctrl-C,
an answer that is no number on the list) ends agentcli at once with exit 130, as an interrupted
command does: nothing was started, so a wrapper script must not take it for success.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agentcli.errors import UsageError
from agentcli.paths import resolve_workspace
from agentcli.session.options import PICK
from agentcli.ui.repl.welcome import welcome

if TYPE_CHECKING:
    from agentcli.session.options import SessionOptions
    from agentcli.ui.repl.host import ReplHost


def check_resumable(settings: SessionOptions) -> None:
    """UsageError unless the session `--resume ID` / `--continue` names exists, or, for a bare
    `--resume`, the workspace has one to pick. A session recorded in another workspace is
    continued in its own (as `run --resume` does) unless `-C` says otherwise."""
    if settings.resume is None and not settings.continue_:
        return
    workspace = resolve_workspace(settings.cwd)
    if settings.resume == PICK and not settings.continue_:
        from agentcli.session import records
        from agentcli.ui.repl.picker import nothing_to_pick

        if not records.list_sessions(workspace, limit=1):
            raise nothing_to_pick(workspace)
        return
    from agentcli.session.opening import find_resumed

    try:
        found = find_resumed(settings.resume, settings.continue_, workspace)
    except UsageError as exc:
        if settings.continue_:
            raise
        raise UsageError(
            exc.message,
            hint="`agentcli --resume` without an id picks one of this workspace's sessions; "
            "`agentcli sessions list --all` lists every session",
        ) from exc
    if found is not None and settings.cwd is None:
        settings.cwd = Path(found.workspace)


async def open_first(repl: ReplHost) -> int | None:
    """Greet, and open the session the REPL was asked to start on (after the user picks it, for
    a bare `--resume`). None to go on to the prompt; else the exit code to end with."""
    settings = repl.options
    if settings.resume == PICK:
        from agentcli.ui.repl.picker import pick_session

        chosen = await pick_session(repl)
        if chosen is None:
            from agentcli.tasks import ExitCode

            return ExitCode.ABORTED
        settings.resume = chosen
    welcome(repl.console, repl.workspace, needs_key=repl.needs_anthropic_key)
    if settings.resume is None and not settings.continue_:
        return None  # a new session, made when the first task needs it
    live = await repl.session_or_none()
    settings.resume, settings.continue_ = None, False  # `/clear` starts a new one
    from agentcli.tasks import ExitCode
    from agentcli.ui.repl.features import show_resumed

    if live is None:
        return ExitCode.USAGE  # why was said
    show_resumed(repl, live)
    return None
