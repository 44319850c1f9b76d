"""A journal agentcli cannot use is refused, named, and left exactly as it was.

Real broken files (random bytes, an empty file, a truncated database, someone else's database,
one from a newer agentcli) under every command that opens the journal: exit 2 with the path in
the message, and the file's bytes unchanged. Also: the schema version in the file's header,
and journals from before it was kept there.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import os
import random
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from agentcli.errors import JournalError
from agentcli.store import schema
from agentcli.store.db import connect, journal_path
from agentcli.store.sqlite import SqliteJournal
from agentcli.ui.cli import run_app
from tests.inprocess import decoded, run_in_process

LATEST = len(schema.MIGRATIONS)


def healthy(path: Path) -> None:
    """A journal with one session, closed (so its write-ahead log is folded into the file)."""
    conn = connect(path)
    SqliteJournal.create("01AAA", workspace=path.parent, model="m", conn=conn)
    conn.close()


def truncated(path: Path) -> None:
    healthy(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def header_only(path: Path) -> None:
    healthy(path)
    path.write_bytes(path.read_bytes()[:100])


def garbage(path: Path) -> None:
    path.write_bytes(random.Random(15).randbytes(8192))


def empty(path: Path) -> None:
    path.write_bytes(b"")


def someone_elses(path: Path) -> None:
    """A SQLite database with a table of agentcli's name, but not agentcli's."""
    with sqlite3.connect(path) as other:
        other.execute("CREATE TABLE sessions (name TEXT)")
        other.execute("INSERT INTO sessions VALUES ('not ours')")
    other.close()


def _edit(path: Path, *statements: str) -> None:
    other = sqlite3.connect(path)
    for statement in statements:
        other.execute(statement)
    other.commit()
    other.close()


def newer(path: Path) -> None:
    healthy(path)
    _edit(path, f"PRAGMA user_version = {LATEST + 1}")


def newer_unstamped(path: Path) -> None:
    """A journal from before the version was in the header, yet with a migration this agentcli
    does not have."""
    healthy(path)
    _edit(
        path,
        "PRAGMA user_version = 0",
        f"INSERT INTO migrations VALUES ({LATEST + 1}, 'from the future', 0)",
    )


def another_build(path: Path) -> None:
    """Written by a development build whose migration 2 was something else (a branch that
    numbered its migrations before another branch's were merged ahead of them): migrating on
    from there would apply ours over a schema that is not theirs."""
    healthy(path)
    _edit(path, "UPDATE migrations SET name = 'hook runs' WHERE id = 2")


def missing_table(path: Path) -> None:
    healthy(path)
    _edit(path, "DROP TABLE tool_calls")


BROKEN: dict[str, tuple[Callable[[Path], None], str]] = {
    "random bytes": (garbage, "is corrupt"),
    "empty file": (empty, "is corrupt: it is empty"),
    "truncated": (truncated, "is corrupt"),
    "header only": (header_only, "is corrupt"),
    "another program's database": (someone_elses, "is not an agentcli journal"),
    "newer schema": (newer, f"schema version is {LATEST + 1}, this agentcli"),
    "newer, unstamped": (newer_unstamped, f"schema version is {LATEST + 1}, this agentcli"),
    "a table missing": (missing_table, "is corrupt: schema version"),
    "another build's migrations": (
        another_build,
        f"another build of agentcli: its migration 2 is 'hook runs', this agentcli's is "
        f"{schema.MIGRATIONS[1][0]!r}",
    ),
}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(params=sorted(BROKEN))
def broken(request: pytest.FixtureRequest) -> tuple[Path, str, str]:
    """The journal, broken one way: (its path, what the message says, its digest)."""
    make, says = BROKEN[request.param]
    path = journal_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    make(path)
    return path, says, digest(path)


COMMANDS = [
    ["sessions", "list", "-C", "WS"],
    ["sessions", "list", "--all"],
    ["sessions", "show", "01AAA"],
    ["sessions", "export", "01AAA"],
    ["undo", "-C", "WS"],
    ["undo", "--task", "01TASK", "-C", "WS"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c).replace(" -C WS", ""))
def test_every_command_refuses_a_broken_journal_naming_it_and_leaves_it_alone(
    broken: tuple[Path, str, str],
    command: list[str],
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path, says, before = broken
    code = run_app([str(workspace) if arg == "WS" else arg for arg in command])
    out, err = capsys.readouterr()
    assert code == 2, err
    assert err.startswith("agentcli: error: ") and str(path) in err and says in err
    assert "hint:" in err and "Traceback" not in err and out == ""
    assert digest(path) == before
    assert not list(path.parent.glob("*.new"))  # no half-made journal left beside it


def assert_run_refused(done: subprocess.CompletedProcess[str], path: Path, says: str) -> None:
    """A configuration error (exit 2) as the one result object, the journal named."""
    assert done.returncode == 2, done.stderr
    (line,) = done.stdout.splitlines()
    result = json.loads(line)
    assert result["terminal_reason"] == "config_error" and result["task_state"] == "failed"
    assert str(path) in result["error"] and says in result["error"]
    assert str(path) in done.stderr and "Traceback" not in done.stderr


def test_run_refuses_a_broken_journal_with_one_json_object(
    broken: tuple[Path, str, str], workspace: Path
) -> None:
    """Before any request (no API server is listening), the journal untouched."""
    path, says, before = broken
    done = run_in_process(
        "run", "hi", "--output-format", "json", cwd=workspace, env={"ANTHROPIC_API_KEY": "test"}
    )
    assert_run_refused(decoded(done), path, says)
    assert digest(path) == before


def test_the_binary_refuses_a_broken_journal_with_one_json_object(workspace: Path) -> None:
    """The same through the real binary: its exit status and its stdout."""
    make, says = BROKEN["random bytes"]
    path = journal_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    make(path)
    before = digest(path)
    done = subprocess.run(
        [sys.executable, "-m", "agentcli", "run", "hi", "--output-format", "json"],
        cwd=workspace,
        env={**os.environ, "ANTHROPIC_API_KEY": "test"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert_run_refused(done, path, says)
    assert digest(path) == before


async def test_the_repl_says_the_journal_is_broken_and_goes_on(
    broken: tuple[Path, str, str], workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The REPL opens the journal with its first task (its prompt must not wait for it): the
    task is refused with the same message, the REPL stays up, the journal is untouched."""
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput
    from rich.console import Console

    from agentcli.session.options import SessionOptions
    from agentcli.ui.repl.app import Repl

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    path, says, before = broken
    out = io.StringIO()
    with create_pipe_input() as pipe:
        repl = Repl(
            SessionOptions(cwd=workspace),
            console=Console(file=out, width=400, markup=False, highlight=False),
            input=pipe,
            output=DummyOutput(),
        )
        pipe.send_text("do something\r/sessions\r/exit\r")
        assert await asyncio.wait_for(repl.run(), 60) == 0
    shown = out.getvalue()
    assert shown.count(str(path)) >= 2 and says in shown  # the task and /sessions
    assert "Traceback" not in shown and "internal error" not in shown
    assert digest(path) == before


def test_the_schema_version_is_in_the_header_and_each_migration_recorded(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    conn = connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == LATEST
    recorded = [row[0] for row in conn.execute("SELECT id FROM migrations ORDER BY id")]
    assert recorded == list(range(1, LATEST + 1))
    assert schema.migrate(conn) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "journal.sqlite3",
        "journal.sqlite3-shm",
        "journal.sqlite3-wal",
    ]


def test_a_journal_from_before_the_header_version_is_stamped_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    healthy(path)
    _edit(path, "PRAGMA user_version = 0")  # as agentcli wrote it before
    conn = connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == LATEST
    assert [row[0] for row in conn.execute("SELECT id FROM sessions")] == ["01AAA"]


def test_an_older_journal_is_migrated_one_version_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "journal.sqlite3"
    monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:1])
    connect(path).close()
    monkeypatch.undo()
    conn = connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == LATEST
    names = [row[0] for row in conn.execute("SELECT name FROM migrations ORDER BY id")]
    assert names == [name for name, _ in schema.MIGRATIONS]


