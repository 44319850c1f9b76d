"""The private git dir agentcli works in for one repository, and the git operations it runs.

agentcli never runs git in the user's git dir. For each work tree it keeps a git dir of its own
under `data_home()/git/<name>-<hash of the work tree path>/`:

    HEAD, config, refs/      written by agentcli; this `config` is the only one git reads
    objects/                 scratch: what snapshots and checkpoints write (blobs of new and
                             modified files, trees, commits); loose objects unused for two
                             weeks are deleted (`tidy`)
    objects/info/alternates  `pinned/`, then the repository's object store, read-only
    pinned/                  objects a checkpoint needs for undo, copied in when it ends, so
                             neither `tidy` nor a `git gc` in the repository can lose them
    info/exclude             a copy of the repository's `info/exclude` (data)
    index, index.state       the snapshots' kept index, and what it was seeded from
    refs/agentcli/checkpoints/<task>   each task's checkpoint commits

and runs git with GIT_DIR = that dir and GIT_WORK_TREE = the repository's work tree. So the
repository's config, hooks, `info/attributes` and includes are never read, and its refs, index
and object store are never written. Snapshots go through an index kept in the private dir
(`index`, seeded from a copy of the repository's index): git's stat cache, so a file is read
again only when it changed since the previous snapshot (`owngit.index`).

Checkpoints made by agentcli before this design live in the repository itself (refs
`refs/agentcli/checkpoints/<task>` there keep their objects): through the alternates their
commits are read like any other, so they can still be undone.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentcli.errors import ConfigError
from agentcli.owngit.command import NO_REPOSITORY, GitError, find_git, run_git
from agentcli.owngit.discover import Layout, last_value, locate, settle, user_config
from agentcli.owngit.index import snapshot_tree
from agentcli.paths import data_home
from agentcli.private import private_dir, write_private
from agentcli.safe_read import MiB, read_bytes

OBJECT_FORMATS = ("sha1", "sha256")
STAT_SETTINGS = (
    "core.trustctime",
    "core.checkstat",
    "core.filemode",
    "core.symlinks",
    "core.ignorecase",
    "core.precomposeunicode",
)
"""Copied from the repository's config as data: how git compares files with the index's stat
cache. Anything else there (programs, includes, attributes) is left unread."""
SCRATCH_MAX_AGE_S = 14 * 24 * 3600
MAX_SYNCED_BYTES = 16 * MiB
"""The repository's `info/exclude` is copied for agentcli's own git up to this size."""
TIDY_EVERY_S = 24 * 3600
IDENTITY = {
    "GIT_AUTHOR_NAME": "agentcli",
    "GIT_AUTHOR_EMAIL": "agentcli@localhost",
    "GIT_COMMITTER_NAME": "agentcli",
    "GIT_COMMITTER_EMAIL": "agentcli@localhost",
}
GITLINK_MODE = "160000"


@dataclass(frozen=True, slots=True, kw_only=True)
class TreeEntry:
    mode: int
    kind: str
    """`blob`, `tree` or `commit` (a submodule)."""
    oid: str


@dataclass(frozen=True, eq=False, kw_only=True)
class OwnRepo:
    """A repository's work tree, seen through agentcli's private git dir."""

    layout: Layout
    private_dir: Path
    git: str
    """The git executable, chosen once (`command.find_git`)."""
    settings: tuple[str, ...]
    """`-c key=value` pairs read from the repository's and the user's config as data."""

    @property
    def work_tree(self) -> Path:
        return self.layout.work_tree

    def run(
        self,
        *args: str,
        index: Path | None = None,
        identity: bool = False,
        stdin: bytes | None = None,
        ok_codes: tuple[int, ...] = (0,),
    ) -> subprocess.CompletedProcess[bytes]:
        extra = {"GIT_WORK_TREE": str(self.work_tree)}
        if index is not None:
            extra["GIT_INDEX_FILE"] = str(index)
        if identity:
            extra.update(IDENTITY)
        return run_git(
            self.git,
            args,
            git_dir=str(self.private_dir),
            cwd=self.work_tree,
            settings=self.settings,
            extra_env=extra,
            stdin=stdin,
            ok_codes=ok_codes,
        )

    def write_tree(self) -> str:
        """The tree id of the whole working copy (tracked and untracked, non-ignored files),
        written through the index agentcli keeps for the repository (`owngit.index`): what a
        throw-away copy of the repository's index gives, re-hashing only what changed since
        the previous snapshot."""
        _sync_file(self.layout.common_dir / "info" / "exclude", self.private_dir / "info/exclude")
        return snapshot_tree(
            self.run,
            git_dir=self.layout.git_dir,
            private=self.private_dir,
            work_tree=self.work_tree,
            settings=self.settings,
        )

    def ignores(self, path: Path) -> bool:
        """Whether the repository's ignore rules exclude `path` (inside the work tree)."""
        return self.run("check-ignore", "-q", "--", str(path), ok_codes=(0, 1)).returncode == 0

    def diff_names(self, a: str, b: str, paths: Sequence[str] = ()) -> list[str]:
        """Paths (from the top of the work tree) whose content differs between two trees or
        commits, optionally only among `paths`."""
        names: list[str] = []
        for chunk in _chunks([f":(literal){p}" for p in paths]) if paths else [[]]:
            out = self.run(
                "diff-tree", "-r", "--name-only", "--no-renames", "--no-ext-diff",
                "--no-textconv", "-z", a, b, "--", *chunk,
            ).stdout  # fmt: skip
            names += [p for p in out.decode(errors="surrogateescape").split("\0") if p]
        return names

    def commit(self, tree: str, message: str, parent: str | None = None) -> str:
        args = ["commit-tree", tree, "-m", message] + (["-p", parent] if parent else [])
        return self.run(*args, identity=True).stdout.decode().strip()

    def set_ref(self, name: str, oid: str) -> None:
        self.run("update-ref", name, oid)

    def entries(self, treeish: str, paths: Sequence[str]) -> dict[str, TreeEntry]:
        """What `treeish` holds at each of `paths` (a path it lacks is left out)."""
        found: dict[str, TreeEntry] = {}
        for chunk in _chunks([f":(literal){p}" for p in paths]):
            out = self.run("ls-tree", "-z", "--full-tree", treeish, "--", *chunk).stdout
            for line in out.decode(errors="surrogateescape").split("\0"):
                if line:
                    meta, _, path = line.partition("\t")
                    mode, kind, oid = meta.split()
                    found[path] = TreeEntry(mode=int(mode, 8), kind=kind, oid=oid)
        return found

    def read_objects(self, oids: Iterable[str]) -> dict[str, tuple[str, bytes]]:
        """Each object's type and content (`git cat-file --batch`); missing ones left out."""
        wanted = list(dict.fromkeys(oids))
        if not wanted:
            return {}
        out = self.run("cat-file", "--batch", stdin="".join(f"{o}\n" for o in wanted).encode())
        data, objects, offset = out.stdout, {}, 0
        for _ in wanted:
            end = data.index(b"\n", offset)
            header = data[offset:end].decode().split()
            offset = end + 1
            if len(header) != 3:  # "<oid> missing"
                continue
            oid, kind, size = header[0], header[1], int(header[2])
            objects[oid] = (kind, data[offset : offset + size])
            offset += size + 1
        return objects

    def keep_for_undo(self, start: str, end: str) -> None:
        """Copy into `pinned/` every object undo of the checkpoint `start`..`end` reads: both
        commits and root trees, the trees along every changed path on both sides, and the
        content each changed file had at the start."""
        roots = self.run("rev-parse", f"{start}^{{tree}}", f"{end}^{{tree}}").stdout.split()
        needed = {start, end, *(r.decode() for r in roots)}
        raw = self.run(
            "diff-tree", "-r", "-t", "-z", "--raw", "--no-renames", "--no-ext-diff", start, end
        ).stdout.decode(errors="surrogateescape")
        fields = raw.split("\0")
        for meta in fields[0::2]:
            if not meta.startswith(":"):
                continue
            old_mode, new_mode, old_oid, new_oid, _status = meta[1:].split()
            if old_mode != GITLINK_MODE and old_oid.strip("0"):
                needed.add(old_oid)
            if new_mode.startswith("04"):
                needed.add(new_oid)
        pinned = self.private_dir / "pinned"
        missing = [oid for oid in needed if not _loose_path(pinned, oid).exists()]
        for oid, (kind, content) in self.read_objects(missing).items():
            _write_loose(pinned, oid, kind, content)

    def tidy(self) -> None:
        """Delete scratch objects unused for SCRATCH_MAX_AGE_S (at most once a day). git
        refreshes an object's mtime whenever it writes it again, and what undo needs is in
        `pinned/`, so only leftovers of old snapshots go."""
        stamp = self.private_dir / "tidied"
        now = time.time()
        try:
            if now - stamp.stat().st_mtime < TIDY_EVERY_S:
                return
        except FileNotFoundError:
            pass
        stamp.touch(mode=0o600)
        cutoff = now - SCRATCH_MAX_AGE_S
        for fan in (self.private_dir / "objects").iterdir():
            if len(fan.name) != 2 or not fan.is_dir():
                continue
            for loose in fan.iterdir():
                try:
                    if loose.stat().st_mtime < cutoff:
                        loose.unlink()
                except FileNotFoundError:
                    continue


