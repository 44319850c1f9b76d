"""`--max-requests`: a limit on model requests in flight across the whole batch (the whole
cluster, under Ray), although every task is an `agentcli run` process of its own that knows
nothing of the others.

Each task's `agentcli run` is pointed (`ANTHROPIC_BASE_URL`) at a gate: a small HTTP proxy on
127.0.0.1, started by the worker that runs the task. For each request the gate first takes a
slot from the batch's ledger (`Ledger.try_acquire`, asked again every 20-100 ms until one is
free: in the Ray engine the ledger is one actor that every node asks), then forwards the
request to the real API unchanged and streams the response back as it arrives, and gives the
slot back when the response has ended (or broken). The slot is held for exactly the time the
API works on the request, the time a rate limit counts. Requests wait in no particular order.
While it holds any, the gate renews them every `ledger.RENEW_S` (`Slots.renew`): the ledger
drops the slots of a task it has not heard of for `ledger.LEASE_S` (a worker killed mid-request
takes its gate with it).

The gate reads nothing of what it forwards: headers (the API key among them) and bodies pass
as they are, from a loopback address to the API's own.
"""

from __future__ import annotations

import http.client
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Protocol, Self
from urllib.parse import urlsplit

from agentcli.batch.ledger import RENEW_S

HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "host"}
)
UPSTREAM_TIMEOUT_S = 900.0


class Slots(Protocol):
    def try_acquire(self, holder: str) -> int | None: ...
    def renew(self, holder: str) -> None: ...
    def release(self, holder: str, token: int) -> None: ...


class RequestGate:
    """A proxy to `upstream` (a base URL) that holds one of `slots` per request in flight, in
    the name of `holder` (the task)."""

    def __init__(self, upstream: str, slots: Slots, holder: str) -> None:
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) base URL: {upstream!r}")
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self._slots = slots
        self._holder = holder
        self.forwarded = 0
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
        )
        self._holding = 0
        self._count_lock = threading.Lock()
        self._closed = threading.Event()
        self._renewer = threading.Thread(target=self._renew_while_holding, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> Self:
        self._thread.start()
        self._renewer.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._closed.set()
        self._server.shutdown()
        self._server.server_close()
        self._renewer.join()

    def connection(self) -> http.client.HTTPConnection:
        if self._scheme == "https":
            return http.client.HTTPSConnection(self._host, self._port, timeout=UPSTREAM_TIMEOUT_S)
        return http.client.HTTPConnection(self._host, self._port, timeout=UPSTREAM_TIMEOUT_S)

    def wait_for_slot(self) -> int:
        """A slot's lease token, once one is free."""
        delay = 0.02
        while (token := self._slots.try_acquire(self._holder)) is None:
            time.sleep(delay)
            delay = min(delay * 1.5, 0.1)
        return token

    def held(self, forward: Callable[[], None]) -> None:
        """Run `forward` holding a slot."""
        token = self.wait_for_slot()
        with self._count_lock:
            self._holding += 1
        try:
            self.forwarded += 1
            forward()
        finally:
            with self._count_lock:  # not between a renewal's look at the count and the renewal
                self._holding -= 1
                self._slots.release(self._holder, token)

    def _renew_while_holding(self) -> None:
        while not self._closed.wait(RENEW_S):
            with self._count_lock:
                if not self._holding:
                    continue
                try:
                    self._slots.renew(self._holder)
                except Exception:  # the ledger did not answer: the next period asks again
                    continue

    def target(self, path: str) -> str:
        return f"{self._prefix}{path}"

    def host_header(self) -> str:
        return self._host if self._port is None else f"{self._host}:{self._port}"


def _handler_for(gate: RequestGate) -> type[BaseHTTPRequestHandler]:
    class Handler(_Forward):
        owner = gate

    return Handler


class _Forward(BaseHTTPRequestHandler):
    owner: RequestGate
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self._relay()

    def do_GET(self) -> None:
        self._relay()

    def _relay(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else None
        self.owner.held(lambda: self._forward(body))

    def _forward(self, body: bytes | None) -> None:
        upstream = self.owner.connection()
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            headers["Host"] = self.owner.host_header()
            try:
                upstream.request(self.command, self.owner.target(self.path), body, headers)
                response = upstream.getresponse()
            except OSError as exc:
                self._bad_gateway(exc)
                return
            self.send_response(response.status, response.reason)
            length = response.getheader("content-length")
            for key, value in response.getheaders():
                if key.lower() not in HOP_BY_HOP:
                    self.send_header(key, value)
            if length is None:
                self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            self._copy(response, chunked=length is None)
        finally:
            upstream.close()

    def _copy(self, response: http.client.HTTPResponse, *, chunked: bool) -> None:
        try:
            while data := response.read1(65536):
                if chunked:
                    self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                else:
                    self.wfile.write(data)
                self.wfile.flush()
        except (OSError, http.client.HTTPException):
            self.close_connection = True  # a broken upstream stream reaches the client broken
            return
        if chunked:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    def _bad_gateway(self, exc: OSError) -> None:
        payload = (
            '{"type":"error","error":{"type":"api_error","message":"agentcli batch gate: '
            + f"the API could not be reached ({type(exc).__name__})"
            + '"}}'
        ).encode()
        self.send_response(502)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
