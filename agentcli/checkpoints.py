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

`undo` restores every file the task changed, shell-made changes included, and refuses when any of
those files was changed by someone else after the task ended (it lists them).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentcli.errors import UndoError
from agentcli.fsnames import from_db, to_db
from agentcli.owngit import GitError, OwnRepo, RepoDecision, decide
from agentcli.snapshots import file_hash, file_manifest
from agentcli.store.db import transaction

MAX_FILES = 5_000
MAX_BYTES = 50 * 1024 * 1024
REF_PREFIX = "refs/agentcli/checkpoints/"


@dataclass(kw_only=True)
class UndoResult:
    task_id: str
    restored: list[str] = field(default_factory=list)
    """Workspace-relative paths given back their content from before the task."""
    removed: list[str] = field(default_factory=list)
    """Paths the task created, deleted again."""


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

    def before_change(self, task_id: str, pre_state: dict[str, Any] | None) -> None:
        """Before a change of `task_id` (`pre_state`: what the call expects to find, e.g. the
        file it writes): the task's start checkpoint the first time, later a file's
        pre-image where the checkpoint could not keep every file."""
        with self._lock:
            self._before_change(task_id, pre_state)

    def _before_change(self, task_id: str, pre_state: dict[str, Any] | None) -> None:
        if task_id not in self._complete:
            try:
                self._complete[task_id] = self._begin(task_id)
            except Exception as exc:  # the work goes on; only its undo is lost, and undo says why
                self._complete[task_id] = True
                _record_failure(self.conn, task_id, self.workspace, exc)
        if not self._complete[task_id] and pre_state and "path" in pre_state:
            self._save_preimage(task_id, Path(str(pre_state["path"])))

    def task_ended(self, task_id: str) -> None:
        """Record the end state of `task_id`, if it changed anything."""
        with self._lock:
            self._task_ended(task_id)

    def close(self) -> None:
        """Close the checkpointer's connection (the session is left)."""
        with self._lock:
            self.conn.close()

    def _task_ended(self, task_id: str) -> None:
        if task_id not in self._complete:
            return  # the task changed nothing
        row = _checkpoint_row(self.conn, task_id)
        if row is None or row["ended_at"] is not None:
            return
        try:
            finish_checkpoint(self.conn, row, self.git)
        except Exception as exc:
            _record_failure(self.conn, task_id, self.workspace, exc)
        if self.git.repo is not None:
            # The private git dir's scratch objects are never collected by anyone else; what
            # this checkpoint needs was just copied out of their reach (keep_for_undo).
            with contextlib.suppress(OSError):
                self.git.repo.tidy()

    def _begin(self, task_id: str) -> bool:
        repo = self.git.repo
        now = time.time()
        if repo is not None:
            commit = repo.commit(repo.write_tree(), f"agentcli checkpoint before task {task_id}")
            repo.set_ref(REF_PREFIX + task_id, commit)
            self.conn.execute(
                "INSERT INTO checkpoints (task_id, workspace, kind, start_ref, created_at) "
                "VALUES (?, ?, 'git', ?, ?)",
                (task_id, to_db(str(self.workspace)), commit, now),
            )
            return True
        manifest, complete = _manifest_with_contents(self.conn, self.workspace)
        self.conn.execute(
            "INSERT INTO checkpoints (task_id, workspace, kind, start_manifest, complete, "
            "created_at) VALUES (?, ?, 'files', ?, ?, ?)",
            (task_id, to_db(str(self.workspace)), json.dumps(manifest), int(complete), now),
        )
        return complete

    def _save_preimage(self, task_id: str, path: Path) -> None:
        try:
            rel = str(path.resolve().relative_to(self.workspace))
        except ValueError:
            return
        try:
            data: bytes | None = path.read_bytes()
        except FileNotFoundError:
            data = None
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
    sizes = [(workspace / rel).stat().st_size for rel in manifest]
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
    contents = [(digest, (workspace / rel).read_bytes()) for digest, rel in missing.items()]
    with transaction(conn):
        conn.executemany("INSERT OR IGNORE INTO blobs (hash, content) VALUES (?, ?)", contents)
    return manifest, True


def _workspace_of(row: sqlite3.Row) -> Path:
    """The workspace a checkpoint row was taken in (stored as bytes when not UTF-8)."""
    return Path(from_db(row["workspace"]))


