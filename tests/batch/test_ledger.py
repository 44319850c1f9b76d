"""The batch's shared state: the budget a task starts with, and model-request slots."""

from __future__ import annotations

from agentcli.batch.ledger import Ledger


def test_a_task_gets_what_remains_and_none_starts_once_it_is_spent() -> None:
    ledger = Ledger(max_cost_usd=1.0, spent_usd=0.25, max_requests=None)
    first = ledger.begin("a")
    assert (first.allowed, first.budget_usd, first.starts) == (True, 0.75, 1)
    assert ledger.finish("a", 0.5) == 0.75
    assert ledger.begin("b").budget_usd == 0.25
    ledger.finish("b", None)  # an unknown cost adds nothing it does not know
    ledger.finish("c", 0.3)
    refused = ledger.begin("d")
    assert not refused.allowed
    assert "--max-cost 1.0" in refused.why_not
    assert ledger.totals() == (1.05, 1)
    assert Ledger(max_cost_usd=None, max_requests=None).begin("x").budget_usd is None


def test_a_second_start_of_a_task_is_counted_and_frees_its_slots() -> None:
    ledger = Ledger(max_cost_usd=None, max_requests=2)
    ledger.begin("a")
    assert ledger.try_acquire("a")
    b = ledger.try_acquire("b")
    assert b is not None
    assert ledger.try_acquire("c") is None
    assert ledger.begin("a").starts == 2  # Ray retried it: what its lost worker held is free
    assert ledger.try_acquire("c")
    ledger.release("b", b)
    ledger.finish("c", None)
    assert ledger.requests == 0


def test_an_interrupted_batch_starts_nothing_and_says_so() -> None:
    ledger = Ledger(max_cost_usd=None, max_requests=None)
    assert not ledger.cancelled()
    ledger.stop()
    assert ledger.cancelled()
    refused = ledger.begin("a")
    assert (refused.allowed, refused.why_not) == (False, "the batch was interrupted")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_slots_of_a_task_not_heard_of_for_a_lease_are_free_again() -> None:
    """A worker killed mid-request takes its gate (and its renewals) with it: its slot is free
    once the lease runs out, not only when Ray starts the task again."""
    clock = Clock()
    ledger = Ledger(max_cost_usd=None, max_requests=1, lease_s=10.0, clock=clock)
    dead = ledger.try_acquire("dead")
    assert dead is not None
    clock.now += 10.0
    assert ledger.try_acquire("waiting") is None  # not yet past the lease
    clock.now += 0.5
    assert ledger.try_acquire("waiting")
    assert dict(ledger.held) == {"waiting": 1}
    ledger.release("dead", dead)  # a late release of what it lost takes nothing from the others
    assert dict(ledger.held) == {"waiting": 1}
    assert ledger.try_acquire("third") is None


def test_a_late_release_of_a_lost_lease_leaves_the_task_s_newer_one() -> None:
    """A task whose lease ran out (its renewals were late) takes a slot again for another
    request; the first request's release, arriving after, gives back only its own lease."""
    clock = Clock()
    ledger = Ledger(max_cost_usd=None, max_requests=1, lease_s=10.0, clock=clock)
    first = ledger.try_acquire("a")
    assert first is not None
    clock.now += 11.0
    second = ledger.try_acquire("a")
    assert second is not None and second != first
    ledger.release("a", first)
    assert dict(ledger.held) == {"a": 1}
    assert ledger.try_acquire("b") is None  # one slot, still in use
    ledger.release("a", second)
    assert ledger.try_acquire("b") is not None


def test_a_renewed_lease_is_kept_and_a_dropped_one_is_not_taken_back() -> None:
    clock = Clock()
    ledger = Ledger(max_cost_usd=None, max_requests=1, lease_s=10.0, clock=clock)
    assert ledger.try_acquire("alive")
    for _ in range(5):  # a long streamed response, renewed all along
        clock.now += 6.0
        ledger.renew("alive")
        assert ledger.try_acquire("waiting") is None
    clock.now += 11.0
    assert ledger.try_acquire("waiting")  # its renewals stopped: the lease ran out
    ledger.renew("alive")  # late: the slot is not its own again
    assert dict(ledger.held) == {"waiting": 1}
    clock.now += 9.0
    assert ledger.try_acquire("alive") is None


def test_a_task_holding_two_slots_keeps_both_while_it_renews() -> None:
    clock = Clock()
    ledger = Ledger(max_cost_usd=None, max_requests=2, lease_s=10.0, clock=clock)
    one, two = ledger.try_acquire("a"), ledger.try_acquire("a")
    assert one is not None and two is not None
    clock.now += 8.0
    ledger.renew("a")
    clock.now += 8.0
    assert ledger.try_acquire("b") is None
    ledger.release("a", one)
    assert ledger.try_acquire("b")
    clock.now += 11.0  # neither renewed: both leases end
    assert ledger.try_acquire("c") and ledger.try_acquire("c")
