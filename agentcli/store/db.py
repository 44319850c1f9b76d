"""The journal database: where it lives, how it is opened, and its numbered migrations.

One SQLite file (`<data home>/journal.sqlite3`) holds every session of the user. It runs in WAL
mode so readers (`agentcli sessions list`) never block the running agent, with
`synchronous=NORMAL`: a commit survives the process being killed, and only the few commits
since the last fsync can be lost if the *machine* goes down. The write-ahead `started` record of
a call with side effects is the exception: it is committed with `synchronous=FULL` (see
`SqliteJournal.call_started`), which also makes everything journaled before it durable.

The schema evolves through the numbered migrations below; each applied one is recorded in the
`migrations` table, so opening an older journal upgrades it and never re-runs a step.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agentcli.errors import UsageError
from agentcli.paths import data_home

JOURNAL_FILE = "journal.sqlite3"

MIGRATIONS: tuple[tuple[str, str], ...] = (
    (
        "initial schema",
        """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            workspace TEXT NOT NULL,
            model TEXT NOT NULL,
            settings TEXT NOT NULL DEFAULT '{}',
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        );
        CREATE INDEX sessions_by_workspace ON sessions (workspace, updated_at);
        CREATE TABLE messages (
            session_id TEXT NOT NULL REFERENCES sessions (id),
            seq INTEGER NOT NULL,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            task_id TEXT,
            created_at REAL NOT NULL,
            PRIMARY KEY (session_id, seq)
        );
        CREATE TABLE tasks (
            id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions (id),
            prompt TEXT NOT NULL,
            criteria TEXT NOT NULL DEFAULT '[]',
            state TEXT NOT NULL,
            reason TEXT,
            evidence TEXT NOT NULL DEFAULT '[]',
            artifact_version TEXT,
            started_at REAL NOT NULL,
            ended_at REAL
        );
        CREATE INDEX tasks_by_session ON tasks (session_id, started_at);
        CREATE TABLE tool_calls (
            session_id TEXT NOT NULL REFERENCES sessions (id),
            call_id TEXT NOT NULL,
            task_id TEXT,
            name TEXT NOT NULL,
            input TEXT NOT NULL,
            risk TEXT NOT NULL,
            status TEXT NOT NULL,
            pre_state TEXT,
            result TEXT,
            error_kind TEXT,
            result_is_error INTEGER NOT NULL DEFAULT 0,
            replayed INTEGER NOT NULL DEFAULT 0,
            proposed_at REAL NOT NULL,
            started_at REAL,
            ended_at REAL,
            duration_s REAL,
            PRIMARY KEY (session_id, call_id)
        );
        CREATE INDEX tool_calls_by_status ON tool_calls (session_id, status);
        CREATE TABLE idempotency (
            tool TEXT NOT NULL,
            key TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            state TEXT NOT NULL,
            result TEXT,
            session_id TEXT,
            call_id TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            PRIMARY KEY (tool, key)
        );
        """,
    ),
    (
        "undo checkpoints",
        """
        CREATE TABLE checkpoints (
            task_id TEXT PRIMARY KEY REFERENCES tasks (id),
            workspace TEXT NOT NULL,
            kind TEXT NOT NULL,
            start_ref TEXT,
            end_ref TEXT,
            start_manifest TEXT,
            end_manifest TEXT,
            complete INTEGER NOT NULL DEFAULT 1,
            error TEXT,
            created_at REAL NOT NULL,
            ended_at REAL,
            undone_at REAL
        );
        CREATE TABLE blobs (
            hash TEXT PRIMARY KEY,
            content BLOB NOT NULL
        );
        CREATE TABLE preimages (
            task_id TEXT NOT NULL REFERENCES tasks (id),
            path TEXT NOT NULL,
            hash TEXT,
            PRIMARY KEY (task_id, path)
        );
        """,
    ),
    (
        "who produced each assistant message",
        # JSON {"model", "context"} (messages.Producer): thinking blocks go back only to the
        # model, and under the context, that produced them. NULL: recorded before this column.
        """
        ALTER TABLE messages ADD COLUMN producer TEXT;
        """,
    ),
    (
        "paths each task changed itself",
        """
        CREATE TABLE task_paths (
            task_id TEXT NOT NULL,
            path TEXT NOT NULL,
            PRIMARY KEY (task_id, path)
        );
        CREATE INDEX task_paths_by_path ON task_paths (path);
        ALTER TABLE checkpoints ADD COLUMN attribution TEXT
        """,
    ),
)


def journal_path() -> Path:
    return data_home() / JOURNAL_FILE


def connect(path: Path | None = None) -> sqlite3.Connection:
    """Open (creating and migrating as needed) the journal database."""
    path = path or journal_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Autocommit: every statement outside an explicit BEGIN is its own durable transaction.
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10.0)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        migrate(conn)
    except (OSError, sqlite3.Error) as exc:
        raise UsageError(
            f"cannot open the journal {path}: {exc}",
            hint="AGENTCLI_HOME (or the user data directory) must be a writable directory",
        ) from exc
    return conn


def migrate(conn: sqlite3.Connection) -> list[int]:
    """Apply the migrations this database has not seen yet; return their numbers."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS migrations "
        "(id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
    )
    done = {row[0] for row in conn.execute("SELECT id FROM migrations")}
    applied = []
    for number, (name, script) in enumerate(MIGRATIONS, start=1):
        if number in done:
            continue
        with transaction(conn):
            # Another process may have migrated while we waited for the write lock.
            if conn.execute("SELECT 1 FROM migrations WHERE id = ?", (number,)).fetchone():
                continue
            for statement in script.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(
                "INSERT INTO migrations (id, name, applied_at) VALUES (?, ?, ?)",
                (number, name, time.time()),
            )
        applied.append(number)
    return applied


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE (the write lock at once, so processes never interleave) … COMMIT, or
    ROLLBACK when anything raises."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
