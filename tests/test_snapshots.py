"""Outside git, the artifact version hashes the files git would not ignore: `.gitignore` files at
every level, negation, directory and anchored patterns, checked against git itself. A file is
read again only when its stat says it may have changed."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pathspec import GitIgnoreSpec

from agentcli import snapshots
from agentcli.snapshots import ALWAYS_SKIPPED_DIRS, file_manifest, take_snapshot

TREE = {
    ".gitignore": "*.log\n!keep.log\nbuild/\n/top-only.txt\ndocs/*.tmp\n",
    "a.py": "",
    "debug.log": "",
    "keep.log": "",
    "top-only.txt": "",
    "build/out.o": "",
    "src/build": "a file called build: only directories named build are ignored\n",
    "src/top-only.txt": "anchored to the root, so kept here\n",
    "src/x.log": "",
    "src/.gitignore": "!x.log\ngenerated/\n*.bak\n",
    "src/generated/g.py": "",
    "src/old.bak": "",
    "src/deep/.gitignore": "!*.bak\n",
    "src/deep/new.bak": "",
    "docs/a.tmp": "",
    "docs/sub/b.tmp": "",
    ".venv/lib.py": "",
    "node_modules/m.js": "",
    "pkg/__pycache__/m.pyc": "",
}


def make_tree(root: Path, tree: dict[str, str]) -> None:
    for rel, content in tree.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)


def git_would_keep(root: Path) -> set[str]:
    """The oracle: the files `git add --all` would take, by git itself (no global excludes)."""
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "init", "-q", str(root)], check=True, env=env)
    listed = subprocess.run(
        ["git", "-C", str(root), "ls-files", "--others", "--exclude-standard", "-z"],
        check=True,
        env=env,
        capture_output=True,
        text=True,
    ).stdout.split("\0")
    skipped = tuple(f"{d}/" for d in ALWAYS_SKIPPED_DIRS)
    return {
        name for name in listed if name and not any(f"/{part}" in f"/{name}" for part in skipped)
    }


def test_the_manifest_reads_gitignore_files_as_git_does(tmp_path: Path) -> None:
    make_tree(tmp_path, TREE)
    manifest = set(file_manifest(tmp_path))
    assert manifest == {
        ".gitignore",
        "a.py",
        "keep.log",
        "src/build",
        "src/top-only.txt",
        "src/x.log",
        "src/.gitignore",
        "src/deep/.gitignore",
        "src/deep/new.bak",
        "docs/sub/b.tmp",  # `*` in `docs/*.tmp` does not cross a `/`
    }
    assert manifest == git_would_keep(tmp_path)


def test_ignored_and_skipped_files_do_not_change_the_version(tmp_path: Path) -> None:
    make_tree(tmp_path, TREE)
    before = take_snapshot(tmp_path, None).version
    for rel in ("debug.log", "build/out.o", "src/generated/g.py", ".venv/lib.py"):
        (tmp_path / rel).write_text("changed")
    assert take_snapshot(tmp_path, None).version == before
    (tmp_path / "src/deep/new.bak").write_text("changed")
    assert take_snapshot(tmp_path, None).version != before


_NAMES = st.sampled_from(["a", "b", "c.log", "d.tmp", "e.py"])
_DIRS = st.lists(st.sampled_from(["x", "y", "build"]), max_size=2)
_PATTERNS = st.sampled_from(
    [
        *("*.log", "!c.log", "build/", "/a", "x/", "!x/", "*.tmp", "!d.tmp", "y/*.py", "b"),
        *("/x/b", "**/y", "x/**", "*", "!*.py", "!b", "!y/", "[ab]", "\\!b", "# c", "e.py/"),
    ]
)


@settings(max_examples=30, deadline=None)
# A negated directory pattern does not re-include what a parent's pattern ignores inside it.
@example(files=[(["x", "x"], "c.log")], ignores={"": ["*.log"], "x": ["!x/"]})
# `x/**` ignores what is inside x, not x itself: a negation re-includes a file directly in it.
@example(files=[(["x"], "d.tmp")], ignores={"": ["x/**", "!d.tmp"]})
@example(files=[(["x", "y"], "d.tmp")], ignores={"": ["x/**", "!d.tmp"]})
@given(
    files=st.lists(st.tuples(_DIRS, _NAMES), min_size=1, max_size=8),
    ignores=st.dictionaries(_DIRS.map("/".join), st.lists(_PATTERNS, max_size=4), max_size=3),
)
def test_any_tree_matches_git(
    tmp_path_factory: pytest.TempPathFactory,
    files: list[tuple[list[str], str]],
    ignores: dict[str, list[str]],
) -> None:
    root = tmp_path_factory.mktemp("tree")
    tree = {"/".join([*parts, name]): "" for parts, name in files}
    for directory, patterns in ignores.items():
        tree[f"{directory}/.gitignore" if directory else ".gitignore"] = "\n".join(patterns)
    # A path cannot be both a file and a directory: drop files that shadow a directory.
    directories = {rel.rsplit("/", i)[0] for rel in tree for i in range(1, rel.count("/") + 1)}
    make_tree(root, {rel: text for rel, text in tree.items() if rel not in directories})
    assert set(file_manifest(root)) == git_would_keep(root)


class _CountedReads:
    """Counts the files hashed (a spy around `hashlib.file_digest`, which does the reading)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.names: list[str] = []
        real = hashlib.file_digest

        def counted(handle: Any, digest: str) -> Any:
            # The file is opened as a descriptor (`agentcli.safe_read`): its name is the kernel's.
            self.names.append(Path(os.readlink(f"/proc/self/fd/{handle.fileno()}")).name)
            return real(handle, digest)

        monkeypatch.setattr(snapshots.hashlib, "file_digest", counted)

    def take(self) -> list[str]:
        names, self.names = sorted(self.names), []
        return names


