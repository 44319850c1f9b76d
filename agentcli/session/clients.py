"""Model clients for sessions: which provider's, made when, and warmed ahead by the REPL.

A client is made when its first request goes out (`model.deferred`), so the session and the
task's prompt are journaled before its imports (the HTTP library; the SDK: ~2 s). The REPL
warms the Anthropic client in a background thread while the user types (`warm_model`); the
first session that asks for that model and transport takes the warmed client instead of making
one.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable

from agentcli.errors import ConfigError, UsageError
from agentcli.model import ModelClient
from agentcli.model.deferred import DeferredModel
from agentcli.model.wire import api_base_url
from agentcli.provider import Provider
from agentcli.session.openai_model import openai_factory
from agentcli.settings import Settings, Transport

ModelFactory = Callable[[str], ModelClient]
"""Makes the client for a model name (of one provider, over one transport)."""

WarmKey = tuple[str, Transport, str, str]
"""A warmed client is taken only by a request for its model and transport, to the same base
URL with the same key (what the client read from the environment when it was made)."""

_warm_clients: dict[WarmKey, ModelClient] = {}
_warm_lock = threading.Lock()


def _warm_key(name: str, transport: Transport) -> WarmKey:
    credential = os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")
    return (name, transport, api_base_url(), credential or "")


def require_api_key() -> None:
    """ConfigError (exit 2, before any session exists) when there is no credential."""
    if not (os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")):
        raise ConfigError(
            "ANTHROPIC_API_KEY is not set",
            hint="export ANTHROPIC_API_KEY=sk-ant-… (or set ANTHROPIC_AUTH_TOKEN)",
        )


def anthropic_client(name: str, transport: Transport = Transport.HTTP) -> ModelClient:
    """The Anthropic client for model `name` over `transport`, made now: its imports happen
    here (httpx2 for `http`; the ~2 s SDK import for `sdk`)."""
    require_api_key()
    if transport is Transport.SDK:
        from agentcli.model.anthropic import AnthropicModel

        return AnthropicModel(name)
    from agentcli.model.http import HttpAnthropicModel

    return HttpAnthropicModel(name)


def warm_model(name: str, transport: Transport = Transport.HTTP) -> None:
    """Create the API client for `name` ahead of the first request (from the REPL's preload
    thread), so the first task does not pay for it. Without an API key there is nothing to
    create."""
    try:
        key = _warm_key(name, transport)
        client = anthropic_client(name, transport)
    except UsageError:
        return
    with _warm_lock:
        _warm_clients.setdefault(key, client)


def _warm_or_new(key: WarmKey) -> ModelClient:
    with _warm_lock:
        client = _warm_clients.pop(key, None)
    return client if client is not None else anthropic_client(key[0], key[1])


def make_model(name: str, transport: Transport = Transport.HTTP) -> ModelClient:
    """The client for model `name`: the one warmed in the background if there is one, else made
    (in a worker thread) when the first request goes out. ConfigError without an API key or
    with a base URL that is not one."""
    require_api_key()
    key = _warm_key(name, transport)
    return DeferredModel(name, lambda: _warm_or_new(key))


def provider_factory(settings: Settings, *, resumed: bool) -> ModelFactory:
    """The client factory of the configured provider (`--provider`, `provider`): for Anthropic,
    `make_model` over the configured transport. What the provider needs before a session can
    start (its key, a base URL that is one, a model for an OpenAI-compatible server) is checked
    here, first, so a run that cannot start leaves nothing behind (no journal, no snapshot, no
    sandbox probe)."""
    if settings.provider is Provider.OPENAI:
        return openai_factory(settings, resumed=resumed)
    require_api_key()
    api_base_url()
    return functools.partial(make_model, transport=settings.api.transport)
