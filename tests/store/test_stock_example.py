"""Idempotency keys end to end: the stock example's tools against a real localhost service that
honours keys, driven by scripted models through the real runtime and journal."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcli.call_records import CallStatus
from agentcli.messages import ToolResultBlock
from agentcli.permissions import PermissionMode
from agentcli.store import MemoryJournal, queries
from agentcli.store.ledger import Operation, OperationState, fingerprint
from agentcli.testing import ScriptedModel, respond, text, tool_use
from examples.stock_reservation.service import StockServer
from examples.stock_reservation.tools import LookupStock, ReserveStock

RESERVE = {"order_id": "o-17", "sku": "A1", "quantity": 2}


@pytest.fixture
def server() -> Iterator[StockServer]:
    with StockServer() as running:
        yield running


@pytest.fixture(params=["memory", "sqlite"])
def journal(request: Any, journal_factory: Any, workspace: Path) -> Any:
    if request.param == "memory":
        return MemoryJournal()
    return journal_factory(workspace, f"S-STOCK-{request.node.name}")


def results(manager: Any) -> list[ToolResultBlock]:
    return [r for m in manager.messages for r in m.tool_results]


async def run(
    manager_factory: Any, workspace: Path, journal: Any, server: StockServer, *calls: Any
) -> Any:
    model = ScriptedModel([*(respond(call) for call in calls), respond(text("done"))])
    manager = manager_factory(
        model,
        workspace,
        journal,
        tools=[LookupStock(server.base_url), ReserveStock(server.base_url)],
        mode=PermissionMode.YOLO,
    )
    result = await manager.run_task("reserve two A1 for order o-17")
    return manager, result


async def test_lookup_then_reserve(
    server: StockServer, journal: Any, manager_factory: Any, workspace: Path
) -> None:
    manager, result = await run(
        manager_factory,
        workspace,
        journal,
        server,
        tool_use("lookup_stock", {"sku": "A1"}),
        tool_use("reserve_stock", RESERVE),
    )
    found, reserved = results(manager)
    assert found.content == "3 units of A1 are available right now"
    assert reserved.content == "reserved 2 x A1 (reservation R0001); 1 left"
    assert server.service.applied == ["reserve:o-17:A1"]
    assert [c["status"] for c in result.tool_calls] == ["succeeded", "succeeded"]


async def test_a_retry_with_a_new_call_id_is_replayed_not_redone(
    server: StockServer, journal: Any, manager_factory: Any, workspace: Path
) -> None:
    manager, _ = await run(
        manager_factory,
        workspace,
        journal,
        server,
        tool_use("reserve_stock", RESERVE, id="first"),
        tool_use("reserve_stock", RESERVE, id="retry"),
    )
    first, retry = results(manager)
    assert not retry.is_error
    assert retry.content.startswith("[replayed] operation 'reserve:o-17:A1' already succeeded")
    assert "NOT performed again" in retry.content and first.content in retry.content
    assert server.service.applied == ["reserve:o-17:A1"]
    assert server.service.stock["A1"] == 1
    if not isinstance(journal, MemoryJournal):
        calls = {c.call_id: c for c in queries.load_calls(journal.conn, journal.session_id)}
        assert calls["retry"].replayed and not calls["first"].replayed


async def test_same_key_with_a_different_request_is_a_conflict(
    server: StockServer, journal: Any, manager_factory: Any, workspace: Path
) -> None:
    manager, result = await run(
        manager_factory,
        workspace,
        journal,
        server,
        tool_use("reserve_stock", RESERVE),
        tool_use("reserve_stock", {**RESERVE, "quantity": 3}),
    )
    _, changed = results(manager)
    assert changed.is_error and changed.content.startswith("[conflict] operation key")
    assert server.service.applied == ["reserve:o-17:A1"]
    assert result.tool_calls[1]["status"] == "failed"


async def test_a_definite_failure_frees_the_key(
    server: StockServer, journal: Any, manager_factory: Any, workspace: Path
) -> None:
    manager, _ = await run(
        manager_factory,
        workspace,
        journal,
        server,
        tool_use("reserve_stock", {**RESERVE, "quantity": 5}),
        tool_use("reserve_stock", RESERVE),
    )
    too_many, fits = results(manager)
    assert too_many.is_error and "only 3 units of A1 are available" in too_many.content
    assert fits.content.startswith("reserved 2 x A1")
    assert server.service.applied == ["reserve:o-17:A1"]


async def test_a_lost_response_is_unknown_then_reconciled_never_reserved_twice(
    server: StockServer, journal: Any, manager_factory: Any, workspace: Path
) -> None:
    server.service.drop_next_response = True
    manager, _ = await run(
        manager_factory,
        workspace,
        journal,
        server,
        tool_use("reserve_stock", RESERVE),
        tool_use("reserve_stock", RESERVE),
    )
    lost, retried = results(manager)
    assert lost.is_error and lost.content.startswith("[outcome_unknown] no response")
    assert retried.content.startswith("[replayed]")
    assert "reserved 2 x A1 (reservation R0001)" in retried.content
    assert server.service.applied == ["reserve:o-17:A1"]


async def test_an_unknown_outcome_the_tool_cannot_check_stays_unknown(
    server: StockServer, journal: Any, manager_factory: Any, workspace: Path
) -> None:
    # As a crash leaves it: claimed (write-ahead) but never finished, and the service is gone.
    journal.operations.claim(
        Operation(
            tool="reserve_stock",
            key="reserve:o-17:A1",
            fingerprint=fingerprint(RESERVE),
            state=OperationState.STARTED,
            call_id="crashed",
        )
    )
    server.__exit__()
    manager, result = await run(
        manager_factory, workspace, journal, server, tool_use("reserve_stock", RESERVE)
    )
    (blocked,) = results(manager)
    assert blocked.is_error
    assert blocked.content.startswith("[outcome_unknown] an earlier call (crashed)")
    assert "It was not performed again" in blocked.content
    assert result.tool_calls[0]["status"] == CallStatus.FAILED.value
    assert journal.operations.get("reserve_stock", "reserve:o-17:A1").state == "started"


async def test_the_ledger_is_shared_across_sessions(
    server: StockServer,
    conn: sqlite3.Connection,
    journal_factory: Any,
    manager_factory: Any,
    workspace: Path,
) -> None:
    await run(
        manager_factory,
        workspace,
        journal_factory(workspace, "S-ONE"),
        server,
        tool_use("reserve_stock", RESERVE),
    )
    manager, _ = await run(
        manager_factory,
        workspace,
        journal_factory(workspace, "S-TWO"),
        server,
        tool_use("reserve_stock", RESERVE),
    )
    (again,) = results(manager)
    assert again.content.startswith("[replayed]")
    assert server.service.applied == ["reserve:o-17:A1"]
    row = conn.execute("SELECT state, session_id FROM idempotency").fetchone()
    assert tuple(row) == ("succeeded", "S-ONE")
