"""Undo checkpoints: the workspace before a task's first change and when the task ended.

In a git repository a checkpoint is a commit object of the whole working copy (tracked and
untracked, non-ignored files), written by agentcli's own git in its private git dir
(`agentcli.owngit`) under the ref `refs/agentcli/checkpoints/<task id>` there: the repository's
index, HEAD, branches and object store are never touched, and nothing it configures runs. When
the task ends, a second commit (parent: the first) records the end state under the same ref, and
every object undo will read is copied where no garbage collection reaches it. Checkpoints that
older versions of agentcli kept in the repository itself are read through the private dir's
alternates, so they can still be undone. Whether the workspace is a repository at all is the
session's decision (`owngit.RepoDecision`), never re-made here.

Outside git a checkpoint is a manifest (path -> sha256) of the workspace plus the content of
every file, stored in the journal, when the tree is small (`MAX_FILES`, `MAX_BYTES`). A larger
tree keeps only the manifest, and the pre-images of the files agentcli's own tools write: undo can
then restore those, and names every other changed file (e.g. one changed through shell) that it
cannot restore. Ignored files (`.gitignore`) are never part of a checkpoint, in git or not.

Which paths the task's own calls changed is recorded with the checkpoint (`record_paths`, from
`agentcli.attribution`): another session's changes made while the task ran are not the task's.
Undoing a task from its checkpoint is `agentcli.undo`: it restores every file the task changed,
shell-made changes included, and refuses when any of those files was changed by someone else
after the task ended (it lists them).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path

from agentcli.call_records import PreState
from agentcli.fsnames import from_db, to_db
from agentcli.owngit import RepoDecision, decide
from agentcli.safe_read import Inside, read_bytes
from agentcli.snapshots import file_hash, file_manifest
from agentcli.store.db import transaction

MAX_FILES = 5_000
MAX_BYTES = 50 * 1024 * 1024
REF_PREFIX = "refs/agentcli/checkpoints/"


class Checkpointer:
    """Takes a task's checkpoints. Its methods are slow (git, hashing every file) and blocking:
    the conversation runs them in worker threads (`asyncio.to_thread`), so they serialize on a
    lock, and `conn` should be a connection of the checkpointer's own (a transaction on it
    must not take in the journal's writes)."""

    def __init__(self, conn: sqlite3.Connection, git: RepoDecision) -> None:
        self.conn = conn
        self.git = git
        self.workspace = git.workspace
        self._complete: dict[str, bool] = {}
        self._lock = threading.Lock()

    def before_change(self, task_id: str, pre_state: PreState | None) -> str | None:
        """Before a change of `task_id` (`pre_state`: what the call expects to find, e.g. the
        file it writes): the task's start checkpoint the first time, later a file's
        pre-image where the checkpoint could not keep every file. Returns the working copy's
        git tree when it was written just now (the start checkpoint's), else None."""
        with self._lock:
            return self._before_change(task_id, pre_state)

    def _before_change(self, task_id: str, pre_state: PreState | None) -> str | None:
        tree = None
        if task_id not in self._complete:
            try:
                self._complete[task_id], tree = self._begin(task_id)
            except Exception as exc:  # the work goes on; only its undo is lost, and undo says why
                self._complete[task_id] = True
                _record_failure(self.conn, task_id, self.workspace, exc)
        if not self._complete[task_id] and pre_state is not None and pre_state.write is not None:
            self._save_preimage(task_id, Path(pre_state.write.path))
        return tree

    def task_ended(self, task_id: str, end_tree: str | None = None) -> None:
        """Record the end state of `task_id`, if it changed anything: `end_tree` when given
        (the git tree of the workspace the caller has just taken, as the task ended)."""
        with self._lock:
            self._task_ended(task_id, end_tree)

    def record_paths(self, task_id: str, paths: set[str] | None, *, settled: bool) -> None:
        """Paths a call of `task_id` changed itself (None: could not be told), and whether the
        task's paths are all known now. `attribution` says which the undo can trust: 'known',
        'pending' (a command runs, or ran when the process died) or 'unknown' (for good)."""
        state = "unknown" if paths is None else "known" if settled else "pending"
        update = (
            "UPDATE checkpoints SET attribution = ? WHERE task_id = ? "
            "AND attribution IS NOT 'unknown'"
        )
        with self._lock:
            try:
                with transaction(self.conn):
                    self.conn.executemany(
                        "INSERT OR IGNORE INTO task_paths (task_id, path) VALUES (?, ?)",
                        [(task_id, to_db(rel)) for rel in paths or ()],
                    )
                    self.conn.execute(update, (state, task_id))
            except sqlite3.Error:  # the work goes on; its undo falls back to start and end
                with contextlib.suppress(sqlite3.Error):
                    self.conn.execute(update, ("unknown", task_id))

    def close(self) -> None:
        """Close the checkpointer's connection (the session is left)."""
        with self._lock:
            self.conn.close()

    def _task_ended(self, task_id: str, end_tree: str | None) -> None:
        if task_id not in self._complete:
            return  # the task changed nothing
        row = checkpoint_row(self.conn, task_id)
        if row is None or row["ended_at"] is not None:
            return
        try:
            finish_checkpoint(self.conn, row, self.git, end_tree=end_tree)
        except Exception as exc:
            _record_failure(self.conn, task_id, self.workspace, exc)
        if self.git.repo is not None:
            # The private git dir's scratch objects are never collected by anyone else; what
            # this checkpoint needs was just copied out of their reach (keep_for_undo).
            with contextlib.suppress(OSError):
                self.git.repo.tidy()

    def _begin(self, task_id: str) -> tuple[bool, str | None]:
        """Take the start checkpoint: whether it keeps every file, and its git tree."""
        repo = self.git.repo
        now = time.time()
        if repo is not None:
            tree = repo.write_tree()
            commit = repo.commit(tree, f"agentcli checkpoint before task {task_id}")
            repo.set_ref(REF_PREFIX + task_id, commit)
            self.conn.execute(
                "INSERT INTO checkpoints (task_id, workspace, kind, start_ref, created_at) "
                "VALUES (?, ?, 'git', ?, ?)",
                (task_id, to_db(str(self.workspace)), commit, now),
            )
            return True, tree
        manifest, complete = _manifest_with_contents(self.conn, self.workspace)
        self.conn.execute(
            "INSERT INTO checkpoints (task_id, workspace, kind, start_manifest, complete, "
            "created_at) VALUES (?, ?, 'files', ?, ?, ?)",
            (task_id, to_db(str(self.workspace)), json.dumps(manifest), int(complete), now),
        )
        return complete, None

    def _save_preimage(self, task_id: str, path: Path) -> None:
        try:
            rel = str(path.resolve().relative_to(self.workspace))
        except ValueError:
            return
        try:  # as the write tool itself read it: a regular file of the workspace, bounded
            data: bytes | None = read_bytes(
                path, inside=Inside.of(self.workspace), limit=MAX_BYTES, follow=False
            )
        except FileNotFoundError:
            data = None
        except OSError:
            return  # no copy kept: undo names the file as one it cannot restore
        digest = None if data is None else hashlib.sha256(data).hexdigest()
        if data is not None:
            self.conn.execute(
                "INSERT OR IGNORE INTO blobs (hash, content) VALUES (?, ?)", (digest, data)
            )
        self.conn.execute(
            "INSERT OR IGNORE INTO preimages (task_id, path, hash) VALUES (?, ?, ?)",
            (task_id, to_db(rel), digest),
        )


