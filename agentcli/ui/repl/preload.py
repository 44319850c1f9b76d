"""Background imports: the loop, the tools, rich markdown and the model client load in a
worker thread while the user types, so the prompt appears at once and the first task does not
wait for them (or waits only for what is still loading)."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import threading
import time
from collections.abc import Callable
from types import ModuleType

HEAVY_MODULES = (
    "agentcli.ui.repl.backend",
    "agentcli.ui.repl.stream",
    "agentcli.ui.term.prompter",
    "agentcli.model.http",
)


class Preloader:
    def __init__(
        self,
        modules: tuple[str, ...] = HEAVY_MODULES,
        then: Callable[[], None] | None = None,
    ) -> None:
        self.modules = modules
        self.then = then
        """Called in the preload thread once the modules are imported (e.g. to warm a client)."""
        self.started_at: float | None = None
        self.finished_at: float | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self.started_at = time.monotonic()
            self._thread = threading.Thread(target=self._run, name="agentcli-preload", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        for name in self.modules:
            # A failure here is not lost: the import is repeated, and raises, where it is needed.
            with contextlib.suppress(Exception):
                importlib.import_module(name)
        if self.then is not None:
            with contextlib.suppress(Exception):
                self.then()
        self.finished_at = time.monotonic()

    @property
    def done(self) -> bool:
        return self.finished_at is not None

    async def load(self, name: str) -> ModuleType:
        """The module, imported off the event loop. If the preload thread is importing it right
        now, this waits for that import (Python's per-module import lock) instead of redoing it."""
        return await asyncio.to_thread(importlib.import_module, name)
