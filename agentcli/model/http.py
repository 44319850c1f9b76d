"""The thin Messages API transport (the default): one streaming POST to `{base}/v1/messages` on
httpx2, the HTTP stack the SDK itself uses, without importing the SDK (~2 s per process).

It sends the headers the SDK sends where the API reads them (authentication, `anthropic-version`,
the content type, `ANTHROPIC_CUSTOM_HEADERS`) but not its telemetry (`x-stainless-*`), with our
own user agent, to `ANTHROPIC_BASE_URL` (default the public API; a path prefix is kept); the body
is the JSON bytes `model.request` makes (each message encoded once, as the SDK would encode it),
posted as they are: nothing walks or copies the history again (the SDK's copy of the body was
~12 ms a request at turn 600). Errors and the stream are read by `model.wire`, which the SDK
transport (`model.anthropic`) shares.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping

import httpx2

from agentcli import __version__
from agentcli.errors import ConfigError
from agentcli.events import EventSink
from agentcli.model import ModelRequest, ModelResponse
from agentcli.model.request import beta_headers, request_body
from agentcli.model.wire import (
    IdleWatchdog,
    api_base_url,
    broken_stream_error,
    connection_error,
    finished,
    read_stream,
    stall_error,
    status_error,
    timeout_error,
)

API_VERSION = "2026-10-21"
"""The `anthropic-version` the SDK this was checked against (anthropic 2.16) sends; a contract
test compares the two."""
USER_AGENT = f"agentcli/{__version__}"
CONNECT_TIMEOUT_S = 15.0


def auth_headers(api_key: str | None = None, auth_token: str | None = None) -> dict[str, str]:
    """The credential as the SDK sends it: the API key (argument, else `ANTHROPIC_API_KEY`),
    else the auth token (`ANTHROPIC_AUTH_TOKEN`), both as a bearer token. An API key also goes
    as `x-api-key`, the header the Messages API documents for keys (and older SDKs sent, next
    to a bearer token when both were set), so a proxy or gateway that reads only that one
    accepts agentcli too. A token is never sent as `x-api-key`."""
    key = api_key or (None if auth_token else os.environ.get("ANTHROPIC_API_KEY"))
    credential = key or auth_token or os.environ.get("ANTHROPIC_AUTH_TOKEN")
    if not credential:
        raise ConfigError(
            "ANTHROPIC_API_KEY is not set",
            hint="export ANTHROPIC_API_KEY=sk-ant-… (or set ANTHROPIC_AUTH_TOKEN)",
        )
    headers = {"authorization": f"Bearer {credential}"}
    if key:
        headers["x-api-key"] = key
    return headers


FRAMING_HEADERS = frozenset({"content-length", "transfer-encoding", "host", "connection"})
"""What the HTTP client sets from the request itself: a custom value would only break it."""


def custom_headers(value: str | None) -> dict[str, str]:
    """`ANTHROPIC_CUSTOM_HEADERS`, read as the SDK reads it: one `Name: value` per line (but
    never the message's framing, `FRAMING_HEADERS`)."""
    headers: dict[str, str] = {}
    for line in (value or "").split("\n"):
        name, colon, rest = line.partition(":")
        name = name.strip().lower()
        if colon and name and name not in FRAMING_HEADERS:
            headers[name] = rest.strip()
    return headers


class HttpAnthropicModel:
    """A ModelClient that POSTs to the Messages API itself, always streaming."""

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
        base = api_base_url(base_url)
        self._url = f"{base}/v1/messages"
        self._headers: Mapping[str, str] = {
            "accept": "application/json",
            "content-type": "application/json",
            "user-agent": USER_AGENT,
            "anthropic-version": API_VERSION,
            **auth_headers(api_key, auth_token),
            # Last, as the SDK has them: they may replace any of the above (or add betas).
            **custom_headers(os.environ.get("ANTHROPIC_CUSTOM_HEADERS")),
        }
        # Certificates are loaded only for https: a plain-http base URL (a local proxy, a test
        # server) never uses TLS, and loading the CA bundle costs start-up time. Redirects are
        # never followed: a hop to another host would carry the key (httpx drops only
        # `Authorization` across origins, not `x-api-key`) and the whole conversation, possibly
        # over plain http. A 3xx ends the task naming where it points (`wire.status_error`).
        secure = base.lower().startswith("https://")
        self._client = httpx2.AsyncClient(
            timeout=httpx2.Timeout(request_timeout_s, connect=CONNECT_TIMEOUT_S),
            verify=secure,
            follow_redirects=False,
        )

    @property
    def model(self) -> str:
        return self._model

    @property
    def headers(self) -> Mapping[str, str]:
        """What every request sends besides the body's own length."""
        return self._headers

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.aclose()

    async def complete(self, request: ModelRequest, on_event: EventSink) -> ModelResponse:
        body = request_body(self._model, request)
        idle = request.idle_timeout_s
        request_id: str | None = None
        answered = False
        try:
            async with asyncio.timeout(idle) as timeout:
                watchdog = IdleWatchdog(timeout, idle)
                headers = beta_headers(request, self._headers)
                sending = self._client.stream("POST", self._url, content=body, headers=headers)
                async with sending as response:
                    answered = True
                    watchdog.alive()
                    request_id = response.headers.get("request-id")
                    if not 200 <= response.status_code < 300:
                        text = await _error_text(response)
                        raise status_error(response.status_code, response.headers, text)
                    acc = await read_stream(response.aiter_lines(), on_event, watchdog)
        except TimeoutError as exc:
            raise stall_error(idle, answered=answered) from exc
        except httpx2.TimeoutException as exc:
            raise (broken_stream_error(exc) if answered else timeout_error()) from exc
        except httpx2.HTTPError as exc:
            if answered:
                raise broken_stream_error(exc) from exc
            raise connection_error(str(exc) or type(exc).__name__) from exc
        return finished(acc, self._model, request_id)


async def _error_text(response: httpx2.Response) -> str | None:
    """The error response's body, or None when the connection broke before it was read."""
    try:
        await response.aread()
    except httpx2.HTTPError:
        return None
    return response.text
