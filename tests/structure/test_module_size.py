"""No module under `agentcli/` is over 400 lines, read from the source: a module that grows past
that holds more than one concept and is split by concept (STYLE.md, "Shape"). Every line counts,
blank lines, comments and docstrings included, and no file is exempt."""

from __future__ import annotations

from pathlib import Path

from tests.structure.test_layering import PACKAGE

MAX_LINES = 400


def line_count(path: Path) -> int:
    """Lines as `wc -l` counts them, plus a last line without a newline (an editor shows it)."""
    data = path.read_bytes()
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def test_the_count_is_what_an_editor_shows(tmp_path: Path) -> None:
    cases = {"": 0, "a": 1, "a\n": 1, "a\n\nb": 3, "a\r\nb\r\n": 2, "\n\n": 2, '"""\x0c\n"""\n': 2}
    for text, lines in cases.items():
        path = tmp_path / "m.py"
        path.write_bytes(text.encode())
        assert line_count(path) == lines, repr(text)


def test_every_module_is_seen() -> None:
    # The rule below is vacuous if the walk misses files: nested packages, `__init__.py`s.
    seen = {path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")}
    assert {"__init__.py", "loop.py", "ui/repl/app.py", "permissions/shell_walk.py"} <= seen


def test_no_module_is_over_400_lines() -> None:
    over = [
        f"{path.relative_to(PACKAGE.parent)} ({lines} lines)"
        for path in sorted(PACKAGE.rglob("*.py"))
        if (lines := line_count(path)) > MAX_LINES
    ]
    assert over == [], f"split these by concept (at most {MAX_LINES} lines each): {over}"
