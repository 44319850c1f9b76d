"""A local HTTP server in a thread that answers requests from a script, in order, and records
every request: what the fake Messages API and the fake Chat Completions server share.

Only ever on 127.0.0.1, on a port the OS picks. The protocol (routes, bodies, SSE) is the
subclass's handler's; this holds the script, the record and the server's life.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Generic, Self, TypeVar

from agentcli.testing.fake_responses import RecordedRequest

R = TypeVar("R")


class ScriptedServer(Generic[R]):
    """Scripted responses of type `R`, served by `handler` (whose requests call `_take`)."""

    path_prefix = ""
    """What `base_url` ends with (e.g. `/v1` where clients expect the API version in it)."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._script: list[R] = []
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self.unscripted_requests = 0
        self.closing = threading.Event()
        """Set when the server shuts down: what a stalled or held-open response waits for."""
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{self.path_prefix}"

    def push(self, *responses: R) -> None:
        with self._lock:
            self._script.extend(responses)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    def _take(
        self, request: RecordedRequest, first: Callable[[], R | None] | None = None
    ) -> R | None:
        """Record `request` and take the next scripted response; None when none is left
        (counted in `unscripted_requests`). `first`, under the same lock, may answer instead
        (a refusal) and keep the script as it is."""
        with self._lock:
            self.requests.append(request)
            answer = first() if first is not None else None
            if answer is not None:
                return answer
            if self._script:
                return self._script.pop(0)
            self.unscripted_requests += 1
            return None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.closing.set()
        self._server.shutdown()
        self._server.server_close()

    def _problems_of(self, check: Callable[[Sequence[Any]], list[str]]) -> list[str]:
        """`check`'s problems with the messages of every recorded request, numbered."""
        return [
            f"request {n}: {problem}"
            for n, request in enumerate(self.requests)
            for problem in check(request.body.get("messages", []))
        ]

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.stop()
