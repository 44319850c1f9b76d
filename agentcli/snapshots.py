"""Artifact versions: a content hash of the workspace, and which files changed between two.

In a git repository the version is the id of a git tree of the working copy, tracked and
untracked (non-ignored) files alike, written by agentcli's own git (`agentcli.owngit`) in its
private git dir through an index of its own (`owngit.index`): the repository's index, HEAD,
branches and object store are never touched, and nothing the repository configures is run.
Whether the workspace is a repository is the session's decision (`owngit.decide`), passed in by
the caller.
Outside git it is a hash over a manifest of (path, content hash), skipping `.git`, `.venv`,
`node_modules` and `__pycache__` directories and what the workspace's `.gitignore` files ignore,
read as git reads them (pathspec's `GitIgnoreSpec`): a `.gitignore` in any directory, negation,
directory-only and anchored patterns. Names are kept as Python decodes them from the file
system (`surrogateescape`), so a name that is not UTF-8 is hashed as its bytes
(`agentcli.fsnames`).

Files are opened as agentcli opens what it did not write (`agentcli.safe_read`: never through a
link, never a named pipe, whose open would block) and hashed in bounded chunks
(`hashlib.file_digest`), never read whole, and a file whose
stat (device, inode, size, mtime, ctime) is what it was when it was last hashed is not read
again (`_HashCache`): a snapshot costs memory independent of the files' sizes, and time in
proportion to what changed. As in git's "racily clean" rule, a hash is reused only for a file
last changed well before it was hashed (`RACY_WINDOW_NS`), so a change made within the file
system's timestamp granularity of the previous hash is never missed.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agentcli.owngit import GitError, OwnRepo
from agentcli.safe_read import MAX_PROJECT_FILE_BYTES, Inside, Unreadable, opened, read_fd

if TYPE_CHECKING:
    from pathspec import Pattern

MAX_MANIFEST_FILES = 50_000
RACY_WINDOW_NS = 2_000_000_000
"""A file changed less than this long before it was hashed is hashed again next time: file
timestamps are coarser than the clock (a jiffy locally, the server's clock on NFS)."""
ALWAYS_SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".venv", "node_modules"})


@dataclass(frozen=True, slots=True)
class Snapshot:
    version: str
    """`git:<tree id>` or `files:<sha256>`."""
    repo: OwnRepo | None = field(default=None, compare=False)
    """The repository the tree was written in (git snapshots only)."""
    manifest: dict[str, str] = field(default_factory=dict)
    """Outside git: workspace-relative path -> sha256 of its content."""
    note: str | None = None
    """Why a git workspace was hashed as a file tree, if it was."""

    @property
    def tree(self) -> str | None:
        return self.version.removeprefix("git:") if self.version.startswith("git:") else None


def file_hash(path: Path, root: Path | None = None) -> str | None:
    """The sha256 of the regular file at `path`, read in chunks; None when there is none: no
    entry, a directory, a named pipe, a device, or a link (as the manifests see it). With the
    real path `root` given, a link anywhere in `path` below it is none either: undo compares
    what the workspace holds, never what a link leads to."""
    try:
        return _HASHES.digest(path, root)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, Unreadable):
        return None


_StatKey = tuple[int, int, int, int, int]


def _stat_key(st: os.stat_result) -> _StatKey:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class _HashCache:
    """The sha256 of each file hashed in this process, with the stat it had then. Shared by
    every snapshot and checkpoint (they run in worker threads, hence the lock)."""

    MAX_ENTRIES = 4 * MAX_MANIFEST_FILES

    def __init__(self) -> None:
        self._known: dict[str, tuple[_StatKey, str]] = {}
        self._lock = threading.Lock()

    def digest(self, path: Path, root: Path | None = None) -> str:
        """The sha256 of the regular file at `path` (OSError if it cannot be read; Unreadable
        for anything but a regular file, or a link: `agentcli.safe_read`, so a named pipe never
        blocks the hashing)."""
        name = str(path)
        inside = Inside((root,)) if root is not None else None
        with (
            opened(path, inside=inside, follow=False) as fd,
            os.fdopen(fd, "rb", closefd=False) as handle,
        ):
            before = os.fstat(handle.fileno())
            key = _stat_key(before)
            with self._lock:
                known = self._known.get(name)
            if known is not None and known[0] == key:
                return known[1]
            started = time.time_ns()
            digest = hashlib.file_digest(handle, "sha256").hexdigest()
            after = _stat_key(os.fstat(handle.fileno()))
        settled = max(before.st_mtime_ns, before.st_ctime_ns) < started - RACY_WINDOW_NS
        with self._lock:
            if after == key and settled:
                if len(self._known) >= self.MAX_ENTRIES:
                    self._known.clear()
                self._known[name] = (key, digest)
            else:
                self._known.pop(name, None)
        return digest