def find_repo(workspace: Path) -> OwnRepo | None:
    """The git repository whose trees can represent the workspace: None outside git, in a bare
    repository, without a usable git executable, for an object format git cannot name here, and
    also when the repository ignores the workspace (a scratch or build directory), since its
    trees would never change with the workspace's files."""
    found = locate(workspace)
    if found is None:
        return None
    git = find_git(outside=found.directory)
    if git is None:
        return None
    layout = settle(found, workspace, git)
    if layout is None:
        return None
    object_format = (last_value(layout.config, "extensions.objectformat") or "sha1").lower()
    if object_format not in OBJECT_FORMATS:
        return None
    try:
        private = _prepare(layout, object_format)
    except OSError as exc:  # the data directory, not the repository: the setup is broken
        raise ConfigError(
            f"agentcli's git directory {private_dir_for(layout.work_tree)} cannot be made: "
            f"{exc.strerror or exc}" + (f" ({exc.filename})" if exc.filename else ""),
            hint="AGENTCLI_HOME (or the user data directory) must be a writable directory",
        ) from exc
    repo = OwnRepo(
        layout=layout,
        private_dir=private,
        git=git,
        settings=_settings(layout, git),
    )
    if workspace.resolve() != layout.work_tree and repo.ignores(workspace.resolve()):
        return None
    return repo


