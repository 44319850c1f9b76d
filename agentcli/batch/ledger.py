"""The batch's shared state, in one place whatever the engine: the cost ledger (`--max-cost`),
the limit on concurrent model requests (`--max-requests`), how often each task was started,
and whether the batch was interrupted.

`Ledger` itself never blocks, so the Ray engine runs the very same class as one actor (whose
methods run one at a time); the local engine wraps it in a lock (`LocalLedger`). A model
request waits for a slot by asking again (`try_acquire`) until one is free. Slots are held in
a task's name: when a task starts again (Ray retrying it after its worker was lost, with the
slot it held) or ends, whatever it still held is free again. And they are leases: the gate
holding them says so every `RENEW_S` (`renew`); a task not heard of for `LEASE_S` loses them.
A worker killed mid-request (its gate with it) held its slot until Ray started the task again,
which waited for a CPU that the other tasks, polling for that slot, held: the batch hung
(found with `--max-requests 1` and the worker of the first task killed). A task whose
renewals are late (a stalled machine) may lose its slot while its request still runs: the
limit is then exceeded for that request, never deadlocked.

The budget: a task may start while the total cost of the finished tasks (earlier runs into the
same directory included) is below `--max-cost`, and it gets what remains as its own
`--max-cost`. Tasks running at the same time each get that remainder, so the batch can end
above its budget by at most what they spend together past it.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

LEASE_S = 10.0
"""How long a task's model-request slots stay its own without word from its gate."""
RENEW_S = 1.0
"""How often a gate holding slots renews them."""


@dataclass(frozen=True, slots=True)
class Admission:
    """Whether a task may start, and with what budget (None: no batch budget)."""

    allowed: bool
    budget_usd: float | None
    starts: int
    """How often it was started in this batch run, this start included (a Ray retry is 2)."""
    why_not: str = ""


class Ledger:
    def __init__(
        self,
        *,
        max_cost_usd: float | None,
        spent_usd: float = 0.0,
        max_requests: int | None,
        lease_s: float = LEASE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_cost_usd = max_cost_usd
        self.spent_usd = spent_usd
        """What finished tasks cost (earlier runs included)."""
        self.max_requests = max_requests
        self._leases: dict[int, str] = {}
        """Model-request slots in use: each lease's token, and the task holding it."""
        self._tokens = itertools.count(1)
        self.lease_s = lease_s
        self._clock = clock
        self._heard: dict[str, float] = {}
        """When each holder last took or renewed its slots."""
        self.budget_stopped = 0
        """Tasks not started because the budget was spent."""
        self.stopped = False
        self._starts: Counter[str] = Counter()

    @property
    def requests(self) -> int:
        return len(self._leases)

    @property
    def held(self) -> Counter[str]:
        """Slots in use, by the task holding them."""
        return Counter(self._leases.values())

    def begin(self, instance_id: str) -> Admission:
        self._free(instance_id)  # an earlier attempt's, lost with its worker
        if self.stopped:
            return Admission(False, None, self._starts[instance_id], "the batch was interrupted")
        remaining = None if self.max_cost_usd is None else self.max_cost_usd - self.spent_usd
        if remaining is not None and remaining <= 0:
            self.budget_stopped += 1
            return Admission(
                False,
                None,
                self._starts[instance_id],
                f"the batch's budget (--max-cost {self.max_cost_usd}) is spent",
            )
        self._starts[instance_id] += 1
        return Admission(True, remaining, self._starts[instance_id])

    def finish(self, instance_id: str, cost_usd: float | None) -> float:
        """Record a finished task's cost; the total so far."""
        self._free(instance_id)
        if cost_usd is not None:
            self.spent_usd += cost_usd
        return self.spent_usd

    def try_acquire(self, holder: str) -> int | None:
        """A model-request slot for task `holder`, if one is free (once the leases not renewed
        in time are dropped): the lease's token, to give it back with; None when none is."""
        self._expire()
        if self.max_requests is not None and self.requests >= self.max_requests:
            return None
        token = next(self._tokens)
        self._leases[token] = holder
        self._heard[holder] = self._clock()
        return token

    def renew(self, holder: str) -> None:
        """`holder` still holds its slots (a lease already dropped is not taken back)."""
        if holder in self._heard:
            self._heard[holder] = self._clock()

    def release(self, holder: str, token: int) -> None:
        """Give back the lease `token` (one that ran out is gone already: a later lease of the
        same task is not taken in its place)."""
        if self._leases.get(token) == holder:
            del self._leases[token]
            if holder not in self._leases.values():
                self._heard.pop(holder, None)

    def _free(self, holder: str) -> None:
        for token in [t for t, h in self._leases.items() if h == holder]:
            del self._leases[token]
        self._heard.pop(holder, None)

    def _expire(self) -> None:
        now = self._clock()
        for holder, heard in list(self._heard.items()):
            if now - heard > self.lease_s:
                self._free(holder)

    def stop(self) -> None:
        """No task starts from now on; running ones are told to stop (`cancelled`)."""
        self.stopped = True

    def cancelled(self) -> bool:
        return self.stopped

    def totals(self) -> tuple[float, int]:
        return self.spent_usd, self.budget_stopped


class LocalLedger:
    """`Ledger` for threads of one process."""

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger
        self._lock = threading.Lock()

    def begin(self, instance_id: str) -> Admission:
        with self._lock:
            return self._ledger.begin(instance_id)

    def finish(self, instance_id: str, cost_usd: float | None) -> float:
        with self._lock:
            return self._ledger.finish(instance_id, cost_usd)

    def try_acquire(self, holder: str) -> int | None:
        with self._lock:
            return self._ledger.try_acquire(holder)

    def renew(self, holder: str) -> None:
        with self._lock:
            self._ledger.renew(holder)

    def release(self, holder: str, token: int) -> None:
        with self._lock:
            self._ledger.release(holder, token)

    def stop(self) -> None:
        with self._lock:
            self._ledger.stop()

    def cancelled(self) -> bool:
        with self._lock:
            return self._ledger.cancelled()

    def totals(self) -> tuple[float, int]:
        with self._lock:
            return self._ledger.totals()
