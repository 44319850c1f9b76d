"""The one truncation: what `keep_ends` keeps plus what it says it omitted is the whole input,
and `shorten` keeps a label within its budget, marked when it was cut."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agentcli.truncation import ELLIPSIS, keep_ends, one_line, shorten

budgets = st.integers(min_value=0, max_value=40)
texts = st.text(alphabet=st.sampled_from(["a", "é", "€", " ", "\n", "\t"]), max_size=80)


@given(text=texts, head=budgets, tail=budgets)
def test_keep_ends_keeps_the_ends_and_counts_the_middle(text: str, head: int, tail: int) -> None:
    kept = keep_ends(text, head, tail)
    if len(text) <= head + tail:
        assert kept is None
        return
    assert kept is not None
    assert (len(kept.head), len(kept.tail)) == (head, tail)
    assert text.startswith(kept.head) and text.endswith(kept.tail)
    assert len(kept.head) + kept.omitted + len(kept.tail) == len(text)
    assert kept.omitted > 0


@given(lines=st.lists(st.text(max_size=5), max_size=30), head=budgets, tail=budgets)
def test_keep_ends_on_lines(lines: list[str], head: int, tail: int) -> None:
    kept = keep_ends(lines, head, tail)
    if kept is None:
        assert len(lines) <= head + tail
        return
    middle = lines[head : len(lines) - tail]
    assert [*kept.head, *middle, *kept.tail] == lines
    assert kept.omitted == len(middle)


def test_keep_ends_with_no_tail_keeps_no_tail() -> None:
    # items[-0:] is the whole sequence: the classic slip this helper exists to make once.
    kept = keep_ends(b"abcdef", 2)
    assert kept is not None and (kept.head, kept.tail, kept.omitted) == (b"ab", b"", 4)


@given(text=texts, limit=budgets, marker=st.sampled_from([ELLIPSIS, "...", ""]))
def test_shorten_fits_the_budget_and_marks_a_cut(text: str, limit: int, marker: str) -> None:
    shown = shorten(text, limit, marker=marker)
    if len(text) <= limit:
        assert shown == text
        return
    assert shown.endswith(marker)
    assert len(shown) == max(limit, len(marker))
    assert text.startswith(shown[: len(shown) - len(marker)])


def test_shorten_examples() -> None:
    assert shorten("abcdef", 6) == "abcdef"
    assert shorten("abcdefg", 6) == "abcde…"
    assert shorten("abcdefg", 6, marker="...") == "abc..."
    assert shorten("abc", 0) == "…"


@given(text=texts, limit=budgets)
def test_one_line_has_one_line(text: str, limit: int) -> None:
    shown = one_line(text, limit)
    assert "\n" not in shown and "\t" not in shown and "  " not in shown
    assert len(shown) <= max(limit, 1)
