"""What both Anthropic transports share, so they cannot drift: the API's base URL, its error
responses mapped to agentcli's errors, and the streamed response read into one message under
the idle watchdog.

Pure code with no HTTP library and no SDK import: the thin transport (`model.http`) and the SDK
transport (`model.anthropic`) each make the HTTP call and hand the status, headers and body (or
the stream's lines) to the functions here.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import os
import time
from collections.abc import AsyncIterable, Mapping
from typing import Any

from agentcli.errors import ConfigError, ModelError, RetryableModelError
from agentcli.events import EventSink
from agentcli.model import ModelResponse
from agentcli.model.stream import SseParser, StreamAccumulator
from agentcli.terminal_reason import TerminalReason

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
"""Statuses worth repeating the request for (every 5xx is, too)."""

DEFAULT_BASE_URL = "https://api.anthropic.com"

_ADVICE = {
    401: "check ANTHROPIC_API_KEY (it was rejected)",
    403: "the API key is not allowed to use this model or feature",
    404: "check the model name (-m/--model or AGENTCLI_MODEL)",
    413: "the request is too large",
}


def api_base_url(value: str | None = None) -> str:
    """The API's base URL: `value`, else `ANTHROPIC_BASE_URL`, else the public API. A value
    that is not an http(s) URL is a ConfigError that names it."""
    url = value or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in ("http", "https") or not rest.strip("/"):
        raise ConfigError(
            f"ANTHROPIC_BASE_URL is not an http:// or https:// URL: {url!r}",
            hint="e.g. https://api.anthropic.com, or unset it",
        )
    return url.rstrip("/")


def status_error(status: int, headers: Mapping[str, str], body: str | None) -> Exception:
    """The error for a response with a non-2xx `status`: a RetryableModelError (with the
    server's `retry-after`) or a ModelError with advice and the request id. `body` is the
    response's text (None: it could not be read); its message is the API's `error.message`,
    else what the SDK would say (`Error code: 400 - {...}`, the text, or the bare status)."""
    etype, message = _error_body(status, body)
    if status in RETRYABLE_STATUS or status >= 500:
        return RetryableModelError(
            f"{status} {etype}: {message}",
            status_code=status,
            retry_after=retry_after(headers),
        )
    advice = _ADVICE.get(status, "")
    if 300 <= status < 400:
        advice = f"the server redirects to {headers.get('location')}: set ANTHROPIC_BASE_URL there"
    reason = TerminalReason.MODEL_ERROR
    if status == 400 and "prompt is too long" in message:
        reason = TerminalReason.CONTEXT_EXHAUSTED
        advice = "the conversation no longer fits the model's context window"
    text = f"{status} {etype}: {message}" + (f" ({advice})" if advice else "")
    return ModelError(
        text,
        status_code=status,
        error_type=etype,
        request_id=headers.get("request-id"),
        reason=reason,
    )


def timeout_error() -> RetryableModelError:
    return RetryableModelError("the request to the model API timed out")


def connection_error(detail: str) -> RetryableModelError:
    return RetryableModelError(f"could not connect to the model API: {detail}")


def broken_stream_error(exc: BaseException) -> RetryableModelError:
    """The connection broke while the body was streaming: an incomplete response."""
    return RetryableModelError(f"the response stream broke: {exc!r}")


def stall_error(idle: float | None, answered: bool) -> RetryableModelError:
    """The idle watchdog fired: nothing arrived for `idle` seconds, before the response's
    headers (`answered` False) or in the middle of its stream."""
    waited = "the response stream stalled" if answered else "no response"
    return RetryableModelError(f"{waited}: nothing received for {idle:g} s")


class IdleWatchdog:
    """Pushes an `asyncio.timeout` back by `idle` seconds each time something arrives, so it
    fires only when the connection goes quiet, however long the whole answer takes."""

    def __init__(self, timeout: asyncio.Timeout, idle: float | None) -> None:
        self._timeout = timeout
        self._idle = idle
        self._loop = asyncio.get_running_loop()

    def alive(self) -> None:
        if self._idle is not None:
            self._timeout.reschedule(self._loop.time() + self._idle)


async def read_stream(
    lines: AsyncIterable[str], on_event: EventSink, watchdog: IdleWatchdog
) -> StreamAccumulator:
    """The SSE lines of a 200 response, applied in order; the accumulator says whether the
    message is complete (`result()`)."""
    acc = StreamAccumulator(on_event=on_event)
    parser = SseParser()
    async for line in lines:
        watchdog.alive()
        sse = parser.feed_line(line)
        if sse is not None:
            acc.feed_sse(sse)
    last = parser.flush()
    if last is not None:
        acc.feed_sse(last)
    return acc


def finished(acc: StreamAccumulator, model: str, request_id: str | None) -> ModelResponse:
    """The complete response (IncompleteResponseError if the stream was cut)."""
    result = acc.result()
    return ModelResponse(
        message=result.message,
        stop_reason=result.stop_reason,
        usage=result.usage,
        model=result.model or model,
        request_id=request_id,
    )


def _error_body(status: int, body: str | None) -> tuple[str, str]:
    if body is None:
        return "error", f"Error code: {status}"
    text = body.strip()
    try:
        parsed: Any = json.loads(text)
    except ValueError:
        return "error", text or f"Error code: {status}"
    error = parsed.get("error") if isinstance(parsed, dict) else None
    fallback = f"Error code: {status} - {parsed}"
    if isinstance(error, dict):
        return str(error.get("type", "error")), str(error.get("message", fallback))
    return "error", fallback


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asks to wait: `retry-after-ms`, else `retry-after` in seconds or as
    an HTTP date, as the SDKs read them; None (our own backoff) when neither is a finite,
    non-negative wait."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            if name == "retry-after-ms":
                continue
            try:
                seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
            except (TypeError, ValueError, OverflowError):
                continue
            seconds = max(seconds, 0.0)
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    return None
