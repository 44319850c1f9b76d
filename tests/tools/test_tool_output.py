"""The output cap: what a truncation notice states is exactly what was shown and omitted, the
spill file holds the whole text, and read_file's line numbers agree with the notice."""

from __future__ import annotations

import itertools
import re
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcli.tools.output import (
    MAX_SPILL_BYTES,
    NOTICE_ROOM,
    HeadTailCollector,
    cap_head,
    cap_head_tail,
    count_lines,
    decode_output,
    split_lines,
)

texts = st.text(alphabet=st.sampled_from(["a", "b", "é", "\n", "\n", "\r", " ", "€"]), max_size=600)
limits = st.integers(min_value=2, max_value=300)


@pytest.fixture(scope="module")
def spill_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("spill")


def fresh(spill_dir: Path) -> Path:
    return spill_dir / f"{uuid.uuid4().hex}.txt"


HEAD_NOTICE = re.compile(
    r"\[output truncated: showing characters 1-(\d+) \((.*?)\) of (\d+) characters "
    r"\((\d+) lines\)\. Full output saved to (.*?); read on with "
    r'read_file\(path="(.*?)", offset=(\d+)\)\]$'
)


@settings(max_examples=300, deadline=None)
@given(text=texts, limit=limits)
def test_cap_head_states_exactly_what_it_shows(spill_dir: Path, text: str, limit: int) -> None:
    spill = fresh(spill_dir)
    capped = cap_head(text, limit, spill)
    if len(text) <= limit:
        assert capped == text and not spill.exists()
        return
    assert len(capped) <= limit + NOTICE_ROOM + len(str(spill))
    match = HEAD_NOTICE.search(capped)
    assert match, capped
    shown_chars, shown_lines, total_chars, total_lines, saved, read_path, offset = match.groups()
    head = text[: int(shown_chars)]
    assert capped.startswith(head)
    assert int(total_chars) == len(text) and int(total_lines) == count_lines(text)
    assert saved == read_path == str(spill)
    assert spill.read_bytes().decode("utf-8") == text
    complete = head.count("\n")
    # read_file numbers lines like split_lines: `offset` is the first line not fully shown.
    assert int(offset) == complete + 1
    assert split_lines(text)[:complete] == split_lines(head)[:complete]
    if head.endswith("\n"):
        assert shown_lines == (f"lines 1-{complete}" if complete else "no complete line")
    else:
        assert shown_lines == f"lines 1-{complete} and the start of line {complete + 1}"


TAIL_NOTICE = re.compile(
    r"\[\.\.\. (lines|bytes) (\d+)-(\d+) omitted; showing (.*?) of (\d+) lines \((\d+) bytes\)\. "
    r"Full output saved to (.*?); read the omitted part with "
    r'read_file\(path="(.*?)", offset=(\d+)\) \.\.\.\]\n'
)


@settings(max_examples=300, deadline=None)
@given(text=texts, limit=limits, cuts=st.lists(st.integers(0, 2000), max_size=6))
def test_head_tail_states_exactly_what_it_omits(
    spill_dir: Path, text: str, limit: int, cuts: list[int]
) -> None:
    data = text.encode("utf-8")
    spill = fresh(spill_dir)
    collector = HeadTailCollector(limit, spill)
    bounds = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    for start, end in itertools.pairwise(bounds):
        collector.feed(data[start:end])  # arbitrary chunking, even inside a character
    result = collector.finish()
    assert result.total_bytes == len(data)
    assert result.total_lines == data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)
    if len(data) <= limit:
        assert result.text == text and not result.truncated and not spill.exists()
        return
    assert result.truncated and spill.read_bytes() == data
    match = TAIL_NOTICE.search(result.text)
    assert match, result.text
    unit, first, last, _shown, total_lines, total_bytes, saved, _read, offset = match.groups()
    assert int(total_bytes) == len(data) and int(total_lines) == result.total_lines
    assert saved == str(spill)
    head_text, tail_text = result.text[: match.start()], result.text[match.end() :]
    assert len(head_text) <= limit // 2 + 1 and len(tail_text) <= limit // 2
    if unit == "lines":
        lines = data.split(b"\n")
        head_lines = int(first) - 1
        assert head_text.encode() == b"\n".join(lines[:head_lines]) + b"\n"
        assert data.endswith(tail_text.encode())
        assert int(offset) == int(first) <= int(last) <= result.total_lines
        tail_lines = tail_text.count("\n") + (0 if not tail_text or tail_text.endswith("\n") else 1)
        assert tail_lines == int(total_lines) - int(last)
    else:
        head = data[: int(first) - 1].decode("utf-8", "replace")
        assert head_text == head + ("" if not head or head.endswith("\n") else "\n")
        assert tail_text == data[int(last) :].decode("utf-8", "replace")


def test_head_tail_example() -> None:
    text = "".join(f"line {n}\n" for n in range(1, 2001))
    capped = cap_head_tail(text, 200, Path("/nonexistent-dir-is-fine-only-if-short") / "x")
    assert capped.startswith("line 1\n") and capped.endswith("line 2000\n")
    assert "[... lines 14-1991 omitted; showing lines 1-13 and 1992-2000 of 2000 lines" in capped


def test_bytes_that_are_not_utf8_are_spelled_out_but_a_cut_character_is_not() -> None:
    assert decode_output(b"a.txt\n\xff.txt\n") == "a.txt\n\\xff.txt\n"
    assert decode_output(b"name \xff", cut_after=True) == "name \\xff"  # never part of UTF-8
    assert decode_output("a€".encode()[:-1], cut_after=True) == "a\ufffd"
    assert decode_output("€b".encode()[1:], cut_before=True) == "\ufffd\ufffdb"
    head = HeadTailCollector(40, Path("/nonexistent") / "x")
    head.feed(b"\xff" * 5)
    assert head.finish().text == "\\xff" * 5


def test_short_text_is_never_touched(tmp_path: Path) -> None:
    assert cap_head_tail("a\nb\n", 100, tmp_path / "s.txt") == "a\nb\n"
    assert cap_head("a\nb\n", 100, tmp_path / "s.txt") == "a\nb\n"
    assert not (tmp_path / "s.txt").exists()


def test_the_spill_file_stops_growing(tmp_path: Path) -> None:
    collector = HeadTailCollector(1000, tmp_path / "big.txt")
    chunk = b"x" * 1_000_000 + b"\n"
    for _ in range(MAX_SPILL_BYTES // len(chunk) + 3):
        collector.feed(chunk)
    result = collector.finish()
    assert (tmp_path / "big.txt").stat().st_size == MAX_SPILL_BYTES
    assert f"the spill file holds only the first {MAX_SPILL_BYTES} bytes" in result.text
    assert len(result.text) < 1000 + NOTICE_ROOM + 200
