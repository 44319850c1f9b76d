"""What the REPL drives: the ConversationManager the session core builds for `agentcli run`
too, but with a model client made off the event loop (warmed in the background, or when the
first request goes out), and a terminal prompter instead of the non-interactive one.

This module is heavy (pydantic, the loop, the tools); the REPL imports it in the background
while the user types the first message.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from agentcli.conversation import ConversationManager
from agentcli.errors import UsageError
from agentcli.events import EventSink, Notice
from agentcli.model import ModelClient
from agentcli.model.deferred import DeferredModel
from agentcli.permissions import PermissionMode, Prompter
from agentcli.provider import Provider
from agentcli.session.build import anthropic_client, build_manager, locate, session_provider
from agentcli.settings import Transport
from agentcli.ui.run import announce_untrusted

if TYPE_CHECKING:
    from agentcli.ui.repl.settings import ReplSettings


_warm_clients: dict[tuple[str, Transport], ModelClient] = {}
_warm_lock = threading.Lock()


def warm_model(name: str, transport: Transport = Transport.HTTP) -> None:
    """Create the API client for `name` ahead of the first request (from the preload thread),
    so the first task does not pay for it. Without an API key there is nothing to create."""
    try:
        client = anthropic_client(name, transport)
    except UsageError:
        return
    with _warm_lock:
        _warm_clients.setdefault((name, transport), client)


def repl_model(name: str, transport: Transport = Transport.HTTP) -> ModelClient:
    """The REPL's client for `name`: the one warmed in the background if there is one, else made
    (in a worker thread) when the first request goes out, so its imports (the SDK's: ~2 s) never
    freeze the terminal. Without an API key, that first request says so."""

    def warm_or_new() -> ModelClient:
        with _warm_lock:
            client = _warm_clients.pop((name, transport), None)
        return client if client is not None else anthropic_client(name, transport)

    return DeferredModel(name, warm_or_new)


def build_repl_manager(
    settings: ReplSettings,
    events: EventSink,
    prompter: Prompter,
    *,
    model_factory: Callable[[str], ModelClient] | None = None,
) -> ConversationManager:
    """A new session with what the REPL was started with (and /model, /mode since), or the
    recorded one `--resume ID` / `--continue` name."""
    target = locate(settings.cwd, resume=settings.resume, continue_=settings.continue_)
    resolved = session_provider(target, settings.resolve(target.workspace))
    announce_untrusted(resolved, events)
    if model_factory is None and resolved.provider is Provider.ANTHROPIC:
        model_factory = functools.partial(repl_model, transport=resolved.api.transport)
    # else the provider's own (`session.build.provider_factory`)
    return build_manager(
        target,
        resolved,
        events=events,
        model_factory=model_factory,
        prompter=prompter,
        # On the REPL's console, not raw stderr under the prompt.
        say=lambda notice: events(Notice(level="warning", message=notice)),
        mcp_config=settings.mcp_config,
    )


def mode_of(manager: ConversationManager, fallback: str) -> str:
    mode = getattr(manager.policy, "mode", None)
    return mode.value if isinstance(mode, PermissionMode) else fallback
