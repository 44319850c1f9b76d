"""What the REPL drives: the ConversationManager the session core builds for `agentcli run`
too, but with a model client that loads the SDK only when the first request goes out, and a
terminal prompter instead of the non-interactive one.

This module is heavy (pydantic, the loop, the tools); the REPL imports it in the background
while the user types the first message.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from agentcli.conversation import ConversationManager
from agentcli.errors import UsageError
from agentcli.events import EventSink
from agentcli.model import ModelClient, ModelRequest, ModelResponse
from agentcli.permissions import PermissionMode, Prompter
from agentcli.session.build import build_manager, locate, make_model
from agentcli.ui.run import announce_untrusted, say

if TYPE_CHECKING:
    from agentcli.ui.repl.settings import ReplSettings


_warm_clients: dict[str, ModelClient] = {}
_warm_lock = threading.Lock()


def warm_model(name: str) -> None:
    """Create the API client for `name` ahead of the first request (from the preload thread),
    so the first task does not pay for it. Without an API key there is nothing to create."""
    try:
        client = make_model(name)
    except UsageError:
        return
    with _warm_lock:
        _warm_clients.setdefault(name, client)


class DeferredModel:
    """A ModelClient that gets its Anthropic client on the first request: the one warmed in
    the background if there is one, else made in a worker thread, so the SDK import never
    freezes the terminal (and Ctrl-C still works)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._client: ModelClient | None = None

    @property
    def model(self) -> str:
        return self._name

    async def complete(self, request: ModelRequest, on_event: EventSink) -> ModelResponse:
        client = self._client
        if client is None:
            with _warm_lock:
                client = _warm_clients.pop(self._name, None)
            if client is None:
                client = await asyncio.to_thread(make_model, self._name)
            self._client = client
        return await client.complete(request, on_event)

    async def aclose(self) -> None:
        """Close the API client's connections, if it was ever created."""
        close = getattr(self._client, "aclose", None)
        self._client = None
        if close is not None:
            await close()


def build_repl_manager(
    settings: ReplSettings,
    events: EventSink,
    prompter: Prompter,
    *,
    model_factory: Callable[[str], ModelClient] = DeferredModel,
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
    )


def mode_of(manager: ConversationManager, fallback: str) -> str:
    mode = getattr(manager.policy, "mode", None)
    return mode.value if isinstance(mode, PermissionMode) else fallback
