"""Test doubles shipped with agentcli: scripted models and a real-network guard.

    model = ScriptedModel([
        respond(tool_use("read_file", {"path": "a.py"})),
        respond(text("done")),
    ])

`ScriptedModel` fails loudly when called more often than scripted. `FunctionModel(fn)` decides
each response from the request. `guard_network()` makes any connection to a non-loopback address
raise, so no test can reach a real model API. The fake Messages API server for end-to-end tests
is in `agentcli.testing.fake_api`.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

from agentcli.errors import ModelError, RetryableModelError
from agentcli.events import EventSink, TextDelta
from agentcli.messages import Message, TextBlock, block_from_wire
from agentcli.model import ModelRequest, ModelResponse
from agentcli.testing.fake_api import text, thinking, tool_use
from agentcli.usage import Usage

__all__ = [
    "FunctionModel",
    "RealNetworkCallError",
    "ScriptExhaustedError",
    "ScriptedModel",
    "guard_network",
    "respond",
    "text",
    "thinking",
    "tool_use",
]

Step = ModelResponse | ModelError | RetryableModelError


class ScriptExhaustedError(AssertionError):
    """The code under test called the model more often than the script allows."""


def respond(
    *blocks: dict[str, Any],
    stop_reason: str | None = None,
    usage: Usage | None = None,
) -> ModelResponse:
    """A complete assistant response made of wire-format blocks (see `text`, `tool_use`)."""
    content = tuple(block_from_wire(b) for b in blocks)
    if stop_reason is None:
        stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    return ModelResponse(
        message=Message(role="assistant", content=content),
        stop_reason=stop_reason,
        usage=usage or Usage(input_tokens=100, output_tokens=20),
        model="scripted",
    )


def _stream_text(response: ModelResponse, on_event: EventSink) -> None:
    for block in response.message.content:
        if isinstance(block, TextBlock) and block.text:
            on_event(TextDelta(text=block.text))


class ScriptedModel:
    """Returns (or raises) the scripted steps in order; records every request."""

    def __init__(self, steps: Sequence[Step], *, model: str = "scripted") -> None:
        self._steps = list(steps)
        self._model = model
        self.requests: list[ModelRequest] = []

    @property
    def model(self) -> str:
        return self._model

    @property
    def remaining(self) -> int:
        return len(self._steps)

    async def aclose(self) -> None:
        """Nothing to close: no connection was ever opened."""

    async def complete(self, request: ModelRequest, on_event: EventSink) -> ModelResponse:
        self.requests.append(_snapshot(request))
        if not self._steps:
            raise ScriptExhaustedError(
                f"model called {len(self.requests)} times but only "
                f"{len(self.requests) - 1} responses were scripted"
            )
        step = self._steps.pop(0)
        if isinstance(step, Exception):
            raise step
        _stream_text(step, on_event)
        return step


class FunctionModel:
    """Calls `fn(request)` for each response: for scripts that depend on what was sent."""

    def __init__(
        self,
        fn: Callable[[ModelRequest], Awaitable[ModelResponse] | ModelResponse],
        *,
        model: str = "function",
    ) -> None:
        self._fn = fn
        self._model = model
        self.requests: list[ModelRequest] = []

    @property
    def model(self) -> str:
        return self._model

    async def aclose(self) -> None:
        """Nothing to close: no connection was ever opened."""

    async def complete(self, request: ModelRequest, on_event: EventSink) -> ModelResponse:
        self.requests.append(_snapshot(request))
        result = self._fn(request)
        response = result if isinstance(result, ModelResponse) else await result
        _stream_text(response, on_event)
        return response


def _snapshot(request: ModelRequest) -> ModelRequest:
    """Requests hold the live history list; keep a copy of what was sent at the time."""
    return ModelRequest(
        system=request.system,
        messages=tuple(request.messages),
        tools=tuple(request.tools),
        max_tokens=request.max_tokens,
        effort=request.effort,
        spec=request.spec,
    )


class RealNetworkCallError(AssertionError):
    """A test tried to connect somewhere other than the loopback interface."""


def _is_loopback(address: Any) -> bool:
    if isinstance(address, str | bytes):  # AF_UNIX
        return True
    host = address[0] if isinstance(address, tuple) and address else address
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@contextlib.contextmanager
def guard_network() -> Iterator[None]:
    """Refuse every connection that does not go to 127.0.0.1 / ::1 / a Unix socket."""
    original_connect = socket.socket.connect
    original_connect_ex = socket.socket.connect_ex

    def connect(self: socket.socket, address: Any) -> None:
        if not _is_loopback(address):
            raise RealNetworkCallError(f"test tried to reach the network: {address!r}")
        original_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if not _is_loopback(address):
            raise RealNetworkCallError(f"test tried to reach the network: {address!r}")
        return original_connect_ex(self, address)

    socket.socket.connect = connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        socket.socket.connect = original_connect  # type: ignore[method-assign]
        socket.socket.connect_ex = original_connect_ex  # type: ignore[method-assign]
