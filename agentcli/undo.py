"""Undoing a task from its checkpoint (`agentcli.checkpoints`): which task (one named, or the
latest in the workspace with changes left), which files it changed, whether anyone changed those
files after it ended (then undo refuses, and lists them), and restoring what they held before.
The same plan gives `/diff` the files' content from before the task (`task_preimages`). Only the
paths the task's own calls changed are the task's (`agentcli.attribution`): what another session
changed meanwhile is left alone, and a refusal names the session whose later task changed a file.

In git the plan reads the checkpoint's two commits through agentcli's own git; outside git it
compares the start and end manifests, and takes the content from the journal's stored blobs or
the tool pre-images (a large tree kept only those: a file changed otherwise cannot be restored,
and undo names it). Files are compared and written as the entries they are, never through a
link (`agentcli.safe_write`, the write tools' writer): a directory a task swapped for a link out
of the workspace is put back as the directory, and nothing is written where the link leads.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

from agentcli.checkpoints import MAX_BYTES, MAX_FILES, checkpoint_row, workspace_of
from agentcli.errors import UndoError, UsageError
from agentcli.fsnames import from_db, to_db
from agentcli.owngit import GitError, OwnRepo, RepoDecision, decide
from agentcli.safe_write import Unwritable, pinned_parent, remove, replace_file, replace_with_link
from agentcli.snapshots import file_hash


@dataclass(kw_only=True)
class UndoResult:
    task_id: str
    restored: list[str] = field(default_factory=list)
    """Workspace-relative paths given back their content from before the task."""
    removed: list[str] = field(default_factory=list)
    """Paths the task created, deleted again."""


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
    named = describe_task(conn, task)
    if row["undone_at"] is not None:
        raise UndoError(f"{named} was already undone")
    if row["kind"] == "failed":
        raise UndoError(
            f"{named} cannot be undone: its checkpoint failed ({from_db(row['error'])})"
        )
    if row["ended_at"] is None:
        raise UndoError(
            f"{named} has not ended (it is still running, or its run was interrupted: "
            "resume that session first so it is recovered)"
        )
    plan = _plan(conn, row, git or decide(workspace))
    if plan.conflicts:
        raise UndoError(
            f"refusing to undo {named}: these files were changed after the task ended "
            "(by you, another program or another agentcli session), and undoing would lose those "
            "changes",
            [_changed_by(conn, row, rel) for rel in plan.conflicts],
        )
    if plan.unrecoverable:
        raise UndoError(
            f"cannot undo {named}: no saved copy of these files from before the task (the "
            f"workspace is not a git repository and had more than {MAX_FILES} files or "
            f"{MAX_BYTES // (1024 * 1024)} MB, so only files written by agentcli's own tools were "
            "saved)",
            plan.unrecoverable,
        )
    result = _apply(plan, workspace_of(row), task)
    conn.execute("UPDATE checkpoints SET undone_at = ? WHERE task_id = ?", (time.time(), task))
    return result


@dataclass(frozen=True, slots=True)
class UndoTarget:
    task_id: str
    session_id: str


def undo_target(
    conn: sqlite3.Connection, workspace: Path, task_id: str | None, session: str | None = None
) -> UndoTarget:
    """The task `undo` would restore (same choice, same errors) and its session, whose lock the
    caller takes before undoing. Without `task_id`: the latest task of `session` (when given:
    the REPL's own) or of the workspace with changes left."""
    task = _pick(conn, workspace.resolve(), task_id, session)["task_id"]
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


def describe_task(conn: sqlite3.Connection, task_id: str) -> str:
    """`task ID ("its prompt…", session SID)`: how a task is named to the user, who knows it
    by what they asked rather than by its id."""
    row = conn.execute("SELECT prompt, session_id FROM tasks WHERE id = ?", (task_id,)).fetchone()
    if row is None:
        return f"task {task_id}"
    prompt = " ".join(str(from_db(row[0])).split())
    shown = prompt if len(prompt) <= 60 else prompt[:59] + "…"
    return f"task {task_id} ({shown!r}, session {row[1]})"


def _pick(
    conn: sqlite3.Connection, workspace: Path, task_id: str | None, session: str | None = None
) -> sqlite3.Row:
    if task_id is not None:
        wanted = task_id.strip().upper()
        row = checkpoint_row(conn, wanted)
        if row is not None:
            return row
        if conn.execute("SELECT 1 FROM tasks WHERE id = ?", (wanted,)).fetchone() is None:
            raise UsageError(
                f"no such task: {task_id}",
                hint="`agentcli sessions show SESSION` lists a session's tasks and their ids",
            )
        raise UndoError(f"{describe_task(conn, wanted)} changed no files: nothing to undo")
    query = "SELECT c.* FROM checkpoints c JOIN tasks t ON t.id = c.task_id "
    query += "WHERE c.workspace = ? AND c.undone_at IS NULL"
    params: list[str | bytes] = [to_db(str(workspace))]
    if session is not None:
        query += " AND t.session_id = ?"
        params.append(session)
    found: sqlite3.Row | None = conn.execute(
        query + " ORDER BY c.created_at DESC, c.task_id DESC LIMIT 1", params
    ).fetchone()
    if found is None:
        if session is not None:
            raise UndoError(
                "nothing left to undo in this session (a task of another session: "
                "/undo TASK_ID, or `agentcli undo --task TASK_ID`)"
            )
        raise UndoError(f"no task in {workspace} has changes left to undo")
    return found


def _own_paths(conn: sqlite3.Connection, row: sqlite3.Row) -> set[str] | None:
    """The paths the task's own calls changed (`agentcli.attribution`); None when they are not
    all known (a task from before attribution, a command that ran when its process died, a tree
    too big to list), and the task is judged by its start and end states alone."""
    if row["attribution"] != "known":
        return None
    query = "SELECT path FROM task_paths WHERE task_id = ?"
    return {from_db(r[0]) for r in conn.execute(query, (row["task_id"],))}


def _changed_by(conn: sqlite3.Connection, row: sqlite3.Row, rel: str) -> str:
    """`rel`, with the session and task that changed it after `row`'s task ended, if a task
    of agentcli's in the workspace did (else it was the user or another program)."""
    later = conn.execute(
        "SELECT t.session_id, t.id FROM task_paths p JOIN tasks t ON t.id = p.task_id "
        "JOIN checkpoints c ON c.task_id = p.task_id WHERE p.path = ? AND p.task_id != ? "
        "AND c.workspace = ? AND (c.ended_at IS NULL OR c.ended_at > ?) "
        "ORDER BY c.created_at DESC LIMIT 1",
        (to_db(rel), row["task_id"], row["workspace"], row["ended_at"]),
    ).fetchone()
    if later is None:
        return rel
    return f"{rel} (changed by session {later[0]}, task {later[1]})"


def _plan(conn: sqlite3.Connection, row: sqlite3.Row, git: RepoDecision) -> _Plan:
    own = _own_paths(conn, row)
    if row["kind"] != "git":
        return _files_plan(conn, row, own)
    workspace = workspace_of(row).resolve()
    repo = git.repo_for(workspace)
    if repo is None:
        raise UndoError(f"{workspace} is no longer a git repository; cannot read the checkpoint")
    try:
        return _git_plan(repo, row, workspace, own)
    except GitError as exc:
        raise UndoError(f"cannot read the checkpoint of task {row['task_id']} ({exc})") from exc


def _git_plan(repo: OwnRepo, row: sqlite3.Row, workspace: Path, own: set[str] | None) -> _Plan:
    root = repo.work_tree
    start, end = row["start_ref"], row["end_ref"]
    paths = [
        p
        for p in repo.diff_names(start, end)
        if (root / p).is_relative_to(workspace)
        and (own is None or Path(_rel(root / p, workspace)).as_posix() in own)
    ]
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


def _files_plan(conn: sqlite3.Connection, row: sqlite3.Row, own: set[str] | None) -> _Plan:
    workspace = Path(os.path.realpath(workspace_of(row)))
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
    changed = sorted(k for k in keys if before.get(k) != end.get(k) and (own is None or k in own))
    plan = _Plan(changed=changed, contents={})
    for rel in changed:
        if file_hash(workspace / rel, workspace) != end.get(rel):
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
    """Put back what each changed path held at the checkpoint, through the writer the file
    tools use (`agentcli.safe_write`): every directory opened from the workspace down without
    following a link. A link where the checkpoint had a directory (a file of the checkpoint was
    in it) is replaced by that directory again; nothing is written or removed through a link."""
    result = UndoResult(task_id=task_id)
    root = Path(os.path.realpath(workspace))
    for rel in plan.changed:
        path = root / rel
        content = plan.contents[rel]
        try:
            if content is None:
                remove(path, root)
                result.removed.append(rel)
                continue
            data, mode = content
            with pinned_parent(path, [root], replace_links=True) as dir_fd:
                if mode == 0o120000:
                    replace_with_link(dir_fd, path.name, os.fsdecode(data))  # a link is a name
                else:
                    file_mode = None if mode is None else 0o755 if mode & 0o111 else 0o644
                    replace_file(dir_fd, path.name, data, mode=file_mode, keep_special=False)
        except Unwritable as exc:
            raise UndoError(
                f"undo of task {task_id} stopped at {rel}: {exc.path} is {exc.why}; "
                f"restored so far: {', '.join(result.restored + result.removed) or 'nothing'}",
                [rel],
            ) from exc
        result.restored.append(rel)
    return result
