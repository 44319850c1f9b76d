"""The design documents' stock example as agentcli tools: a read-only lookup and a reservation
with an operation key.

`reserve_stock` is an external side effect. A model that retries it (after a timeout, a crash,
or just because) sends a new call id for the same business action, so the call id cannot
deduplicate it. The operation key `reserve:<order_id>:<sku>` can: agentcli's runtime replays the
recorded result of a reservation that already succeeded, refuses the same key with a different
quantity (`conflict`), and when an earlier attempt's outcome is unknown (no response, or the
process died) asks `reconcile`, which looks the reservation up by its key instead of guessing.
The service itself also honours the key, so even a retry that reached it twice reserves once.

    from examples.stock_reservation.tools import LookupStock, ReserveStock
    tools = [LookupStock(base_url), ReserveStock(base_url)]
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote

from pydantic import Field

from agentcli.errors import ToolError, ToolErrorKind
from agentcli.tools.base import (
    PermissionTarget,
    Resources,
    Risk,
    Tool,
    ToolContext,
    ToolInput,
    ToolOutput,
)

TIMEOUT_S = 10.0


class LookupStockInput(ToolInput):
    sku: str = Field(description="The product's SKU, e.g. 'A1'.", min_length=1, max_length=64)


class ReserveStockInput(ToolInput):
    order_id: str = Field(
        description="The order this reservation belongs to (the business reference; one "
        "reservation per order and SKU).",
        min_length=1,
        max_length=64,
    )
    sku: str = Field(description="The product's SKU, e.g. 'A1'.", min_length=1, max_length=64)
    quantity: int = Field(description="Units to reserve.", ge=1, le=10_000)


def _request(
    url: str, *, body: dict[str, Any] | None = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url,
        data=data,
        method="GET" if body is None else "POST",
        headers={"content-type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            return int(response.status), json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


class LookupStock(Tool[LookupStockInput]):
    name = "lookup_stock"
    description = (
        "Look up how many units of a product (by SKU) are available for sale right now. "
        "Read-only: it reserves nothing, and the number can change at any moment, so it is not "
        "a promise that a later reservation will succeed."
    )
    input_model = LookupStockInput
    risk = Risk.READ

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")

    def resources(self, args: LookupStockInput, ctx: ToolContext) -> Resources:
        return Resources(reads=frozenset({f"stock:{args.sku}"}))

    async def call(self, args: LookupStockInput, ctx: ToolContext) -> ToolOutput:
        url = f"{self.base_url}/stock/{quote(args.sku, safe='')}"
        try:
            status, payload = await asyncio.to_thread(_request, url)
        except OSError as exc:
            raise ToolError(
                ToolErrorKind.INTERNAL, f"the stock service is unreachable: {exc}"
            ) from exc
        if status == 404:
            raise ToolError(ToolErrorKind.NOT_FOUND, f"no product with SKU {args.sku!r}")
        return ToolOutput(
            text=f"{payload['available']} units of {args.sku} are available right now",
            source={"service": self.base_url, "sku": args.sku},
        )


class ReserveStock(Tool[ReserveStockInput]):
    name = "reserve_stock"
    description = (
        "Reserve units of a product for an order. This changes the stock in the inventory "
        "service (an external side effect). One reservation per order and SKU: repeating the "
        "same reservation returns the existing one instead of reserving twice; asking again "
        "for the same order and SKU with a different quantity is refused as a conflict. Look "
        "the stock up first; do not guess it."
    )
    input_model = ReserveStockInput
    risk = Risk.EXTERNAL

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")

    def permission_target(self, args: ReserveStockInput, ctx: ToolContext) -> PermissionTarget:
        return PermissionTarget(
            rule_class=self.name,
            subject=args.sku,
            summary=f"reserve {args.quantity} x {args.sku} for order {args.order_id}",
        )

    def resources(self, args: ReserveStockInput, ctx: ToolContext) -> Resources:
        return Resources(writes=frozenset({f"stock:{args.sku}"}))

    def operation_key(self, args: ReserveStockInput) -> str:
        return f"reserve:{args.order_id}:{args.sku}"

    async def call(self, args: ReserveStockInput, ctx: ToolContext) -> ToolOutput:
        key = self.operation_key(args)
        body = {"sku": args.sku, "quantity": args.quantity}
        try:
            status, payload = await asyncio.to_thread(
                _request,
                f"{self.base_url}/reservations",
                body=body,
                headers={"idempotency-key": key},
            )
        except OSError as exc:  # no response is not "not reserved"
            raise ToolError(
                ToolErrorKind.OUTCOME_UNKNOWN,
                f"no response from the stock service ({exc}); the reservation may or may not "
                "have been made",
            ) from exc
        if status == 409:
            raise ToolError(
                ToolErrorKind.CONFLICT,
                f"only {payload.get('available')} units of {args.sku} are available; nothing "
                "was reserved",
            )
        if status == 422:
            raise ToolError(ToolErrorKind.CONFLICT, f"the service refused key {key!r}: reused")
        if status not in (200, 201):
            raise ToolError(ToolErrorKind.INVALID_ARGUMENTS, f"the service said {payload}")
        return _reservation_output(payload, self.base_url)

    async def reconcile(self, args: ReserveStockInput, ctx: ToolContext) -> ToolOutput | None:
        url = f"{self.base_url}/reservations/{quote(self.operation_key(args), safe='')}"
        try:
            status, payload = await asyncio.to_thread(_request, url)
        except OSError as exc:
            raise ToolError(
                ToolErrorKind.OUTCOME_UNKNOWN, f"the stock service is unreachable: {exc}"
            ) from exc
        if status == 404:
            return None
        if status != 200:
            raise ToolError(ToolErrorKind.OUTCOME_UNKNOWN, f"the service said {payload}")
        return _reservation_output(payload, self.base_url)


def _reservation_output(payload: dict[str, Any], base_url: str) -> ToolOutput:
    return ToolOutput(
        text=(
            f"reserved {payload['quantity']} x {payload['sku']} (reservation "
            f"{payload['reservation_id']}); {payload['remaining']} left"
        ),
        source={"service": base_url, "reservation_id": payload["reservation_id"]},
    )
