"""Hooks: the team's own commands at each step of a session, in Claude Code's protocol, safe
from the repository.

- `catalog`: the configured hooks, where each comes from and whether it runs here (trust);
- `approval`: which set of a repository's hooks the user approved (bound to its content);
- `matcher`: which hooks an event's subject matches (tool names, Claude Code's too);
- `protocol`: the stdin JSON, exit codes and JSON output;
- `runner`: running one hook (sandboxed, or as the user's program);
- `engine`: a session's hooks at work (the session's own events), `task`: a task's;
- `prompter`: Notification hooks while a person is asked; `listing`: `agentcli hooks`.

The session core makes the engine (`session_hooks`) and plugs it into the conversation through
the seams of `agentcli.hook_seams`; the core never imports this package.
"""

from __future__ import annotations

from pathlib import Path

from agentcli.events import EventSink
from agentcli.hooks.catalog import Catalog, build_catalog
from agentcli.hooks.engine import HookEngine, SessionFacts
from agentcli.hooks.prompter import NotifyingPrompter
from agentcli.settings import Settings

__all__ = ["Catalog", "HookEngine", "NotifyingPrompter", "SessionFacts", "session_hooks"]


def session_hooks(
    settings: Settings, workspace: Path, *, events: EventSink, sandbox_problem: str | None
) -> HookEngine:
    """The hooks of a session configured by `settings` (`sandbox_problem`: why it has no OS
    sandbox; None: it has one)."""
    return HookEngine(
        build_catalog(settings, workspace, sandbox_problem=sandbox_problem), events=events
    )