def git_version(workspace: Path) -> str:
    """`git --version` of the git agentcli's own calls would use for `workspace` (`doctor`)."""
    found = locate(workspace)
    git = find_git(outside=found.directory if found is not None else workspace.resolve())
    if git is None:
        return "not found"
    try:
        done = run_git(git, ["--version"], git_dir=NO_REPOSITORY, cwd=Path("/"))
    except GitError:
        return "not working"
    return done.stdout.decode(errors="replace").strip() or "not working"


def private_dir_for(work_tree: Path) -> Path:
    name = re.sub(r"[^A-Za-z0-9._-]", "_", work_tree.name)[:40] or "root"
    digest = hashlib.sha256(str(work_tree).encode(errors="surrogateescape")).hexdigest()[:16]
    return data_home() / "git" / f"{name}-{digest}"


def _prepare(layout: Layout, object_format: str) -> Path:
    private = private_dir_for(layout.work_tree)
    for sub in ("objects/info", "pinned", "refs", "info"):
        private_dir(private / sub)
    private.chmod(0o700)
    if not (private / "HEAD").exists():
        _write_if_changed(private / "HEAD", "ref: refs/heads/main\n")
    version = 1 if object_format != "sha1" else 0
    config = f"[core]\n\trepositoryformatversion = {version}\n\tbare = false\n"
    if version:
        config += f"[extensions]\n\tobjectFormat = {object_format}\n"
    _write_if_changed(private / "config", config)
    alternates = f"{private / 'pinned'}\n{layout.common_dir / 'objects'}\n"
    _write_if_changed(private / "objects" / "info" / "alternates", alternates)
    _write_if_changed(private / "worktree", f"{layout.work_tree}\n")
    return private


def _settings(layout: Layout, git: str) -> tuple[str, ...]:
    pairs = []
    for key in STAT_SETTINGS:
        if key in layout.config:
            value = layout.config[key][-1]
            pairs.append((key, "true" if value is None else value))
    excludes = last_value(layout.config, "core.excludesfile")
    if excludes is None:
        excludes = last_value(user_config(git), "core.excludesfile")
    if excludes:
        path = layout.work_tree / Path(excludes).expanduser()
        if path.is_file():  # a FIFO or device named there would hang or flood git
            pairs.append(("core.excludesFile", str(path)))
    return tuple(arg for key, value in pairs for arg in ("-c", f"{key}={value}"))


def _write_if_changed(path: Path, text: str) -> None:
    # The paths written here are bytes to git: a work tree whose path is not UTF-8 keeps them.
    try:
        if path.read_text(errors="surrogateescape") == text:
            return
    except FileNotFoundError:
        pass
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    write_private(tmp, text.encode("utf-8", errors="surrogateescape"))
    tmp.replace(path)


def _sync_file(source: Path, copy: Path) -> None:
    """Make `copy` hold `source`'s bytes (or not exist when `source` is no regular file)."""
    try:  # the repository's file: a regular one, never a pipe or a device, bounded
        data: bytes | None = read_bytes(source, inside=None, limit=MAX_SYNCED_BYTES)
    except OSError:
        data = None
    if data is None:
        copy.unlink(missing_ok=True)
        return
    try:
        if copy.read_bytes() == data:
            return
    except FileNotFoundError:
        pass
    tmp = copy.with_name(f".{copy.name}.{os.getpid()}.tmp")
    write_private(tmp, data)
    tmp.replace(copy)


def _loose_path(store: Path, oid: str) -> Path:
    return store / oid[:2] / oid[2:]


def _write_loose(store: Path, oid: str, kind: str, content: bytes) -> None:
    path = _loose_path(store, oid)
    private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    write_private(tmp, zlib.compress(f"{kind} {len(content)}\0".encode() + content))
    tmp.replace(path)


def _chunks(items: list[str], size: int = 500) -> Iterable[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