def _manifest_with_contents(
    conn: sqlite3.Connection, workspace: Path
) -> tuple[dict[str, str] | None, bool]:
    """The workspace manifest, and whether every file's content was stored with it."""
    try:
        manifest = file_manifest(workspace)
    except ValueError:
        return None, False  # too many files: only tool pre-images will be kept
    sizes = [(workspace / rel).lstat().st_size for rel in manifest]
    if len(manifest) > MAX_FILES or sum(sizes) > MAX_BYTES:
        return manifest, False
    # Files are read before the write transaction, which then holds the journal's write lock
    # (the session's own records wait on it) only as long as the inserts take.
    query = "SELECT 1 FROM blobs WHERE hash = ?"
    missing = {
        digest: rel
        for rel, digest in manifest.items()
        if conn.execute(query, (digest,)).fetchone() is None
    }
    inside = Inside.of(workspace)
    try:  # each as the manifest saw it: a regular file, never through a link
        contents = [
            (digest, read_bytes(workspace / rel, inside=inside, limit=MAX_BYTES, follow=False))
            for digest, rel in missing.items()
        ]
    except OSError:  # changed since it was listed: only tool pre-images will be kept
        return manifest, False
    with transaction(conn):
        conn.executemany("INSERT OR IGNORE INTO blobs (hash, content) VALUES (?, ?)", contents)
    return manifest, True


