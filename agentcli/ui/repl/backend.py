"""What the REPL drives: the ConversationManager built exactly as `agentcli run` builds it,
but with a model client that loads the SDK only when the first request goes out, and a
terminal prompter instead of the non-interactive one.

This module is heavy (pydantic, the loop, the tools); the REPL imports it in the background
while the user types the first message.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agentcli.conversation import ConversationManager
from agentcli.errors import UsageError
from agentcli.events import EventSink
from agentcli.model import ModelClient, ModelRequest, ModelResponse
from agentcli.permissions import PermissionMode, Prompter
from agentcli.permissions.setup import build_permissions
from agentcli.ui.run import RunOptions, build_manager, make_model

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
    options = RunOptions(
        task=None,
        model=settings.model,
        cwd=settings.cwd,
        permission_mode=settings.permission_mode,
        allow=list(settings.allow),
        deny=list(settings.deny),
        accept=list(settings.accept),
    )
    return build_manager(options, events, model_factory=model_factory, prompter=prompter)


def mode_of(manager: ConversationManager, fallback: str) -> str:
    mode = getattr(manager.policy, "mode", None)
    return mode.value if isinstance(mode, PermissionMode) else fallback


def apply_mode(manager: ConversationManager, settings: ReplSettings, workspace: Path) -> list[str]:
    """Switch the live session to `settings.permission_mode`: a new policy and sandbox, built
    as a session started in that mode would build them (auto mode gets its OS sandbox), keeping
    the rules granted during the session. Returns notices for the user."""
    permissions = build_permissions(settings=settings.resolve(workspace), workspace=workspace)
    old_rules = getattr(manager.policy, "rules", None)
    if old_rules is not None:
        for kind in ("allow", "ask", "deny"):
            granted = [r for r in getattr(old_rules, kind) if r.source == "session"]
            getattr(permissions.policy.rules, kind).extend(granted)
    manager.policy = permissions.policy
    manager.tool_context.sandbox = permissions.sandbox
    return permissions.notices
