"""A deferred model client is made once, on the first request, off the event loop."""

from __future__ import annotations

import asyncio
import threading

from agentcli.events import EventSink
from agentcli.model import ModelClient, ModelRequest, ModelResponse
from agentcli.model.deferred import DeferredModel
from agentcli.testing import respond, text

REQUEST = ModelRequest(system="s", messages=(), tools=(), max_tokens=10)


def discard(_event: object) -> None:
    pass


class Client:
    model = "m"

    def __init__(self) -> None:
        self.closed = False

    async def complete(self, request: ModelRequest, on_event: EventSink) -> ModelResponse:
        return respond(text("hi"))

    async def aclose(self) -> None:
        self.closed = True


async def test_made_once_in_a_worker_thread_for_requests_that_wait_together() -> None:
    made: list[str] = []
    gate = threading.Event()
    client = Client()

    def build() -> ModelClient:
        made.append(threading.current_thread().name)
        gate.wait(timeout=30)
        return client

    model = DeferredModel("m", build)
    first = asyncio.create_task(model.complete(REQUEST, discard))
    second = asyncio.create_task(model.complete(REQUEST, discard))
    while not made:  # the loop keeps running while the client is being made
        await asyncio.sleep(0)
    gate.set()
    answers = await asyncio.gather(first, second)
    assert [a.message.text for a in answers] == ["hi", "hi"]
    assert len(made) == 1 and made[0] != threading.current_thread().name
    await model.aclose()
    assert client.closed


async def test_closing_a_client_never_made_makes_nothing() -> None:
    made: list[int] = []
    model = DeferredModel("m", lambda: made.append(1) or Client())  # type: ignore[func-returns-value]
    await model.aclose()
    assert made == [] and model.model == "m"