def workspace_of(row: sqlite3.Row) -> Path:
    """The workspace a checkpoint row was taken in (stored as bytes when not UTF-8)."""
    return Path(from_db(row["workspace"]))


def checkpoint_row(conn: sqlite3.Connection, task_id: str) -> sqlite3.Row | None:
    """The checkpoint of `task_id`, if it has one."""
    row: sqlite3.Row | None = conn.execute(
        "SELECT * FROM checkpoints WHERE task_id = ?", (task_id,)
    ).fetchone()
    return row


def finish_checkpoint(
    conn: sqlite3.Connection, row: sqlite3.Row, git: RepoDecision, end_tree: str | None = None
) -> None:
    """Record the end state of a checkpointed task (also used by crash recovery): `end_tree`,
    the tree of the session's repository just taken, or the working copy now."""
    workspace = workspace_of(row)
    if row["kind"] == "git":
        repo = git.repo_for(workspace)
        if repo is None:
            return
        message = f"agentcli checkpoint after task {row['task_id']}"
        tree = end_tree if end_tree is not None and repo is git.repo else repo.write_tree()
        commit = repo.commit(tree, message, row["start_ref"])
        repo.set_ref(REF_PREFIX + row["task_id"], commit)
        repo.keep_for_undo(row["start_ref"], commit)
        conn.execute(
            "UPDATE checkpoints SET end_ref = ?, ended_at = ? WHERE task_id = ?",
            (commit, time.time(), row["task_id"]),
        )
        return
    try:
        manifest = file_manifest(workspace)
    except ValueError:  # too big to list: record at least the files with pre-images
        rows = conn.execute("SELECT path FROM preimages WHERE task_id = ?", (row["task_id"],))
        paths = [from_db(r[0]) for r in rows]
        root = workspace.resolve()
        manifest = {p: h for p in paths if (h := file_hash(root / p, root)) is not None}
    conn.execute(
        "UPDATE checkpoints SET end_manifest = ?, ended_at = ? WHERE task_id = ?",
        (json.dumps(manifest), time.time(), row["task_id"]),
    )


def finish_open_checkpoints(
    conn: sqlite3.Connection, task_ids: list[str], git: RepoDecision | None = None
) -> None:
    """End the checkpoints of tasks that were interrupted (the state now is their end). `git`
    is the resuming session's decision; without one, each task's workspace is decided now."""
    for task_id in task_ids:
        row = checkpoint_row(conn, task_id)
        if row is not None and row["ended_at"] is None:
            try:
                finish_checkpoint(conn, row, git or decide(workspace_of(row)))
            except Exception as exc:
                _record_failure(conn, task_id, workspace_of(row), exc)


def _record_failure(
    conn: sqlite3.Connection, task_id: str, workspace: Path, exc: Exception
) -> None:
    now = time.time()
    conn.execute(
        "INSERT INTO checkpoints (task_id, workspace, kind, error, created_at, ended_at) "
        "VALUES (?, ?, 'failed', ?, ?, ?) ON CONFLICT (task_id) DO UPDATE SET "
        "kind = 'failed', error = excluded.error, ended_at = excluded.ended_at",
        (task_id, to_db(str(workspace)), to_db(f"{type(exc).__name__}: {exc}"), now, now),
    )