def _checkpoint_row(conn: sqlite3.Connection, task_id: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute(
        "SELECT * FROM checkpoints WHERE task_id = ?", (task_id,)
    ).fetchone()
    return row


def finish_checkpoint(conn: sqlite3.Connection, row: sqlite3.Row, git: RepoDecision) -> None:
    """Record the end state of a checkpointed task (also used by crash recovery)."""
    workspace = _workspace_of(row)
    if row["kind"] == "git":
        repo = git.repo_for(workspace)
        if repo is None:
            return
        message = f"agentcli checkpoint after task {row['task_id']}"
        commit = repo.commit(repo.write_tree(), message, row["start_ref"])
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
        manifest = {p: h for p in paths if (h := file_hash(workspace / p)) is not None}
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
        row = _checkpoint_row(conn, task_id)
        if row is not None and row["ended_at"] is None:
            try:
                finish_checkpoint(conn, row, git or decide(_workspace_of(row)))
            except Exception as exc:
                _record_failure(conn, task_id, _workspace_of(row), exc)


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


def _remove_empty_parents(path: Path, stop: Path) -> None:
    parent = path.parent
    while parent != stop and stop in parent.parents:
        with contextlib.suppress(OSError):
            parent.rmdir()  # only succeeds when empty
        if parent.exists():
            return
        parent = parent.parent


@dataclass(kw_only=True)
class _Plan:
    changed: list[str]
    """Workspace-relative paths the task changed."""
    contents: dict[str, tuple[bytes, int | None] | None]
    """What each changed path gets back: (content, git mode if known) or None (delete it)."""
    conflicts: list[str] = field(default_factory=list)
    unrecoverable: list[str] = field(default_factory=list)


def undo(
    conn: sqlite3.Connection,
    workspace: Path,
    task_id: str | None = None,
    *,
    git: RepoDecision | None = None,
) -> UndoResult:
    """Restore the files the task (default: the latest one in `workspace` that changed files
    and was not undone yet) changed. Raises UndoError with the reason when it must refuse.
    `git` is the caller's decision for `workspace` (made now when not given)."""
    row = _pick(conn, workspace.resolve(), task_id)
    task = row["task_id"]
    if row["undone_at"] is not None:
        raise UndoError(f"task {task} was already undone")
    if row["kind"] == "failed":
        raise UndoError(
            f"task {task} cannot be undone: its checkpoint failed ({from_db(row['error'])})"
        )
    if row["ended_at"] is None:
        raise UndoError(
            f"task {task} has not ended (it is still running, or its run was interrupted: "
            "resume that session first so it is recovered)"
        )
    plan = _plan(conn, row, git or decide(workspace))
    if plan.conflicts:
        raise UndoError(
            f"refusing to undo task {task}: these files were changed after the task ended "
            "(by you or another program), and undoing would lose those changes",
            plan.conflicts,
        )
    if plan.unrecoverable:
        raise UndoError(
            f"cannot undo task {task}: no saved copy of these files from before the task (the "
            f"workspace is not a git repository and had more than {MAX_FILES} files or "
            f"{MAX_BYTES // (1024 * 1024)} MB, so only files written by agentcli's own tools were "
            "saved)",
            plan.unrecoverable,
        )
    result = _apply(plan, _workspace_of(row), task)
    conn.execute("UPDATE checkpoints SET undone_at = ? WHERE task_id = ?", (time.time(), task))
    return result


@dataclass(frozen=True, slots=True)
class UndoTarget:
    task_id: str
    session_id: str


def undo_target(conn: sqlite3.Connection, workspace: Path, task_id: str | None) -> UndoTarget:
    """The task `undo` would restore (same choice, same UndoError) and its session, whose lock
    the caller takes before undoing (see `ui.sessions.undo_locked`)."""
    task = _pick(conn, workspace.resolve(), task_id)["task_id"]
    row = conn.execute("SELECT session_id FROM tasks WHERE id = ?", (task,)).fetchone()
    return UndoTarget(task_id=task, session_id=row[0])


def task_preimages(
    conn: sqlite3.Connection, workspace: Path, task_id: str, *, git: RepoDecision | None = None
) -> dict[str, bytes | None]:
    """What each file the task changed held before the task (None: it did not exist), from
    its checkpoint: for `/diff`, including files changed by commands. UndoError if the task
    has no usable checkpoint."""
    row = _pick(conn, workspace.resolve(), task_id)
    if row["kind"] == "failed":
        raise UndoError(f"task {task_id} has no checkpoint ({from_db(row['error'])})")
    plan = _plan(conn, row, git or decide(workspace))
    return {rel: None if saved is None else saved[0] for rel, saved in plan.contents.items()}


def _pick(conn: sqlite3.Connection, workspace: Path, task_id: str | None) -> sqlite3.Row:
    if task_id is not None:
        row = _checkpoint_row(conn, task_id.strip().upper())
        if row is None:
            raise UndoError(f"task {task_id} has no checkpoint: it changed no files, or is unknown")
        return row
    found: sqlite3.Row | None = conn.execute(
        "SELECT * FROM checkpoints WHERE workspace = ? AND undone_at IS NULL "
        "ORDER BY created_at DESC, task_id DESC LIMIT 1",
        (to_db(str(workspace)),),
    ).fetchone()
    if found is None:
        raise UndoError(f"no task in {workspace} has changes left to undo")
    return found


def _plan(conn: sqlite3.Connection, row: sqlite3.Row, git: RepoDecision) -> _Plan:
    if row["kind"] != "git":
        return _files_plan(conn, row)
    workspace = _workspace_of(row).resolve()
    repo = git.repo_for(workspace)
    if repo is None:
        raise UndoError(f"{workspace} is no longer a git repository; cannot read the checkpoint")
    try:
        return _git_plan(repo, row, workspace)
    except GitError as exc:
        raise UndoError(f"cannot read the checkpoint of task {row['task_id']} ({exc})") from exc


def _git_plan(repo: OwnRepo, row: sqlite3.Row, workspace: Path) -> _Plan:
    root = repo.work_tree
    start, end = row["start_ref"], row["end_ref"]
    paths = [p for p in repo.diff_names(start, end) if (root / p).is_relative_to(workspace)]
    plan = _Plan(changed=[_rel(root / p, workspace) for p in paths], contents={})
    if not paths:
        return plan
    changed_since = set(repo.diff_names(end, repo.write_tree(), paths))
    plan.conflicts = [_rel(root / p, workspace) for p in paths if p in changed_since]
    entries = {p: e for p, e in repo.entries(start, paths).items() if e.kind == "blob"}
    blobs = repo.read_objects(entry.oid for entry in entries.values())
    lost = [
        rel
        for p, rel in zip(paths, plan.changed, strict=True)
        if p in entries and entries[p].oid not in blobs
    ]
    if lost:
        raise UndoError(
            f"cannot undo task {row['task_id']}: its checkpoint lacks the content these files "
            "had before the task",
            lost,
        )
    for path, rel in zip(paths, plan.changed, strict=True):
        entry = entries.get(path)
        plan.contents[rel] = None if entry is None else (blobs[entry.oid][1], entry.mode)
    return plan


def _rel(path: Path, workspace: Path) -> str:
    return os.path.relpath(path, workspace)


def _files_plan(conn: sqlite3.Connection, row: sqlite3.Row) -> _Plan:
    workspace = _workspace_of(row)
    start: dict[str, str] | None = json.loads(row["start_manifest"] or "null")
    end: dict[str, str] = json.loads(row["end_manifest"] or "null") or {}
    pre = {
        from_db(r["path"]): r["hash"]
        for r in conn.execute(
            "SELECT path, hash FROM preimages WHERE task_id = ?", (row["task_id"],)
        )
    }
    before = start if start is not None else pre
    keys = (set(before) | set(end)) if start is not None else set(pre)
    changed = sorted(k for k in keys if before.get(k) != end.get(k))
    plan = _Plan(changed=changed, contents={})
    for rel in changed:
        if file_hash(workspace / rel) != end.get(rel):
            plan.conflicts.append(rel)
        digest = before.get(rel)
        if digest is None:
            plan.contents[rel] = None
            continue
        blob = conn.execute("SELECT content FROM blobs WHERE hash = ?", (digest,)).fetchone()
        if blob is None:
            plan.unrecoverable.append(rel)
        else:
            plan.contents[rel] = (bytes(blob[0]), None)
    return plan


def _apply(plan: _Plan, workspace: Path, task_id: str) -> UndoResult:
    result = UndoResult(task_id=task_id)
    root = workspace.resolve()
    for rel in plan.changed:
        path = root / rel
        content = plan.contents[rel]
        if content is None:
            if path.is_symlink() or path.exists():
                path.unlink()
                _remove_empty_parents(path, root)
            result.removed.append(rel)
            continue
        data, mode = content
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or mode == 0o120000:
            path.unlink(missing_ok=True)
        if mode == 0o120000:
            path.symlink_to(os.fsdecode(data))  # a link's target is a name: bytes
            result.restored.append(rel)
            continue
        path.write_bytes(data)
        if mode is not None:
            path.chmod(0o755 if mode & 0o111 else 0o644)
        result.restored.append(rel)
    return result
