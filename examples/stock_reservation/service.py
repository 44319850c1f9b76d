"""A fake inventory service on 127.0.0.1 that honours idempotency keys, like a real payment or
order API would (Stripe-style `Idempotency-Key` header).

    GET  /stock/<sku>             -> 200 {"sku", "available"} | 404
    POST /reservations            -> 201 {"reservation_id", "sku", "quantity", "remaining"}
         Idempotency-Key: <key>      same key + same body again -> 200, the same reservation,
         {"sku", "quantity"}         "replayed": true; same key + other body -> 422;
                                     not enough stock -> 409 (nothing stored: the key stays free)
    GET  /reservations/<key>      -> 200 the reservation made under that key | 404

`drop_next_response = True` makes the service commit the next reservation and then close the
connection without answering: the caller sees no response although the write happened. That is
the case idempotency keys exist for ("no response is not 'not written'").
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote


@dataclass
class StockService:
    stock: dict[str, int] = field(default_factory=lambda: {"A1": 3, "B2": 10})
    reservations: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Idempotency key -> the reservation (with the request it answered)."""
    applied: list[str] = field(default_factory=list)
    """Every reservation actually applied to the stock, in order (tests count these)."""
    drop_next_response: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def lookup(self, sku: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            if sku not in self.stock:
                return 404, {"error": "not_found", "sku": sku}
            return 200, {"sku": sku, "available": self.stock[sku]}

    def reserve(self, key: str, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            held = self.reservations.get(key)
            if held is not None:
                if held["request"] != request:
                    return 422, {"error": "idempotency_key_reused", "key": key}
                return 200, {**held["reservation"], "replayed": True}
            sku, quantity = request.get("sku"), request.get("quantity")
            if sku not in self.stock or not isinstance(quantity, int) or quantity < 1:
                return 400, {"error": "invalid_request"}
            if self.stock[sku] < quantity:
                return 409, {"error": "insufficient_stock", "available": self.stock[sku]}
            self.stock[sku] -= quantity
            reservation = {
                "reservation_id": f"R{next(self._ids):04d}",
                "sku": sku,
                "quantity": quantity,
                "remaining": self.stock[sku],
            }
            self.reservations[key] = {"request": request, "reservation": reservation}
            self.applied.append(key)
            return 201, reservation

    def find(self, key: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            held = self.reservations.get(key)
            if held is None:
                return 404, {"error": "not_found", "key": key}
            return 200, held["reservation"]


class _Handler(BaseHTTPRequestHandler):
    service: StockService
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.startswith("/stock/"):
            self._send(*self.service.lookup(unquote(self.path.removeprefix("/stock/"))))
        elif self.path.startswith("/reservations/"):
            self._send(*self.service.find(unquote(self.path.removeprefix("/reservations/"))))
        else:
            self._send(404, {"error": "no such endpoint"})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        key = self.headers.get("idempotency-key")
        if self.path != "/reservations" or not key:
            self._send(400, {"error": "POST /reservations needs an Idempotency-Key header"})
            return
        status, payload = self.service.reserve(key, body)
        if self.service.drop_next_response:
            self.service.drop_next_response = False
            self.close_connection = True
            return  # committed, but the caller never hears about it
        self._send(status, payload)

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class StockServer:
    """Runs a `StockService` on 127.0.0.1 (a free port) in a background thread."""

    def __init__(self, service: StockService | None = None) -> None:
        self.service = service or StockService()
        handler = type("Handler", (_Handler,), {"service": self.service})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> StockServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
