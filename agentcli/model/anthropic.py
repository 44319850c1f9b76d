"""The Anthropic Messages API over the official SDK: the only module that imports `anthropic`.

The SDK transport (`[api] transport = "sdk"`); the default is the thin one, `model.http`, which
spares every process the SDK's ~2 s import. Here the SDK does the HTTP, authentication, headers
and `ANTHROPIC_BASE_URL` (and is the place for Bedrock or Vertex clients); the request body
comes from `model.request`. We read the SSE lines of the raw streamed response ourselves and map
errors with `model.wire`, as the thin transport does, so the two cannot drift. The SDK's own
retries are off: `model.retry` retries instead.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import httpx2

from agentcli.errors import ModelError
from agentcli.events import EventSink
from agentcli.model import ModelRequest, ModelResponse
from agentcli.model.request import beta_headers, build_request_params, sendable_messages
from agentcli.model.wire import (
    IdleWatchdog,
    broken_stream_error,
    connection_error,
    finished,
    read_stream,
    stall_error,
    status_error,
    timeout_error,
)

__all__ = ["AnthropicModel", "build_request_params", "sendable_messages"]


class AnthropicModel:
    """A ModelClient over the official SDK, always streaming."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        auth_token: str | None = None,
        base_url: str | None = None,
        request_timeout_s: float = 600.0,
    ) -> None:
        self._model = model
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key,
            auth_token=auth_token,
            base_url=base_url,
            max_retries=0,
            timeout=request_timeout_s,
        )

    @property
    def model(self) -> str:
        return self._model

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.close()

    async def complete(self, request: ModelRequest, on_event: EventSink) -> ModelResponse:
        params = build_request_params(self._model, request)
        # The SDK's `messages.create` knows no beta parameter: it goes as extra body, its beta
        # as an extra header (as `client.beta` would send them).
        extra: dict[str, Any] = {}
        if "context_management" in params:
            extra["extra_body"] = {"context_management": params.pop("context_management")}
            extra["extra_headers"] = beta_headers(request, {})
        request_id: str | None = None
        answered = False
        idle = request.idle_timeout_s
        try:
            async with asyncio.timeout(idle) as timeout:
                watchdog = IdleWatchdog(timeout, idle)
                create = self._client.messages.with_streaming_response.create
                async with create(**params, **extra) as response:
                    answered = True
                    watchdog.alive()
                    request_id = response.headers.get("request-id")
                    acc = await read_stream(response.iter_lines(), on_event, watchdog)
        except TimeoutError as exc:
            raise stall_error(idle, answered=answered) from exc
        except anthropic.APIError as exc:
            raise _map_api_error(exc) from exc
        except httpx2.HTTPError as exc:
            raise broken_stream_error(exc) from exc
        return finished(acc, self._model, request_id)


def _map_api_error(exc: anthropic.APIError) -> Exception:
    """Every SDK error becomes what `model.wire` makes of the same failure on the thin
    transport: the status, headers and body of an error response go through `status_error`."""
    if isinstance(exc, anthropic.APITimeoutError):
        return timeout_error()
    if isinstance(exc, anthropic.APIConnectionError):
        return connection_error(exc.message)
    if not isinstance(exc, anthropic.APIStatusError):
        return ModelError(f"model API error: {exc.message}")
    return status_error(exc.status_code, exc.response.headers, _body_text(exc.response))


def _body_text(response: httpx2.Response) -> str | None:
    """The error response's body as the SDK read it (None: it was closed unread)."""
    try:
        return response.text
    except httpx2.ResponseNotRead:
        return None
