"""Streaming markdown: printed once, in order, the same as rendering the whole answer at once,
also for answers long enough to be cut into chunks."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.markdown import Markdown

from agentcli.ui.repl.markdown import CHUNK_CHARS, MarkdownStream, block_boundary


def console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=80, markup=False, highlight=False, no_color=True), out


def normalized(text: str) -> list[str]:
    """Lines without trailing spaces, runs of blank lines squeezed to one, no blank ends."""
    lines: list[str] = []
    for line in text.splitlines():
        line = line.rstrip()
        if line or (lines and lines[-1]):
            lines.append(line)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def streamed(text: str, step: int) -> str:
    con, out = console()
    stream = MarkdownStream(con)
    for start in range(0, len(text), step):
        stream.add(text[start : start + step], force=True)
    stream.finish()
    return out.getvalue()


def at_once(text: str) -> str:
    con, out = console()
    con.print(Markdown(text, code_theme="ansi_dark", hyperlinks=False))
    return out.getvalue()


SECTION = """## Part {n}

A paragraph with `inline code`, **bold** and a [link](https://example.com) that is long enough
to wrap in an 80-column terminal, written as the model would write it.

```python
def part_{n}():

    return {n}  # a blank line inside the fence must not cut the block
```

- first item

- second item, loose list
  with a continuation line

1. one
2. two

> a quote

| file | change |
|------|--------|
| a{n}.py | edit |

"""


@pytest.mark.parametrize("step", [41, 173, 997])
def test_long_answer_streams_as_it_would_render_at_once(step: int) -> None:
    answer = "".join(SECTION.format(n=n) for n in range(20))
    assert len(answer) > 3 * CHUNK_CHARS  # several chunks
    if step < 100:
        answer = answer[: CHUNK_CHARS + 600]  # small steps: keep the test fast
    assert normalized(streamed(answer, step)) == normalized(at_once(answer))


def test_the_unsettled_tail_is_held_back_until_finished() -> None:
    con, out = console()
    stream = MarkdownStream(con)
    stream.add("".join(f"line {n}\n\n" for n in range(20)), force=True)
    assert "line 0" in out.getvalue()
    assert "line 19" not in out.getvalue()  # still in the live tail: it may reflow
    assert any("line 19" in "".join(s.text for s in line) for line in stream.visible_tail())
    stream.finish()
    assert out.getvalue().count("line 19") == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("para one\n\npara two\n", "para one\n\n"),
        ("para\n\n```\ncode\n\nmore\n```\n", "para\n\n"),  # not inside the fence
        ("para\n\n- a\n\n- b\n", None),  # never in front of a list item
        ("para\n\n    indented code\n", None),
        ("intro\n\n> quote\n", None),
        ("no boundary at all\n", None),
    ],
)
def test_block_boundary(text: str, expected: str | None) -> None:
    found = block_boundary(text, 0)
    assert (text[:found] if found is not None else None) == expected
