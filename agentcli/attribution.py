"""Which workspace paths a task's own calls changed, so that its `changed_files` and its undo
cover what the task did, not whatever else changed in the workspace while it ran (another
session, the user's editor: issue 15).

A call that names the file it writes (`write_file`, `edit_file`: the `path` of its pre-state)
changed that path. Any other call that may change something (`shell`, an MCP tool) is bracketed
by two listings of the workspace, taken right before it starts and right after it ends, and the
paths that differ are the call's: in a git repository two git trees of the working copy (as the
artifact versions are; git's index makes them cheap, and they see what git sees), elsewhere a
stat manifest (path -> size, mtime, inode, mode; nothing is read or hashed). What another
program writes during that window is taken for the call's own: the window is the command's run
time, and that is the remaining limit. Where no listing can be made (a tree over
`snapshots.MAX_MANIFEST_FILES` files outside git, a git failure) the task's paths are unknown,
and the task is judged by its start and end states alone, as before attribution existed.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from agentcli.call_records import PreState, ToolCallRecord
from agentcli.owngit import GitError, OwnRepo
from agentcli.snapshots import walk_files
from agentcli.tools.runtime import AfterChange, BeforeChange

Stat = tuple[int, int, int, int]


def stat_manifest(workspace: Path) -> dict[str, Stat]:
    """Workspace-relative path -> (size, mtime ns, inode, mode) of every file a snapshot
    covers (same walk: skipped and ignored directories left out). ValueError if too many."""
    manifest: dict[str, Stat] = {}
    for rel, full in walk_files(workspace):
        try:
            st = full.lstat()
        except OSError:
            continue  # gone between the listing and the stat
        manifest[rel] = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode)
    return manifest


def differing(before: dict[str, Stat], after: dict[str, Stat]) -> set[str]:
    return {rel for rel in before.keys() | after.keys() if before.get(rel) != after.get(rel)}


Finish = Callable[[], "set[str] | None"]
"""Called (blocking) once the call has ended: the paths it changed, None if unknown."""


@dataclass
class TaskPaths:
    """The paths each task of a session changed through its own calls. `before` and the
    `Finish` it returns block (a walk of the workspace for a command): run them off the
    event loop."""

    workspace: Path
    repo: OwnRepo | None = None
    """The session's decision: the workspace's repository, if it is in one."""
    paths: dict[str, set[str]] = field(default_factory=dict)
    unknown: set[str] = field(default_factory=set)
    """Tasks with a call whose paths could not be told: judged by start and end alone."""

    def named(self, task_id: str, pre_state: PreState | None) -> set[str] | None:
        """The paths a call names in its pre-state, now the task's; None for a call that
        names none (a command), whose paths `before` finds out."""
        if pre_state is None or pre_state.write is None:
            return None
        rel = self._relative(Path(pre_state.write.path))
        paths = set() if rel is None else {rel}
        self.paths.setdefault(task_id, set()).update(paths)
        return paths

    def before(self, task_id: str, tree: str | None = None) -> Finish:
        """Right before a call of `task_id` that names no path starts (blocking); `tree`: the
        working copy's git tree if the caller has just written it (the start checkpoint)."""
        own = self.paths.setdefault(task_id, set())
        if self.repo is not None:
            return self._before_in_git(task_id, self.repo, own, tree)
        try:
            start = stat_manifest(self.workspace)
        except (OSError, ValueError):
            self.unknown.add(task_id)
            return lambda: None

        def finish() -> set[str] | None:
            try:
                changed = differing(start, stat_manifest(self.workspace))
            except (OSError, ValueError):
                self.unknown.add(task_id)
                return None
            own.update(changed)
            return changed

        return finish

    def _before_in_git(
        self, task_id: str, repo: OwnRepo, own: set[str], tree: str | None
    ) -> Finish:
        try:
            start = tree if tree is not None else repo.write_tree()
        except (GitError, OSError):
            self.unknown.add(task_id)
            return lambda: None

        def finish() -> set[str] | None:
            try:
                names = repo.diff_names(start, repo.write_tree())
            except (GitError, OSError):
                self.unknown.add(task_id)
                return None
            changed = {rel for n in names if (rel := self._relative(repo.work_tree / n))}
            own.update(changed)
            return changed

        return finish

    def own(self, task_id: str, changed: list[str]) -> list[str]:
        """Of `changed` (what differs between the task's start and end), what the task's own
        calls changed; all of it when the task's paths are unknown."""
        if task_id in self.unknown:
            return changed
        own = self.paths.get(task_id, set())
        return [rel for rel in changed if rel in own]

    def _relative(self, path: Path) -> str | None:
        """`path` (a real path, or one under the real work tree) relative to the workspace, as
        the path it is: a link in it is never resolved, so `keys/authorized_keys` under a
        `keys` swapped for a link out is still that path of the workspace."""
        try:
            workspace = Path(os.path.realpath(self.workspace))
            return Path(os.path.normpath(path)).relative_to(workspace).as_posix()
        except ValueError:
            return None


class Checkpoints(Protocol):
    """Undo checkpoints of the session's tasks (`agentcli.checkpoints.Checkpointer`). Its
    methods block (git, hashing, the journal): they are called in worker threads."""

    def before_change(self, task_id: str, pre_state: PreState | None) -> str | None:
        """Returns the working copy's git tree if it wrote it just now, else None."""

    def task_ended(self, task_id: str, end_tree: str | None = None) -> None:
        """`task_id` ended; `end_tree`: the workspace's git tree as it ended, if the caller
        has just written it (the checkpoint need not write it again)."""

    def record_paths(self, task_id: str, paths: set[str] | None, *, settled: bool) -> None:
        """`paths` changed by a call of `task_id` (None: could not be told); not `settled`
        while a call whose paths are not known yet runs."""

    def close(self) -> None:
        """Stop recording checkpoints (the session is left)."""


def around_changes(
    task_id: str,
    task_paths: TaskPaths,
    checkpoints: Checkpoints | None,
    seen: Callable[[set[str]], None] | None = None,
) -> BeforeChange:
    """The runtime's hook around each call of `task_id` that may change something: the undo
    checkpoint before the first, and the paths each call changed, recorded in the journal
    before a call that names them runs, after a command has run. `seen` also hears the paths
    of each call (a subagent's calls are its task's changes, and the subagent's own)."""

    async def before_change(
        _record: ToolCallRecord, pre_state: PreState | None
    ) -> AfterChange | None:
        tree = None
        if checkpoints is not None:
            tree = await asyncio.to_thread(checkpoints.before_change, task_id, pre_state)
        named = task_paths.named(task_id, pre_state)
        if named is not None:
            if seen is not None:
                seen(named)
            if checkpoints is not None:
                await asyncio.to_thread(checkpoints.record_paths, task_id, named, settled=True)
            return None
        # Nothing ran since the checkpoint wrote the tree: the same state, not written twice.
        finish = await asyncio.to_thread(task_paths.before, task_id, tree)
        if checkpoints is not None:
            # Until the command's paths are known (should the process die meanwhile), undo
            # judges the task by its start and end states alone.
            await asyncio.to_thread(checkpoints.record_paths, task_id, set(), settled=False)

        async def after_change() -> None:
            paths = await asyncio.to_thread(finish)
            if seen is not None and paths is not None:
                seen(paths)
            if checkpoints is not None:
                await asyncio.to_thread(
                    checkpoints.record_paths, task_id, paths, settled=paths is not None
                )

        return after_change

    return before_change