def test_a_newer_journal_names_the_file_and_both_versions(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    newer(path)
    with pytest.raises(JournalError) as caught:
        connect(path)
    message = caught.value.message
    assert str(path) in message and "newer agentcli" in message
    assert f"schema version is {LATEST + 1}" in message and f"up to {LATEST}" in message
    assert caught.value.path == path and "upgrade agentcli" in (caught.value.hint or "")


def damaged_sessions_table(path: Path) -> None:
    """A journal that opens (its header and schema are intact) but whose `sessions` table is
    garbage: the damage shows only when a command reads it."""
    conn = connect(path)
    for number in range(50):
        SqliteJournal.create(f"01S{number:03d}", workspace=path.parent, model="m", conn=conn)
    (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'sessions'").fetchone()
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    data = bytearray(path.read_bytes())
    start = (root - 1) * page_size
    data[start : start + page_size] = random.Random(15).randbytes(page_size)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "command",
    [["sessions", "list", "--all"], ["run", "hi", "--output-format", "json"]],
    ids=" ".join,
)
def test_damage_found_after_opening_is_named_too(
    command: list[str], workspace: Path, tmp_path: Path
) -> None:
    path = journal_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    damaged_sessions_table(path)
    connect(path).close()  # it opens
    before = digest(path)
    done = decoded(run_in_process(*command, cwd=workspace, env={"ANTHROPIC_API_KEY": "test"}))
    assert done.returncode == 2, done.stderr
    assert f"the journal {path} is corrupt" in done.stderr and "Traceback" not in done.stderr
    if command[0] == "run":
        assert json.loads(done.stdout)["terminal_reason"] == "config_error"
    assert digest(path) == before
