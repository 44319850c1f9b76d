"""The OpenAI-compatible provider: Chat Completions over a thin HTTP transport (`httpx2`).

Why not the `openai` SDK: it would do little here that is not done already. Retries are
`model.retry`'s (the SDK's would be off, as the Anthropic SDK's are), SSE framing is
`model.stream.SseParser`, the tool-call deltas are assembled by `model.openai_stream` either
way (the SDK's helper knows nothing of a call cut at `length`), and the request body is ours
(`model.openai_request`).
What is left is one POST with a bearer token and a status-to-error table (`_status_error`,
the one place errors are mapped). Importing the SDK costs ~0.4 s and ~900 modules; httpx2,
which agentcli uses anyway, ~0.1 s (README, "Other models").
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2

from agentcli import __version__
from agentcli.errors import ModelError, RetryableModelError
from agentcli.events import EventSink, Notice
from agentcli.model import ModelRequest, ModelResponse
from agentcli.model.openai_request import chat_request_body
from agentcli.model.openai_stream import ChatStreamAccumulator
from agentcli.model.request import encode_request
from agentcli.model.stream import ServerSentEvent, SseParser
from agentcli.model.wire import RETRYABLE_STATUS, retry_after
from agentcli.provider import OpenAIEndpoint
from agentcli.terminal_reason import TerminalReason

NO_USAGE = (
    "the server reports no token usage (stream_options.include_usage): tokens are not counted "
    "and the cost is unknown"
)
_CONTEXT_MARKERS = (
    "context_length_exceeded",  # OpenAI
    "maximum context length",  # OpenAI, vLLM
    "exceed_context_size",  # llama.cpp
    "context window",
)


class OpenAIChatModel:
    """A ModelClient for an OpenAI-compatible Chat Completions server, always streaming."""

    def __init__(
        self, model: str, endpoint: OpenAIEndpoint, *, request_timeout_s: float = 600.0
    ) -> None:
        self._model = model
        self._endpoint = endpoint
        self._said_no_usage = False
        self._reached = False
        """The server has answered a request of this client: from then on a failed connection
        is worth retrying (it was there); before, it is most likely the wrong address."""
        headers = {"accept": "text/event-stream", "user-agent": f"agentcli/{__version__}"}
        if endpoint.api_key is not None:
            headers["authorization"] = f"Bearer {endpoint.api_key}"
        self._client = httpx2.AsyncClient(
            headers=headers, timeout=httpx2.Timeout(request_timeout_s, connect=30.0)
        )

    @property
    def model(self) -> str:
        return self._model

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.aclose()

    async def complete(self, request: ModelRequest, on_event: EventSink) -> ModelResponse:
        taken = frozenset(call.id for m in request.messages for call in m.tool_uses)
        acc = ChatStreamAccumulator(on_event=on_event, taken_ids=taken)
        request_id = await self._exchange(chat_request_body(self._model, request), acc, request)
        result = acc.result()
        if not result.usage_known and not self._said_no_usage:
            self._said_no_usage = True
            on_event(Notice(level="warning", message=NO_USAGE))
        return ModelResponse(
            message=result.message,
            stop_reason=result.stop_reason,
            usage=result.usage,
            model=result.model or self._model,
            request_id=request_id,
            usage_known=result.usage_known,
        )

    async def _exchange(
        self, body: dict[str, Any], acc: ChatStreamAccumulator, request: ModelRequest
    ) -> str | None:
        """POST the request and feed what comes back to `acc`; returns the request id. Every
        transport failure becomes a RetryableModelError, every error status ours."""
        answered = False
        idle = request.idle_timeout_s
        url = self._endpoint.chat_url
        try:
            # Pushed back by every line the server sends: it fires only when the connection
            # goes quiet, however long the whole answer takes.
            async with (
                asyncio.timeout(idle) as watchdog,
                self._client.stream(
                    "POST", url, content=encode_request(body), headers=JSON_CONTENT
                ) as response,
            ):
                answered = self._reached = True
                if response.status_code >= 400:
                    raise _status_error(response.status_code, await response.aread(), response)
                if "json" in response.headers.get("content-type", ""):
                    _feed_whole(acc, await response.aread())  # a server that does not stream
                else:
                    await _feed_stream(acc, response, watchdog, idle)
                return response.headers.get("x-request-id")
        except TimeoutError as exc:
            waited = "the response stream stalled" if answered else "no response"
            raise RetryableModelError(f"{waited}: nothing received for {idle:g} s") from exc
        except httpx2.TimeoutException as exc:
            raise RetryableModelError(f"the request to {url} timed out") from exc
        except httpx2.ConnectError as exc:
            if not self._reached:  # no server there (yet): retrying for half a minute won't help
                raise ModelError(
                    f"could not connect to the model server at {url}: {exc or type(exc).__name__}"
                    " (is OPENAI_BASE_URL, or `base_url` in the config, its address, and is it "
                    "running?)"
                ) from exc
            raise RetryableModelError(f"could not connect to {url}: {exc}") from exc
        except httpx2.HTTPError as exc:
            # The connection broke while the body was streaming: an incomplete response.
            raise RetryableModelError(f"the response stream broke: {exc!r}") from exc


async def _feed_stream(
    acc: ChatStreamAccumulator,
    response: httpx2.Response,
    watchdog: asyncio.Timeout,
    idle: float | None,
) -> None:
    """The SSE lines of `response`, until `[DONE]` or the end of the body (a whole response
    only if it brought both the finish_reason and the usage)."""
    clock = asyncio.get_running_loop()
    parser = SseParser()
    async for line in response.aiter_lines():
        if idle is not None:
            watchdog.reschedule(clock.time() + idle)
        sse = parser.feed_line(line)
        if sse is not None:
            acc.feed_sse(sse)
        if acc.done:
            return  # `[DONE]`: whatever the server does with the connection now
    last = parser.flush()
    if last is not None:
        acc.feed_sse(last)
    if not acc.done:
        acc.end_without_done()


def _feed_whole(acc: ChatStreamAccumulator, data: bytes) -> None:
    """A whole (non-streamed) completion, fed as the one chunk it amounts to."""
    try:
        whole = json.loads(data)
    except json.JSONDecodeError as exc:
        raise RetryableModelError(f"the response is not JSON: {exc}") from exc
    if not isinstance(whole, dict):
        raise RetryableModelError("the response is not a JSON object")
    choices = [
        {
            "index": c.get("index", 0),
            "delta": c.get("message"),
            "finish_reason": c.get("finish_reason"),
        }
        for c in whole.get("choices") or []
        if isinstance(c, dict)
    ]
    acc.feed_sse(ServerSentEvent(event=None, data=json.dumps({**whole, "choices": choices})))


def _status_error(status: int, data: bytes, response: httpx2.Response) -> Exception:
    """An HTTP error status as a RetryableModelError (429, 5xx, …) or a ModelError with advice."""
    etype, message, code = _error_body(data)
    if status in RETRYABLE_STATUS or status >= 500:
        return RetryableModelError(
            f"{status} {etype}: {message}",
            status_code=status,
            retry_after=retry_after(response.headers),
        )
    advice = {
        401: "check OPENAI_API_KEY (the server rejected it)",
        403: "the API key is not allowed to use this model",
        404: f"check the model name (-m/--model) and OPENAI_BASE_URL (requests go to "
        f"{response.request.url})",
        413: "the request is too large",
    }.get(status, "")
    reason = TerminalReason.MODEL_ERROR
    lowered = f"{etype} {code} {message}".lower()
    if status == 400 and any(marker in lowered for marker in _CONTEXT_MARKERS):
        reason = TerminalReason.CONTEXT_EXHAUSTED
        advice = "the conversation no longer fits the model's context window"
    text = f"{status} {etype}: {message}" + (f" ({advice})" if advice else "")
    request_id = response.headers.get("x-request-id")
    return ModelError(
        text, status_code=status, error_type=etype, request_id=request_id, reason=reason
    )


def _error_body(data: bytes) -> tuple[str, str, str]:
    """(type, message, code) of an error body, in the shapes servers use: OpenAI's
    `{"error": {"message", "type", "code"}}`, `{"error": "..."}`, `{"detail": ...}`, or text."""
    text = data.decode("utf-8", "replace").strip()
    try:
        body: Any = json.loads(text)
    except json.JSONDecodeError:
        return "error", text[:300] or "(no message)", ""
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict):
        message = error.get("message") or error.get("detail") or json.dumps(error)[:300]
        etype = error.get("type") or "error"
        return str(etype), str(message), str(error.get("code") or "")
    return "error", str(error)[:300], ""


JSON_CONTENT = {"content-type": "application/json"}
