"""A model client made on the first request instead of up front.

Making the Anthropic client imports the SDK (~2 s). Up front, that delayed creating the session
and journaling the task's prompt, so a kill during those seconds lost the prompt; in the REPL it
froze the terminal. Deferred, the session and the prompt are on disk first, the import runs in
a worker thread (beside the start snapshot), and Ctrl-C still works while it runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from agentcli.events import EventSink
from agentcli.model import ModelClient, ModelRequest, ModelResponse


class DeferredModel:
    """A ModelClient for model `name` whose real client `build()` makes, in a worker thread,
    when the first request goes out (once, however many requests are waiting)."""

    def __init__(self, name: str, build: Callable[[], ModelClient]) -> None:
        self._name = name
        self._build = build
        self._client: ModelClient | None = None
        self._making: asyncio.Lock | None = None

    @property
    def model(self) -> str:
        return self._name

    async def client(self) -> ModelClient:
        """The real client, made now if it was not yet."""
        if self._client is None:
            self._making = self._making or asyncio.Lock()
            async with self._making:
                if self._client is None:
                    self._client = await asyncio.to_thread(self._build)
        return self._client

    async def complete(self, request: ModelRequest, on_event: EventSink) -> ModelResponse:
        return await (await self.client()).complete(request, on_event)

    async def aclose(self) -> None:
        """Close the real client's connections, if it was ever made."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()
