"""What the REPL drives: the ConversationManager the session core builds for `agentcli run`
too, but with a model client that loads the SDK only when the first request goes out, and a
terminal prompter instead of the non-interactive one.

This module is heavy (pydantic, the loop, the tools); the REPL imports it in the background
while the user types the first message.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from agentcli.conversation import ConversationManager
from agentcli.errors import UsageError
from agentcli.events import EventSink
from agentcli.model import ModelClient
from agentcli.model.deferred import DeferredModel
from agentcli.permissions import PermissionMode, Prompter
from agentcli.session.build import anthropic_client, build_manager, locate
from agentcli.ui.run import announce_untrusted, say

if TYPE_CHECKING:
    from agentcli.ui.repl.settings import ReplSettings


_warm_clients: dict[str, ModelClient] = {}
_warm_lock = threading.Lock()


def warm_model(name: str) -> None:
    """Create the API client for `name` ahead of the first request (from the preload thread),
    so the first task does not pay for it. Without an API key there is nothing to create."""
    try:
        client = anthropic_client(name)
    except UsageError:
        return
    with _warm_lock:
        _warm_clients.setdefault(name, client)


def repl_model(name: str) -> ModelClient:
    """The REPL's client for `name`: the one warmed in the background if there is one, else made
    (in a worker thread) when the first request goes out, so the SDK import never freezes the
    terminal. Without an API key, that first request says so."""

    def warm_or_new() -> ModelClient:
        with _warm_lock:
            client = _warm_clients.pop(name, None)
        return client if client is not None else anthropic_client(name)

    return DeferredModel(name, warm_or_new)


def build_repl_manager(
    settings: ReplSettings,
    events: EventSink,
    prompter: Prompter,
    *,
    model_factory: Callable[[str], ModelClient] = repl_model,
) -> ConversationManager:
    """A new session with what the REPL was started with (and /model, /mode since)."""
    target = locate(settings.cwd)
    resolved = settings.resolve(target.workspace)
    announce_untrusted(resolved, events)
    return build_manager(
        target,
        resolved,
        events=events,
        model_factory=model_factory,
        prompter=prompter,
        say=say,
        mcp_config=settings.mcp_config,
    )


def mode_of(manager: ConversationManager, fallback: str) -> str:
    mode = getattr(manager.policy, "mode", None)
    return mode.value if isinstance(mode, PermissionMode) else fallback
