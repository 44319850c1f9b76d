"""A local HTTP server in a thread that answers requests from a script, in order, and records
every request: what the fake Messages API and the fake Chat Completions server share.

Only ever on 127.0.0.1, on a port the OS picks. The protocol (routes, bodies, SSE) is the
subclass's handler's; this holds the script, the record and the server's life.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Generic, Self, TypeVar

from agentcli.testing.fake_responses import HangResponse, RawResponse, RecordedRequest, next_id

R = TypeVar("R")


class ScriptedServer(Generic[R]):
    """Scripted responses of type `R`, served by `handler` (whose requests call `_take`)."""

    path_prefix = ""
    """What `base_url` ends with (e.g. `/v1` where clients expect the API version in it)."""

    def __init__(
        self,
        handler: type[BaseHTTPRequestHandler],
        *,
        responder: Callable[[RecordedRequest], R | None] | None = None,
    ) -> None:
        self._script: list[R] = []
        self.route: Callable[[RecordedRequest], R | None] | None = None
        """Answers each request by its shape, before the script (None: take the script's
        next). Called outside the server's lock, in the request's own thread: it may wait for
        other requests (to prove they are in flight together)."""
        self._lock = threading.Lock()
        self.responder = responder
        """Answers a request the script has no response left for (None: none), from what the
        request says: a long session whose requests depend on what the client decided
        (compactions), or one server for many concurrent clients, each on its own script."""
        self.requests: list[RecordedRequest] = []
        self.unscripted_requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        """The most requests being answered at once so far."""
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

    def answer_by(self, route: Callable[[RecordedRequest], R | None]) -> None:
        """Answer each request with `route(request)` (its shape decides: a subagent's by its
        system prompt, say); None falls back to the script."""
        self.route = route

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
        """Record `request` and take the next scripted response, else the responder's; None
        when neither has one (counted in `unscripted_requests`). `first`, under the same lock,
        may answer instead (a refusal) and keep the script as it is. The responder is called
        outside the lock: it may wait (a test holding one client's response)."""
        with self._lock:
            self.requests.append(request)
            answer = first() if first is not None else None
            if answer is not None:
                return answer
            route = self.route
        routed = route(request) if route is not None else None
        if routed is not None:
            return routed
        with self._lock:
            if self._script:
                return self._script.pop(0)
            responder = self.responder
            if responder is None:
                self.unscripted_requests += 1
                return None
        answered = responder(request)
        if answered is None:
            with self._lock:
                self.unscripted_requests += 1
        return answered

    def _entered(self, change: int) -> None:
        with self._lock:
            self.in_flight += change
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

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


class ScriptedHandler(BaseHTTPRequestHandler):
    """Answers each POST with its server's next scripted response: a hang, a plain response,
    or a stream (`send_stream`, the protocol's own: SSE frames written with `send_frame`)."""

    owner: Any
    protocol_version = "HTTP/1.1"
    request_id_header = "request-id"
    raw_request_id = True
    """Whether a plain (error) response carries a request id too."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.owner._entered(1)
        try:
            response = self.owner._next(self.record())
            if isinstance(response, HangResponse):
                time.sleep(response.seconds)
                self.close_connection = True
            elif isinstance(response, RawResponse):
                self.send_raw(response)
            else:
                self.send_stream(response)
        finally:
            self.owner._entered(-1)

    def send_stream(self, response: Any) -> None:
        raise NotImplementedError

    def record(self) -> RecordedRequest:
        length = int(self.headers.get("content-length", "0"))
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        headers = {k.lower(): v for k, v in self.headers.items()}
        return RecordedRequest(method="POST", path=self.path, headers=headers, body=body)

    def send_raw(self, response: RawResponse) -> None:
        self.send_response(response.status)
        self.send_header("content-type", response.content_type)
        self.send_header("content-length", str(len(response.body)))
        if self.raw_request_id:
            self.send_header(self.request_id_header, f"req_fake{next_id():04d}")
        for key, value in response.headers.items():
            self.send_header(key.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(response.body)

    def start_stream(self, headers: dict[str, str]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.send_header(self.request_id_header, f"req_fake{next_id():04d}")
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()

    def send_frame(self, frame: str) -> None:
        data = frame.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def cut(self) -> None:
        """End the connection without the terminating chunk: the client sees a broken stream."""
        self.close_connection = True
        self.wfile.flush()

    def hold_until_closing(self) -> None:
        self.owner.closing.wait()
        self.close_connection = True

    def end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
