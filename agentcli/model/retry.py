"""Bounded retries with backoff around any ModelClient.

Retries happen here, not in the SDK (the adapter sets the SDK's own retries to 0), so that one
policy covers HTTP errors *and* streams that broke half-way, every wait is reported as an event,
and waits count against the task's wall-clock deadline.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from agentcli.errors import ModelError, RetryableModelError
from agentcli.events import EventSink, ModelRetrying
from agentcli.model import ModelClient, ModelRequest, ModelResponse
from agentcli.usage import Clock

IDLE_TIMEOUT_S = 90.0
"""How long a silent connection is waited for, unless the session's `[api] idle_timeout_s`
says otherwise (the default there is the same: tests/test_settings.py keeps them equal)."""
MAX_RETRY_WAIT_S = 900.0
"""The longest `retry-after` honoured, unless `[api] max_retry_wait_s` says otherwise (the
same default)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    max_attempts: int = 5
    """Total attempts including the first."""
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0
    """Ceiling of our own backoff (when the server does not say how long to wait)."""
    max_retry_after_s: float = MAX_RETRY_WAIT_S
    """The longest `retry-after` honoured; a server asking for more ends the task at once."""
    idle_timeout_s: float | None = IDLE_TIMEOUT_S
    """An attempt whose connection is silent this long is abandoned (and retried)."""

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return max(retry_after, 0.0)  # what the server asks, checked against the ceiling
        exp = self.base_delay_s * (2 ** (attempt - 1))
        jittered: float = exp * (0.75 + random.random() * 0.5)
        return min(jittered, self.max_delay_s)


class RetryingModel:
    """A ModelClient that repeats retryable failures of the wrapped client."""

    def __init__(
        self,
        inner: ModelClient,
        policy: RetryPolicy | None = None,
        *,
        clock: Clock | None = None,
        deadline: Callable[[], float | None] = lambda: None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.inner = inner
        self.policy = policy or RetryPolicy()
        self.clock = clock or Clock()
        self.deadline = deadline
        self.sleep = sleep

    @property
    def model(self) -> str:
        return self.inner.model

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def complete(self, request: ModelRequest, on_event: EventSink) -> ModelResponse:
        attempt = 1
        if request.idle_timeout_s is None:
            request = replace(request, idle_timeout_s=self.policy.idle_timeout_s)
        while True:
            try:
                return await self.inner.complete(request, on_event)
            except RetryableModelError as exc:
                if attempt >= self.policy.max_attempts:
                    raise ModelError(
                        f"{exc.message} (gave up after {attempt} attempts)",
                        status_code=exc.status_code,
                    ) from exc
                delay = self.policy.delay(attempt, exc.retry_after)
                if delay > self.policy.max_retry_after_s:
                    raise ModelError(
                        f"{exc.message} (the server asks to wait {delay:g} s before retrying, "
                        f"more than api.max_retry_wait_s = {self.policy.max_retry_after_s:g} s)",
                        status_code=exc.status_code,
                    ) from exc
                deadline = self.deadline()
                if deadline is not None and self.clock.now() + delay >= deadline:
                    raise ModelError(
                        f"{exc.message} (no time left in the task's budget to retry)",
                        status_code=exc.status_code,
                    ) from exc
                on_event(
                    ModelRetrying(attempt=attempt, delay_s=round(delay, 3), reason=exc.message)
                )
                await self.sleep(delay)
                attempt += 1
