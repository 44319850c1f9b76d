"""The index agentcli keeps between snapshots (`owngit.index`) gives the tree a fresh
computation gives, whatever happened in between.

The oracle is git from scratch: an index holding the repository index's entries without any
stat information (so every file is read and hashed again), `git add --all`, `git write-tree`,
run by the test with the real git. Random edits, creations, deletions, renames, mode changes,
`.gitignore` changes, deleted-and-recreated ignored tracked files and the user's own `git add`
and commits are applied between snapshots; a kept index that is corrupt, missing or stale
falls back to the fresh computation."""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentcli.owngit import OwnRepo, find_repo, index
from tests.owngit.hostile import plain_git

NAMES = ["a.txt", "b.py", "c.log", "d/e.txt", "d/f.log", "build/g.o", "d/h/i.txt", "k.sh"]
"""Paths the edits pick from; `*.log` and `build/` are ignored (at first)."""
PATTERNS = ["*.log", "build/", "d/h/", "*.txt", "!d/f.log", "e.txt", "h/", "!f.log"]


def oracle_tree(work_tree: Path, scratch: Path) -> str:
    index = scratch / "oracle-index"
    index.unlink(missing_ok=True)
    env = {"GIT_INDEX_FILE": str(index)}
    entries = plain_git(work_tree, "ls-files", "-s", "-z")
    plain_git(work_tree, "update-index", "-z", "--index-info", stdin=entries, env=env)
    plain_git(work_tree, "add", "--all", "--", ":/", env=env)
    return plain_git(work_tree, "write-tree", env=env).strip()


def names(repo: OwnRepo, tree: str) -> list[str]:
    """The paths in `tree` (written in agentcli's private git dir, where the test reads it)."""
    return repo.run("ls-tree", "-r", "-z", "--name-only", tree).stdout.decode().split("\0")


