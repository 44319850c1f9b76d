"""Artifact versions: a content hash of the workspace, and which files changed between two.

In a git repository the version is the id of a git tree of the working copy, tracked and
untracked (non-ignored) files alike, written through a temporary index: the user's index, HEAD
and branches are never touched (only new blob/tree objects are added to the object store).
Outside git it is a hash over a manifest of (path, content hash), skipping `.git`-style hidden
directories and paths matched by `.gitignore` patterns at the workspace root.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import git

MAX_MANIFEST_FILES = 50_000
ALWAYS_SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".venv", "node_modules"})


@dataclass(frozen=True, slots=True)
class Snapshot:
    version: str
    """`git:<tree id>` or `files:<sha256>`."""
    repo_root: Path | None = None
    manifest: dict[str, str] = field(default_factory=dict)
    """Outside git: workspace-relative path -> sha256 of its content."""
    note: str | None = None
    """Why a git workspace was hashed as a file tree, if it was."""

    @property
    def tree(self) -> str | None:
        return self.version.removeprefix("git:") if self.version.startswith("git:") else None


@functools.cache
def _gitpython() -> ModuleType | None:
    """GitPython, imported on first use (its import, and the `git version` probe it runs, is
    ~0.1 s that commands and `run`'s first request should not wait for); None when no working
    git executable exists, since GitPython then refuses to import."""
    try:
        import git
    except ImportError:
        return None
    return git


def find_repo(workspace: Path) -> git.Repo | None:
    """The git repository whose trees can represent the workspace: None outside git, in a bare
    repository, and also when the repository ignores the workspace (a scratch or build
    directory), since its trees would never change with the workspace's files."""
    gitpython = _gitpython()
    if gitpython is None:
        return None
    try:
        repo: git.Repo = gitpython.Repo(workspace, search_parent_directories=True)
    except (gitpython.InvalidGitRepositoryError, gitpython.NoSuchPathError):
        return None
    root = repo.working_tree_dir
    if repo.bare or root is None:
        return None
    if Path(root).resolve() != workspace.resolve():
        try:
            repo.git.check_ignore("-q", str(workspace.resolve()))
        except gitpython.GitCommandError:
            return repo  # exit 1: not ignored
        return None
    return repo


def file_hash(path: Path) -> str | None:
    """The sha256 of a file's content; None when there is no file there."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


class SnapshotError(Exception):
    """No content hash of the workspace could be computed."""


def take_snapshot(workspace: Path) -> Snapshot:
    """The workspace's artifact version. A git failure (e.g. a corrupt index) falls back to a
    file-tree hash, with a note saying so; SnapshotError if that is impossible too."""
    repo = find_repo(workspace)
    note: str | None = None
    if repo is not None and repo.working_tree_dir is not None:
        import git  # importable: find_repo found a repository

        try:
            return Snapshot(
                version=f"git:{write_worktree_tree(repo)}", repo_root=Path(repo.working_tree_dir)
            )
        except git.GitCommandError as exc:
            detail = str(exc.stderr).strip() or str(exc)
            note = f"git could not snapshot the working copy ({detail}); used a file-tree hash"
    try:
        manifest = file_manifest(workspace)
    except (OSError, ValueError) as exc:
        raise SnapshotError(str(exc)) from exc
    digest = hashlib.sha256()
    for path in sorted(manifest):
        digest.update(f"{path}\0{manifest[path]}\n".encode())
    return Snapshot(version=f"files:{digest.hexdigest()}", manifest=manifest, note=note)


def write_worktree_tree(repo: git.Repo) -> str:
    """The tree id of the whole working copy, through a throw-away copy of the index."""
    with tempfile.TemporaryDirectory(prefix="agentcli-index-") as tmp:
        index = Path(tmp) / "index"
        real_index = Path(repo.git_dir) / "index"
        if real_index.is_file():
            # A copy keeps git's stat cache (unchanged files are not re-hashed); copy2 keeps the
            # index mtime too, which git needs to detect "racily clean" entries.
            shutil.copy2(real_index, index)
        env = {"GIT_INDEX_FILE": str(index)}
        repo.git.add("--all", "--", ":/", env=env)
        return str(repo.git.write_tree(env=env)).strip()


def changed_files(before: Snapshot, after: Snapshot, workspace: Path) -> list[str]:
    """Workspace-relative paths whose content differs between two snapshots."""
    if before.version == after.version:
        return []
    if before.tree is not None and after.tree is not None and after.repo_root is not None:
        import git

        repo = git.Repo(after.repo_root)
        # -z: raw names (without it git quotes non-ASCII and unusual paths).
        out = repo.git.diff_tree("-r", "--name-only", "--no-renames", "-z", before.tree, after.tree)
        paths = [after.repo_root / name for name in str(out).split("\0") if name]
        return sorted(_relative(p, workspace) for p in paths)
    keys = set(before.manifest) | set(after.manifest)
    return sorted(k for k in keys if before.manifest.get(k) != after.manifest.get(k))


def _relative(path: Path, workspace: Path) -> str:
    try:
        return str(path.relative_to(workspace.resolve()))
    except ValueError:
        return os.path.relpath(path, workspace.resolve())


def _ignore_patterns(workspace: Path) -> list[str]:
    path = workspace / ".gitignore"
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return [ln.strip().rstrip("/") for ln in lines if ln.strip() and not ln.startswith("#")]


def _ignored(rel: str, name: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(rel, p.lstrip("/")) for p in patterns)


def file_manifest(workspace: Path) -> dict[str, str]:
    patterns = _ignore_patterns(workspace)
    manifest: dict[str, str] = {}
    for root, dirs, files in os.walk(workspace):
        base = Path(root)
        rel_root = base.relative_to(workspace)
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in ALWAYS_SKIPPED_DIRS and not _ignored(str(rel_root / d), d, patterns)
        )
        for name in files:
            rel = str(rel_root / name) if str(rel_root) != "." else name
            if _ignored(rel, name, patterns):
                continue
            full = base / name
            if full.is_symlink() or not full.is_file():
                continue
            manifest[rel] = hashlib.sha256(full.read_bytes()).hexdigest()
            if len(manifest) > MAX_MANIFEST_FILES:
                raise ValueError(
                    f"{workspace} has more than {MAX_MANIFEST_FILES} files outside git; "
                    "artifact versions need a git repository here"
                )
    return manifest
