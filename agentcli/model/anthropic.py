"""The Anthropic Messages API adapter: the only module that imports the `anthropic` SDK.

The SDK does the HTTP, authentication, headers and `ANTHROPIC_BASE_URL`; the request body comes
from `model.request` (the rules of the model it goes to). We read the SSE lines
of the raw streamed response ourselves (see `model.stream`) so every content block is kept as the
JSON object the API sent. SDK errors are mapped to ours in exactly one place,
`_map_api_error`. The SDK's own retries are off: `model.retry` retries instead.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import httpx2

from agentcli.errors import ModelError, RetryableModelError
from agentcli.events import EventSink
from agentcli.model import ModelRequest, ModelResponse
from agentcli.model.request import build_request_params, sendable_messages
from agentcli.model.stream import SseParser, StreamAccumulator
from agentcli.terminal_reason import TerminalReason

__all__ = ["AnthropicModel", "build_request_params", "sendable_messages"]

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


class AnthropicModel:
    """A ModelClient over the official SDK, always streaming."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        request_timeout_s: float = 600.0,
    ) -> None:
        self._model = model
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key,
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
        acc = StreamAccumulator(on_event=on_event)
        request_id: str | None = None
        idle = request.idle_timeout_s
        clock = asyncio.get_running_loop()
        try:
            # The watchdog is pushed back by every line the server sends (pings included), so it
            # fires only when the connection goes quiet, however long the whole answer takes.
            async with asyncio.timeout(idle) as watchdog:
                create = self._client.messages.with_streaming_response.create
                async with create(**params) as response:
                    request_id = response.headers.get("request-id")
                    parser = SseParser()
                    async for line in response.iter_lines():
                        if idle is not None:
                            watchdog.reschedule(clock.time() + idle)
                        sse = parser.feed_line(line)
                        if sse is not None:
                            acc.feed_sse(sse)
                    last = parser.flush()
                    if last is not None:
                        acc.feed_sse(last)
        except TimeoutError as exc:
            waited = "no response" if request_id is None else "the response stream stalled"
            raise RetryableModelError(f"{waited}: nothing received for {idle:g} s") from exc
        except anthropic.APIError as exc:
            raise _map_api_error(exc) from exc
        except httpx2.HTTPError as exc:
            # The connection broke while the body was streaming: an incomplete response.
            raise RetryableModelError(f"the response stream broke: {exc!r}") from exc
        result = acc.result()
        return ModelResponse(
            message=result.message,
            stop_reason=result.stop_reason,
            usage=result.usage,
            model=result.model or self._model,
            request_id=request_id,
        )


def _map_api_error(exc: anthropic.APIError) -> Exception:
    """Every SDK error becomes a RetryableModelError or a ModelError with advice."""
    if isinstance(exc, anthropic.APITimeoutError):
        return RetryableModelError("the request to the model API timed out")
    if isinstance(exc, anthropic.APIConnectionError):
        return RetryableModelError(f"could not connect to the model API: {exc.message}")
    if not isinstance(exc, anthropic.APIStatusError):
        return ModelError(f"model API error: {exc.message}")
    status = exc.status_code
    etype, message = _error_body(exc.body, exc.message)
    request_id = exc.response.headers.get("request-id")
    if status in RETRYABLE_STATUS or status >= 500:
        return RetryableModelError(
            f"{status} {etype}: {message}",
            status_code=status,
            retry_after=_retry_after(exc.response.headers),
        )
    advice = {
        401: "check ANTHROPIC_API_KEY (it was rejected)",
        403: "the API key is not allowed to use this model or feature",
        404: "check the model name (-m/--model or AGENTCLI_MODEL)",
        413: "the request is too large",
    }.get(status, "")
    reason = TerminalReason.MODEL_ERROR
    if status == 400 and "prompt is too long" in message:
        reason = TerminalReason.CONTEXT_EXHAUSTED
        advice = "the conversation no longer fits the model's context window"
    text = f"{status} {etype}: {message}" + (f" ({advice})" if advice else "")
    return ModelError(
        text, status_code=status, error_type=etype, request_id=request_id, reason=reason
    )


def _error_body(body: object, fallback: str) -> tuple[str, str]:
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            return str(error.get("type", "error")), str(error.get("message", fallback))
    return "error", fallback


def _retry_after(headers: Any) -> float | None:
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None
