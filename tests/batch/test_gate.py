"""`--max-requests`: the gate in front of the API holds a slot per request in flight."""

from __future__ import annotations

import http.client
import threading
from urllib.parse import urlsplit

import pytest

from agentcli.batch import gate as gate_module
from agentcli.batch.gate import RequestGate
from agentcli.batch.ledger import Ledger, LocalLedger
from agentcli.testing.fake_api import FakeMessagesServer, SseResponse, message_events, text


def _post(url: str, path: str = "/v1/messages") -> tuple[int, bytes, dict[str, str]]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        conn.request(
            "POST",
            path,
            b'{"model": "claude-opus-5-5", "messages": [], "max_tokens": 5}',
            {"content-type": "application/json", "x-api-key": "secret-key"},
        )
        response = conn.getresponse()
        return response.status, response.read(), dict(response.getheaders())
    finally:
        conn.close()


def test_requests_through_the_gate_wait_for_a_slot_and_stream_through() -> None:
    slots = LocalLedger(Ledger(max_cost_usd=None, max_requests=1))
    slow = SseResponse(events=message_events([text("hi there")]), delay_s=0.02)
    with FakeMessagesServer(strict=False) as server:
        server.push(slow, slow, slow)
        gates = [RequestGate(server.base_url + "/", slots, f"t{n}") for n in range(3)]
        answers: list[tuple[int, bytes, dict[str, str]]] = []
        for gate in gates:
            gate.__enter__()
        try:
            threads = [
                threading.Thread(target=lambda g=gate: answers.append(_post(g.url)))
                for gate in gates
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        finally:
            for gate in gates:
                gate.__exit__(None, None, None)
    assert server.max_in_flight == 1  # three clients, one slot: one request at a time
    assert len(server.requests) == 3
    assert all(r.headers["x-api-key"] == "secret-key" for r in server.requests)
    assert all(r.path == "/v1/messages" for r in server.requests)
    for status, body, headers in answers:
        assert status == 200
        assert headers["content-type"] == "text/event-stream"
        assert b"event: message_stop" in body
        assert b"hi there"[:7] in body
    assert sum(gate.forwarded for gate in gates) == 3
    assert slots.try_acquire("after")  # every slot was given back


def test_an_api_the_gate_cannot_reach_is_a_retryable_error() -> None:
    slots = LocalLedger(Ledger(max_cost_usd=None, max_requests=1))
    with RequestGate("http://127.0.0.1:9", slots, "t") as gate:
        status, body, _ = _post(gate.url)
    assert status == 502
    assert b"could not be reached" in body
    assert slots.try_acquire("after")


class CountingSlots:
    """One slot, counting renewals."""

    def __init__(self) -> None:
        self.renewed = threading.Event()
        self.renewals = 0
        self.holding = False
        self.renewed_idle = False

    def try_acquire(self, holder: str) -> int | None:
        self.holding = True
        return 1

    def renew(self, holder: str) -> None:
        self.renewed_idle |= not self.holding
        self.renewals += 1
        self.renewed.set()

    def release(self, holder: str, token: int) -> None:
        self.holding = False


def test_the_gate_renews_its_slot_while_a_response_streams_and_not_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(gate_module, "RENEW_S", 0.05)
    slots = CountingSlots()
    held = threading.Event()
    release = threading.Event()

    def answer(request: object) -> SseResponse:
        held.set()
        release.wait(10)
        return SseResponse(events=message_events([text("done")]))

    with FakeMessagesServer(strict=False, responder=answer) as server:
        with RequestGate(server.base_url, slots, "t1") as gate:
            posted = threading.Thread(target=_post, args=(gate.url,))
            posted.start()
            assert held.wait(10)
            assert slots.renewed.wait(10), "the held slot was never renewed"
            release.set()
            posted.join()
            after = slots.renewals
            threading.Event().wait(0.3)  # six renewal periods with nothing held
            assert slots.renewals == after
    assert not slots.holding and not slots.renewed_idle