def test_unchanged_files_are_not_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(snapshots, "RACY_WINDOW_NS", 0)  # every file counts as settled
    reads = _CountedReads(monkeypatch)
    make_tree(tmp_path, {"a.txt": "a", "b.txt": "b"})
    first = file_manifest(tmp_path)
    assert reads.take() == ["a.txt", "b.txt"]
    assert file_manifest(tmp_path) == first
    assert reads.take() == []
    (tmp_path / "b.txt").write_text("bb")
    assert file_manifest(tmp_path)["b.txt"] != first["b.txt"]
    assert reads.take() == ["b.txt"]


def test_a_change_keeping_size_and_mtime_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(snapshots, "RACY_WINDOW_NS", 0)
    path = tmp_path / "a.txt"
    path.write_text("aaaa")
    stat = path.stat()
    before = take_snapshot(tmp_path, None).version
    path.write_text("bbbb")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the ctime still moves
    assert take_snapshot(tmp_path, None).version != before


def test_a_file_changed_just_before_it_was_hashed_is_hashed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(snapshots, "RACY_WINDOW_NS", 10**18)  # every change counts as recent
    reads = _CountedReads(monkeypatch)
    (tmp_path / "fresh.txt").write_text("written a moment ago")
    file_manifest(tmp_path)
    file_manifest(tmp_path)
    assert reads.take() == ["fresh.txt", "fresh.txt"]


def make_named(root: Path, raw: bytes, content: bytes = b"") -> None:
    """A file whose name (bytes, not necessarily UTF-8) is written on disk as it is."""
    path = os.fsencode(root) + b"/" + raw
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(content)


def test_names_that_are_not_utf8_are_kept_as_their_bytes(tmp_path: Path) -> None:
    workspace = Path(os.fsdecode(os.fsencode(tmp_path) + b"/ws-\xff"))  # not UTF-8 either
    make_named(workspace, b"a.txt", b"a")
    make_named(workspace, b"\xff.txt", b"there before")
    make_named(workspace, b"dir-\xfe/caf\xe9.txt", b"latin-1 name")
    before = take_snapshot(workspace, None)
    assert set(before.manifest) == {"a.txt", "\udcff.txt", "dir-\udcfe/caf\udce9.txt"}
    make_named(workspace, b"new-\xfd.txt", b"made by a command")
    make_named(workspace, b"\xff.txt", b"changed")
    after = take_snapshot(workspace, None)
    changed = snapshots.changed_files(before, after, workspace)
    assert [os.fsencode(name) for name in changed] == [b"new-\xfd.txt", b"\xff.txt"]


def test_a_gitignore_pattern_naming_bytes_ignores_that_file(tmp_path: Path) -> None:
    make_named(tmp_path, b".gitignore", b"\xfe*\n")
    make_named(tmp_path, b"\xfe-ignored.txt")
    make_named(tmp_path, b"kept-\xfe.txt")
    assert set(file_manifest(tmp_path)) == {".gitignore", "kept-\udcfe.txt"}


def test_the_version_of_a_utf8_tree_is_what_it_always_was(tmp_path: Path) -> None:
    make_tree(tmp_path, {"a.py": "print()\n", "dir/é.txt": "x"})
    manifest = file_manifest(tmp_path)
    lines = "".join(f"{path}\0{manifest[path]}\n" for path in sorted(manifest))
    expected = hashlib.sha256(lines.encode()).hexdigest()
    assert take_snapshot(tmp_path, None).version == f"files:{expected}"


class _CountedParses:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.lines: list[str] = []
        parse = GitIgnoreSpec.from_lines  # snapshots imports it where a .gitignore is read

        def counted(lines: list[str]) -> GitIgnoreSpec:
            self.lines.extend(lines)
            return parse(lines)

        monkeypatch.setattr(GitIgnoreSpec, "from_lines", counted)


def test_gitignore_files_are_parsed_once_while_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(snapshots, "RACY_WINDOW_NS", 0)
    parses = _CountedParses(monkeypatch)
    make_tree(tmp_path, {".gitignore": "*.log\n", "a.log": "a", "b.txt": "b", "d/c.log": "c"})
    assert sorted(file_manifest(tmp_path)) == [".gitignore", "b.txt"]
    assert parses.lines == ["*.log"]
    assert sorted(file_manifest(tmp_path)) == [".gitignore", "b.txt"]
    assert parses.lines == ["*.log"]
    path = tmp_path / ".gitignore"
    stat = path.stat()
    path.write_text("*.txt\n")  # same size, same mtime: the ctime still moves
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert sorted(file_manifest(tmp_path)) == [".gitignore", "a.log", "d/c.log"]
    assert parses.lines == ["*.log", "*.txt"]


def test_a_gitignore_changed_just_before_the_walk_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(snapshots, "RACY_WINDOW_NS", 10**18)
    parses = _CountedParses(monkeypatch)
    make_tree(tmp_path, {".gitignore": "*.log\n", "b.txt": "b"})
    file_manifest(tmp_path)
    file_manifest(tmp_path)
    assert parses.lines == ["*.log", "*.log"]