class Spy:
    """Snapshots of the repository, noting which git commands each ran on which index."""

    def __init__(self, repo: OwnRepo, monkeypatch: pytest.MonkeyPatch) -> None:
        self.repo = repo
        self.calls: list[tuple[str, str]] = []
        run = OwnRepo.run

        def spied(own: OwnRepo, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
            index = kwargs.get("index")
            self.calls.append((args[0], "" if index is None else Path(index).name))
            return run(own, *args, **kwargs)

        monkeypatch.setattr(OwnRepo, "run", spied)

    def tree(self) -> str:
        self.calls.clear()
        return self.repo.write_tree()

    @property
    def reused(self) -> bool:
        """The last snapshot went through the kept index without seeding it again."""
        return self.calls[:2] == [("add", "index"), ("write-tree", "index")] and all(
            command != "add" for command, _ in self.calls[2:]
        )


def make_repo(path: Path) -> Path:
    path.mkdir()
    plain_git(path, "init", "-q", "-b", "main")
    (path / ".gitignore").write_text("*.log\nbuild/\n")
    for name in ("a.txt", "b.py", "d/e.txt"):
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(f"{name}\n")
    (path / "c.log").write_text("tracked although ignored\n")
    plain_git(path, "add", "-A")
    plain_git(path, "add", "-f", "c.log")
    plain_git(path, "commit", "-q", "-m", "base")
    return path


def edit(root: Path, rng: random.Random) -> str:
    """One random change to the work tree (or the repository's index); what it was."""
    name = rng.choice(NAMES)
    path = root / name
    action = rng.choice(
        ["write", "write", "same-size", "delete", "rename", "chmod", "ignore", "user-add"]
    )
    if action in ("write", "same-size"):
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            return "skip"
        old = path.read_bytes() if path.exists() else b"x"
        size = len(old) if action == "same-size" else rng.randrange(1, 40)
        path.write_bytes(bytes(rng.choice(b"abc\n") for _ in range(size)))
    elif action == "delete":
        path.unlink(missing_ok=True)
    elif action == "rename" and path.is_file():
        target = root / rng.choice(NAMES)
        if not target.is_dir():
            target.parent.mkdir(parents=True, exist_ok=True)
            path.replace(target)
    elif action == "chmod" and path.is_file():
        path.chmod(path.stat().st_mode ^ 0o111)
    elif action == "ignore":
        rules = root / rng.choice([".gitignore", "d/.gitignore"])
        rules.parent.mkdir(exist_ok=True)
        text = rules.read_text() if rules.is_file() else ""
        lines = [line for line in text.splitlines() if line]
        pattern = rng.choice(PATTERNS)
        lines = [x for x in lines if x != pattern] if pattern in lines else [*lines, pattern]
        rules.write_text("".join(f"{x}\n" for x in lines))
        return f"{action} {pattern} in {rules.relative_to(root)}"
    elif action == "user-add":
        plain_git(root, "add", "-A")
        if rng.random() < 0.5:
            plain_git(root, "commit", "-q", "--allow-empty", "-m", "user")
    return f"{action} {name}"


@pytest.mark.parametrize("seed", [1, 3])
@pytest.mark.parametrize("settled", [False, True], ids=["recent", "settled"])
def test_every_snapshot_is_the_fresh_tree(
    tmp_path: Path, seed: int, settled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if settled:  # ignore files count as unchanged while their stat is: checks are skipped
        monkeypatch.setattr(index, "RACY_WINDOW_NS", 0)
    root = make_repo(tmp_path / "repo")
    repo = find_repo(root)
    assert repo is not None
    spy = Spy(repo, monkeypatch)
    rng = random.Random(seed)
    history: list[str] = []
    reused = 0
    for _ in range(40):
        for _ in range(rng.randrange(1, 4)):
            history.append(edit(root, rng))
        assert spy.tree() == oracle_tree(root, tmp_path), history
        reused += spy.reused
        if spy.reused:
            history.clear()
    assert reused >= 5  # the kept index was really used, not seeded afresh every time


def test_a_deleted_ignored_tracked_file_that_comes_back_is_in_the_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_repo(tmp_path / "repo")
    repo = find_repo(root)
    assert repo is not None
    spy = Spy(repo, monkeypatch)
    spy.tree()
    (root / "c.log").unlink()
    assert spy.tree() == oracle_tree(root, tmp_path)
    assert spy.reused
    (root / "c.log").write_text("back\n")
    assert spy.tree() == oracle_tree(root, tmp_path)
    assert "c.log" in names(repo, spy.tree())


def test_an_untracked_file_ignored_later_leaves_the_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_repo(tmp_path / "repo")
    repo = find_repo(root)
    assert repo is not None
    spy = Spy(repo, monkeypatch)
    (root / "out.bin").write_text("generated\n")
    (root / "d" / "gen.py").write_text("generated\n")
    with_it = spy.tree()
    assert {"out.bin", "d/gen.py"} <= set(names(repo, with_it))
    # Ignored by a rule whose own file is ignored (and so never in any tree).
    (root / "d" / ".gitignore").write_text(".gitignore\ngen.py\n")
    (root / ".git" / "info" / "exclude").write_text("out.bin\n")
    tree = spy.tree()
    assert tree == oracle_tree(root, tmp_path)
    assert {"out.bin", "d/gen.py"} & set(names(repo, tree)) == set()


def test_a_file_excluded_later_in_info_exclude_leaves_the_tree_once_settled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found in review: with every ignore file settled, a change to only the repository's
    `info/exclude` skipped the check, and the kept tree kept a file git now ignores."""
    monkeypatch.setattr(index, "RACY_WINDOW_NS", 0)
    root = make_repo(tmp_path / "repo")
    repo = find_repo(root)
    assert repo is not None
    spy = Spy(repo, monkeypatch)
    (root / "U.txt").write_text("untracked\n")
    spy.tree()
    assert "U.txt" in names(repo, spy.tree())  # verified and noted as such
    with (root / ".git" / "info" / "exclude").open("a") as exclude:
        exclude.write("U.txt\n")
    tree = spy.tree()
    assert tree == oracle_tree(root, tmp_path)
    assert "U.txt" not in names(repo, tree)


@pytest.mark.parametrize("damage", ["corrupt", "missing", "state", "pruned-base"])
def test_a_damaged_kept_index_falls_back_to_the_fresh_tree(
    tmp_path: Path, damage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_repo(tmp_path / "repo")
    repo = find_repo(root)
    assert repo is not None
    spy = Spy(repo, monkeypatch)
    (root / "new.txt").write_text("new\n")
    spy.tree()
    kept = repo.private_dir / "index"
    if damage == "corrupt":
        kept.write_bytes(b"DIRC" + os.urandom(64))
    elif damage == "missing":
        kept.unlink()
    elif damage == "state":
        (repo.private_dir / "index.state").write_text("{not json")
    else:  # the tree the kept index is checked against was tidied away
        for loose in (repo.private_dir / "objects").glob("??/*"):
            loose.unlink()
    (root / "b.py").write_text("changed\n")
    (root / "c.log").unlink()
    assert spy.tree() == oracle_tree(root, tmp_path)
    assert spy.tree() == oracle_tree(root, tmp_path)
    assert spy.reused  # and the snapshot after the fall-back keeps its index again


def test_the_repository_index_is_never_written(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    repo = find_repo(root)
    assert repo is not None
    real = root / ".git" / "index"
    before = (real.read_bytes(), real.stat().st_mtime_ns)
    (root / "new.txt").write_text("new\n")
    for _ in range(3):
        repo.write_tree()
    assert (real.read_bytes(), real.stat().st_mtime_ns) == before