_HASHES = _HashCache()


class SnapshotError(Exception):
    """No content hash of the workspace could be computed."""


def take_snapshot(workspace: Path, repo: OwnRepo | None) -> Snapshot:
    """The workspace's artifact version: a git tree when the session decided the workspace is
    in `repo`, else a file-tree hash. A git failure (e.g. a corrupt index) falls back to a
    file-tree hash, with a note saying so; SnapshotError if that is impossible too."""
    note: str | None = None
    if repo is not None:
        try:
            return Snapshot(version=f"git:{repo.write_tree()}", repo=repo)
        except (GitError, OSError) as exc:
            note = f"git could not snapshot the working copy ({exc}); used a file-tree hash"
    try:
        manifest = file_manifest(workspace)
    except (OSError, ValueError) as exc:
        raise SnapshotError(str(exc)) from exc
    digest = hashlib.sha256()
    for path in sorted(manifest):
        digest.update(os.fsencode(f"{path}\0{manifest[path]}\n"))
    return Snapshot(version=f"files:{digest.hexdigest()}", manifest=manifest, note=note)


def changed_files(before: Snapshot, after: Snapshot, workspace: Path) -> list[str]:
    """Workspace-relative paths whose content differs between two snapshots."""
    if before.version == after.version:
        return []
    if before.tree is not None and after.tree is not None and after.repo is not None:
        root = after.repo.work_tree
        names = after.repo.diff_names(before.tree, after.tree)
        return sorted(_relative(root / name, workspace) for name in names)
    keys = set(before.manifest) | set(after.manifest)
    return sorted(k for k in keys if before.manifest.get(k) != after.manifest.get(k))


def _relative(path: Path, workspace: Path) -> str:
    try:
        return str(path.relative_to(workspace.resolve()))
    except ValueError:
        return os.path.relpath(path, workspace.resolve())


class _GitIgnores:
    """The `.gitignore` files of a tree walked top-down, applied as git applies them: a path is
    decided by the last pattern matching the path itself in the deepest `.gitignore` that has
    one (a negation re-includes); what is inside an ignored directory is never reached, since
    the walk does not enter it."""

    def __init__(self) -> None:
        self._rules: dict[str, list[tuple[Pattern, bool]]] = {}

    def enter(self, path: Path, rel: str) -> None:
        """Read the `.gitignore` at `path`, the one of the directory `rel`."""
        rules = _PARSED_IGNORES.rules(path)
        if rules is not None:
            self._rules[rel] = rules

    def ignored(self, rel: str, *, is_dir: bool) -> bool:
        parts = rel.split("/")
        for depth in range(len(parts) - 1, -1, -1):
            rules = self._rules.get("/".join(parts[:depth]))
            if rules is None:
                continue
            below = "/".join(parts[depth:]) + ("/" if is_dir else "")
            for pattern, inside_only in reversed(rules):
                # `dir/**` matches what is inside dir, never dir itself; pathspec's regex for it
                # (`^dir/`) would match the directory's own path with its trailing `/`.
                path = below.removesuffix("/") if inside_only else below
                if _matches_itself(pattern, path):
                    return bool(pattern.include)
        return False


