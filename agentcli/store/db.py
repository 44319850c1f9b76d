"""The journal database: where it lives, how it is opened, and what opening it refuses.

One SQLite file (`<data home>/journal.sqlite3`) holds every session of the user. It runs in WAL
mode so readers (`agentcli sessions list`) never block the running agent, with
`synchronous=NORMAL`: a commit survives the process being killed, and only the few commits
since the last fsync can be lost if the *machine* goes down. The write-ahead `started` record of
a call with side effects is the exception: it is committed with `synchronous=FULL` (see
`SqliteJournal.call_started`), which also makes everything journaled before it durable.

The schema and its versions are `store.schema`'s: opening a journal upgrades an older one.

The journal is the user's record: agentcli never overwrites or deletes it. A file it cannot use
is refused before anything is written to it (JournalError, exit 2, naming the file): one that
is empty, not a SQLite database, truncated or otherwise corrupt, holds tables but no agentcli
schema, or was written by a newer agentcli. A new journal is built aside and linked into place
complete, so an empty or half-made file at the journal's path is never agentcli's own.
Its directory and files are private (0700/0600, `agentcli.private`). SQLite failures later on
name the file too (`journal_error`).
"""

from __future__ import annotations

import errno
import os
import sqlite3
import urllib.parse
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agentcli.errors import JournalError
from agentcli.paths import data_home
from agentcli.private import make_private, open_private, private_dir
from agentcli.store.schema import MIGRATIONS, corrupt, migrate, schema_version, transaction

__all__ = [  # MIGRATIONS, migrate and transaction are re-exported for the journal's users
    "JOURNAL_FILE",
    "MIGRATIONS",
    "connect",
    "journal_error",
    "journal_errors",
    "journal_path",
    "migrate",
    "transaction",
]

JOURNAL_FILE = "journal.sqlite3"

WRITABLE_HINT = "AGENTCLI_HOME (or the user data directory) must be a writable directory"


def journal_path() -> Path:
    return data_home() / JOURNAL_FILE


def connect(path: Path | None = None) -> sqlite3.Connection:
    """Open the journal database: a new one is created at the latest schema, an older one is
    upgraded. JournalError, and nothing written to the file, when it cannot be used."""
    path = path or journal_path()
    with journal_errors(path):
        try:
            private_dir(path.parent)
        except OSError as exc:
            raise JournalError(
                path,
                f"the data directory {path.parent} cannot be used: {exc.strerror or exc}",
                hint=WRITABLE_HINT,
            ) from exc
        if not os.path.lexists(path):
            _create(path)
        conn = _open(path)
        try:
            check_size(conn, path)
            schema_version(conn, path)  # refuses what is not a journal it can use, read-only
            conn.execute("PRAGMA journal_mode=WAL")
            migrate(conn)
        except BaseException:
            conn.close()
            raise
        for file in (path, _sibling(path, "-wal"), _sibling(path, "-shm")):
            if file.exists():
                make_private(file)
    return conn


def _open(path: Path) -> sqlite3.Connection:
    # mode=rw: a journal that vanished since it was checked is not silently made anew.
    # Autocommit: every statement outside an explicit BEGIN is its own durable transaction.
    conn = sqlite3.connect(
        _uri(path, "rw"), uri=True, isolation_level=None, check_same_thread=False, timeout=10.0
    )
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


def _create(path: Path) -> None:
    """Build a new journal beside `path` and link it into place whole (if another process
    linked its own first, that one is used). The -wal and -shm files SQLite makes later take
    the journal's own mode: 0600. Nobody else sees the file before it is linked, so the
    migrations that build it are not each made durable (~10 fsyncs, 20-35 ms of a first run);
    the whole file is, once, before the link."""
    temp = _sibling(path, f".{uuid.uuid4().hex[:8]}.new")
    try:
        with open_private(temp, "xb"):
            pass
        conn = sqlite3.connect(_uri(temp, "rw"), uri=True, isolation_level=None)
        try:
            conn.execute("PRAGMA synchronous=OFF")
            conn.execute("PRAGMA journal_mode=MEMORY")
            migrate(conn)
        finally:
            conn.close()
        with temp.open("rb") as built:
            os.fsync(built.fileno())
        try:
            os.link(temp, path)
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links
            if not os.path.lexists(path):
                temp.rename(path)
    finally:
        temp.unlink(missing_ok=True)


def _sibling(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def _uri(path: Path, mode: str) -> str:
    return f"file:{urllib.parse.quote(os.fsencode(path))}?mode={mode}"


def check_size(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse a journal file that is empty, not a SQLite database, or shorter than the pages
    its header counts (unless a write-ahead log still holds them).

    Only SQLite opens the file: closing any other descriptor of it would drop the locks that
    this process's open connections hold on it (POSIX locks belong to the process)."""
    size = path.stat().st_size
    if size == 0:
        raise corrupt(path, "it is empty (0 bytes)")
    page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])  # reads the header
    pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
    wal = _sibling(path, "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        return
    if size % page_size or size < pages * page_size:
        counted = pages * page_size
        raise corrupt(path, f"it is truncated ({size} bytes; its header counts {counted})")


# SQLite's primary result codes (https://sqlite.org/rescode.html) that say what went wrong.
_CORRUPT = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB
_WRITE_FAILED = {10, 13}  # SQLITE_IOERR, SQLITE_FULL
_BUSY = {5, 6}  # SQLITE_BUSY, SQLITE_LOCKED


def journal_error(path: Path, exc: sqlite3.Error | OSError) -> JournalError:
    """What a failure of the journal means for the user, naming the file."""
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    if (isinstance(exc, OSError) and exc.errno == errno.ENOSPC) or code in _WRITE_FAILED:
        if _disk_full(path.parent):
            return JournalError(
                path, f"cannot write the journal {path}: the disk is full", hint="free some space"
            )
    if isinstance(exc, OSError):
        return JournalError(
            path, f"cannot use the journal {path}: {exc.strerror or exc}", hint=WRITABLE_HINT
        )
    if code in _CORRUPT:
        return corrupt(path, f"SQLite reports: {exc}")
    if code in _BUSY:
        return JournalError(
            path,
            f"the journal {path} is locked by another process ({exc})",
            hint="try again when it is done",
        )
    return JournalError(path, f"cannot use the journal {path}: {exc}", hint=WRITABLE_HINT)


def _disk_full(directory: Path) -> bool:
    """Whether the file system of `directory` has no room left (SQLite reports a write that
    found none as SQLITE_FULL, or as an I/O error when it was the shared-memory file's)."""
    try:
        space = os.statvfs(directory)
    except OSError:
        return False
    return space.f_bavail == 0 or space.f_favail == 0


@contextmanager
def journal_errors(path: Path | None = None) -> Iterator[None]:
    """Turn a failure of the journal (SQLite's or the file system's) into a JournalError."""
    try:
        yield
    except (sqlite3.Error, OSError) as exc:
        raise journal_error(path or journal_path(), exc) from exc
