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
    assert ledger.try_acquire("b")
    assert not ledger.try_acquire("c")
    assert ledger.begin("a").starts == 2  # Ray retried it: what its lost worker held is free
    assert ledger.try_acquire("c")
    ledger.release("b")
    ledger.finish("c", None)
    assert ledger.requests == 0


def test_an_interrupted_batch_starts_nothing_and_says_so() -> None:
    ledger = Ledger(max_cost_usd=None, max_requests=None)
    assert not ledger.cancelled()
    ledger.stop()
    assert ledger.cancelled()
    refused = ledger.begin("a")
    assert (refused.allowed, refused.why_not) == (False, "the batch was interrupted")