class _ParsedIgnores:
    """Each `.gitignore` file's rules, parsed once per process while the file is unchanged
    (its stat, kept only once settled, as `_HashCache` does): a walk before and after every
    shell command outside git would otherwise parse every one of them again. Shared by worker
    threads, hence the lock."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[_StatKey, list[tuple[Pattern, bool]]]] = {}
        self._lock = threading.Lock()

    def rules(self, path: Path) -> list[tuple[Pattern, bool]] | None:
        try:  # as git reads it: never through a link; and never a pipe, never huge
            with opened(path, inside=None, follow=False) as fd:
                st = os.fstat(fd)
                key = _stat_key(st)
                with self._lock:
                    known = self._known.get(str(path))
                if known is not None and known[0] == key:
                    return known[1]
                started = time.time_ns()
                data = read_fd(fd, path, limit=MAX_PROJECT_FILE_BYTES)
        except OSError:
            return None
        # Decoded like the names it is matched against: a pattern naming a file whose name
        # is not UTF-8 still matches it.
        lines = data.decode("utf-8", errors="surrogateescape").splitlines()
        from pathspec import GitIgnoreSpec  # only where a .gitignore is read: ~15 ms otherwise

        rules: list[tuple[Pattern, bool]] = [
            (pattern, _inside_only(line))
            for line in lines
            for pattern in GitIgnoreSpec.from_lines([line]).patterns
            if pattern.include is not None
        ]
        if max(st.st_mtime_ns, st.st_ctime_ns) < started - RACY_WINDOW_NS:
            with self._lock:
                if len(self._known) >= MAX_MANIFEST_FILES:
                    self._known.clear()
                self._known[str(path)] = (key, rules)
        return rules


_PARSED_IGNORES = _ParsedIgnores()


def _inside_only(line: str) -> bool:
    """Whether a `.gitignore` line ends in `/**`: it matches everything inside a directory."""
    return line.rstrip().removeprefix("!").endswith("/**")


def _matches_itself(pattern: Pattern, path: str) -> bool:
    """Does `pattern` match `path` itself, rather than as something inside a directory it
    matches? (GitIgnoreSpec alone answers for flat file lists, where a negated directory
    re-includes its contents; git never reads it so.) pathspec's gitignore regexes mark the
    `/` after a matched directory with the group `ps_d`; it ends the path only when the match
    is the directory itself. tests/test_snapshots.py checks the result against git."""
    found = pattern.match_file(path)
    if found is None:
        return False
    match: re.Match[str] = found.match
    if "ps_d" not in match.re.groupindex or match.start("ps_d") < 0:
        return True
    return match.end("ps_d") == len(path)


def file_manifest(workspace: Path) -> dict[str, str]:
    """Workspace-relative path -> sha256 of the content, for every file `walk_files` lists
    (one that is no regular file by the time it is opened is left out, as links are)."""
    manifest = {}
    for rel, full in walk_files(workspace):
        try:
            manifest[rel] = _HASHES.digest(full)
        except Unreadable:
            continue
    return manifest


def walk_files(workspace: Path) -> Iterator[tuple[str, Path]]:
    """(workspace-relative path, path) of every regular file outside the skipped and ignored
    directories, symlinks left out. ValueError past `MAX_MANIFEST_FILES` files."""
    ignores = _GitIgnores()
    count = 0
    pending = [(workspace, "")]
    while pending:
        base, prefix = pending.pop()
        try:
            # Listed with the entries' types (scandir): no stat per file to tell a file from
            # a directory or a symlink.
            with os.scandir(base) as listing:
                entries = list(listing)
        except OSError:
            continue  # as os.walk: a directory that cannot be listed is left out
        if any(e.name == ".gitignore" and e.is_file(follow_symlinks=True) for e in entries):
            ignores.enter(base / ".gitignore", prefix.rstrip("/"))
        subdirs = []
        for entry in entries:
            rel = prefix + entry.name
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in ALWAYS_SKIPPED_DIRS and not ignores.ignored(rel, is_dir=True):
                    subdirs.append(entry.name)
                continue
            if not entry.is_file(follow_symlinks=False) or ignores.ignored(rel, is_dir=False):
                continue
            count += 1
            if count > MAX_MANIFEST_FILES:
                raise ValueError(
                    f"{workspace} has more than {MAX_MANIFEST_FILES} files outside git; "
                    "artifact versions need a git repository here"
                )
            yield rel, base / entry.name
        # Depth first, in name order, as os.walk with sorted directories went.
        pending.extend((base / name, f"{prefix}{name}/") for name in sorted(subdirs, reverse=True))
