"""The journal's schema: its numbered migrations, and the version a journal file is at.

The schema version is the number of the last migration applied. It is kept in the file's header
(`PRAGMA user_version`, set in the migration's own transaction), and each applied migration is
also recorded in the `migrations` table (with its name and when), so opening an older journal
upgrades it step by step and never re-runs one. Journals written before the version was kept in
the header have only the table: their version is read from it, and then stamped.

Reading the version writes nothing and refuses (JournalError, naming the file) a database that
is newer than this agentcli (a version above `len(MIGRATIONS)`: it would misread it, and an
older agentcli must never "upgrade" a newer journal), one that holds tables but no agentcli
schema, and one whose tables or records do not match its version. A new migration is appended
to MIGRATIONS, never inserted or edited: a journal's version says which ones it has.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agentcli import __version__
from agentcli.errors import JournalError

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
    (
        "what each task used and cost",
        """
        ALTER TABLE tasks ADD COLUMN usage TEXT;
        ALTER TABLE tasks ADD COLUMN cost_usd REAL
        """,
    ),
    (
        "hook runs",
        # One row per run of one hook (`agentcli.hooks`): what it was, how it ended, what it
        # decided. `decision` NULL: it decided nothing.
        """
        CREATE TABLE hook_runs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL,
            task_id TEXT,
            event TEXT NOT NULL,
            source TEXT NOT NULL,
            command TEXT NOT NULL,
            exit_code INTEGER,
            timed_out INTEGER NOT NULL DEFAULT 0,
            duration_s REAL NOT NULL,
            decision TEXT,
            reason TEXT,
            tool_use_id TEXT,
            created_at REAL NOT NULL
        );
        CREATE INDEX hook_runs_by_session ON hook_runs (session_id, id)
        """,
    ),
    (
        "compactions of what the model is sent",
        # One row per compaction (`agentcli.compaction_record`): messages before `point` (a
        # message seq) are sent as `summary` and the `pinned` items (JSON). The messages
        # themselves stay in `messages`, untouched.
        """
        CREATE TABLE compactions (
            id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions (id),
            task_id TEXT,
            point INTEGER NOT NULL,
            summary TEXT NOT NULL,
            pinned TEXT NOT NULL DEFAULT '[]',
            model TEXT NOT NULL,
            trigger TEXT NOT NULL,
            instructions TEXT,
            tokens_before INTEGER NOT NULL,
            tokens_after INTEGER NOT NULL,
            usage TEXT NOT NULL DEFAULT '{}',
            cost_usd REAL,
            created_at REAL NOT NULL
        );
        CREATE INDEX compactions_by_session ON compactions (session_id, created_at)
        """,
    ),
    (
        "the custom command a task's prompt came from",
        # JSON {"name", "arguments", "path"} (tasks.CommandOrigin); NULL: a prompt as typed.
        """
        ALTER TABLE tasks ADD COLUMN command TEXT
        """,
    ),
    (
        "subagents' child tasks",
        # A subagent's run (`agentcli.agents`) is a child task of the task whose `agent` call
        # started it (`parent_call_id`), with a history of its own: kept apart from the
        # session's tasks and messages, which its parent's already count and hold. Its tool
        # calls are in `tool_calls` under its own task id (recovery resolves them as any).
        """
        CREATE TABLE child_tasks (
            id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL,
            parent_task_id TEXT NOT NULL,
            parent_call_id TEXT NOT NULL,
            agent_type TEXT NOT NULL,
            description TEXT NOT NULL,
            prompt TEXT NOT NULL,
            model TEXT NOT NULL,
            state TEXT NOT NULL,
            reason TEXT,
            error TEXT,
            final_text TEXT,
            turns INTEGER NOT NULL DEFAULT 0,
            usage TEXT,
            cost_usd REAL,
            started_at REAL NOT NULL,
            ended_at REAL
        );
        CREATE INDEX child_tasks_by_parent ON child_tasks (session_id, parent_task_id);
        CREATE TABLE child_messages (
            task_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            producer TEXT,
            created_at REAL NOT NULL,
            PRIMARY KEY (task_id, seq)
        )
        """,
    ),
)


_CREATES_TABLE = re.compile(r"CREATE TABLE (\w+)")


def schema_version(conn: sqlite3.Connection, path: Path) -> int:
    """The journal's schema version (0: an empty database), read without writing. JournalError
    for a database that is not an agentcli journal, is inconsistent, or is newer than this
    agentcli."""
    stamped = _stamped(conn)
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    tables = {row[0] for row in rows if not row[0].startswith("sqlite_")}
    version = stamped
    if stamped == 0 and "migrations" in tables:  # from before the version was in the header
        version = int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM migrations").fetchone()[0])
    latest = len(MIGRATIONS)
    if version > latest:
        raise JournalError(
            path,
            f"the journal {path} was written by a newer agentcli: its schema version is "
            f"{version}, this agentcli ({__version__}) knows versions up to {latest}",
            hint="upgrade agentcli (the journal is left as it is), or set AGENTCLI_HOME to "
            "another directory for a separate journal",
        )
    if version == 0:
        if tables - {"migrations"}:
            raise JournalError(
                path,
                f"{path} is not an agentcli journal: it holds tables "
                f"({', '.join(sorted(tables))}) but no agentcli schema",
                hint=f"agentcli leaves it as it is: move it aside ({_move_aside(path)}), or "
                "set AGENTCLI_HOME to another directory",
            )
        return 0
    missing = sorted(expected_tables(version) - tables)
    if missing:
        raise corrupt(path, f"schema version {version} but no table {', '.join(missing)}")
    rows = conn.execute("SELECT id, name FROM migrations ORDER BY id").fetchall()
    recorded = [row[0] for row in rows]
    if recorded != list(range(1, version + 1)):
        raise corrupt(path, f"schema version {version} but migrations {recorded} recorded")
    for number, name in rows:
        ours = MIGRATIONS[number - 1][0]
        if name != ours:  # a development build that numbered its migrations otherwise
            raise JournalError(
                path,
                f"the journal {path} was written by another build of agentcli: its migration "
                f"{number} is {name!r}, this agentcli's is {ours!r}",
                hint=f"agentcli leaves it as it is: move it aside ({_move_aside(path)}) to start "
                "a new journal, or set AGENTCLI_HOME to another directory",
            )
    return version


def expected_tables(version: int) -> set[str]:
    """The tables a journal at schema `version` has."""
    found = {"migrations"}
    for _name, script in MIGRATIONS[:version]:
        found.update(_CREATES_TABLE.findall(script))
    return found


def migrate(conn: sqlite3.Connection) -> list[int]:
    """Apply the migrations this database has not seen yet, each in its own transaction with
    the version it reaches; return their numbers."""
    path = _file_of(conn)
    version = schema_version(conn, path)
    applied = []
    for number in range(version + 1, len(MIGRATIONS) + 1):
        name, script = MIGRATIONS[number - 1]
        with transaction(conn):
            # Another process may have migrated while we waited for the write lock.
            if number <= schema_version(conn, path):
                continue
            conn.execute(
                "CREATE TABLE IF NOT EXISTS migrations "
                "(id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
            )
            for statement in script.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(
                "INSERT INTO migrations (id, name, applied_at) VALUES (?, ?, ?)",
                (number, name, time.time()),
            )
            conn.execute(f"PRAGMA user_version = {number}")
        applied.append(number)
    if version and not applied and _stamped(conn) == 0:
        # Written before the version was kept in the header: keep it there from now on.
        with transaction(conn):
            conn.execute(f"PRAGMA user_version = {version}")
    return applied


def _stamped(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _file_of(conn: sqlite3.Connection) -> Path:
    return Path(conn.execute("PRAGMA database_list").fetchone()[2] or ":memory:")


def corrupt(path: Path, why: str) -> JournalError:
    return JournalError(
        path,
        f"the journal {path} is corrupt: {why}",
        hint=f"agentcli leaves it as it is: move it aside to start a new journal "
        f"({_move_aside(path)}), or try to recover it with `sqlite3 {path} .recover`",
    )


def _move_aside(path: Path) -> str:
    return f"mv {path} {path}.broken"


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
