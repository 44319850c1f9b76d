"""The user's repository, opened with GitPython, and the git commands agentcli runs in it.

Two kinds of call, both through GitPython's command runner (`Repo.git.execute`) with the git
executable agentcli chose (on PATH, never inside the work tree: `owngit.command.find_git`):

- `run(...)`: what the user asked for (switching to a new branch, staging the task's files,
  committing). The user's git config applies: their identity, signing, filters, and in a
  workspace they trust the repository's own hooks, as `git commit` would run them. In one they
  have not trusted, the command line overrides (`-c` beats every config file) whatever the
  repository could make run: hooks (`core.hooksPath=/dev/null`, and the configured hooks of git
  2.54 disabled by name and by event), the filter drivers the repository's own config defines,
  fsmonitor, signing, background gc and maintenance, credential helpers and the network.
- `query(...)`: what agentcli asks for itself (a config value, whether a branch exists, which
  files differ): always with those overrides.

GitPython copies the process environment into every command and can only add to it, so
agentcli's own API keys are handed on blanked, never with their values (`environment`).
The repository is found as agentcli's own git finds it (`owngit.discover`: files read as data,
no config program run, another user's repository refused), then opened by GitPython.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from agentcli.environment import own_credentials
from agentcli.errors import GitRefusal
from agentcli.owngit.command import find_git
from agentcli.owngit.discover import locate, settle

if TYPE_CHECKING:
    from git import Repo

COMMIT_HOOKS = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit")
HOOK_EVENTS = (
    *COMMIT_HOOKS,
    *("post-checkout", "reference-transaction", "post-index-change", "pre-auto-gc"),
)
"""Every hook `git add`, `git commit` and `git switch -c` can start."""

PROGRAMS_OFF = (
    *("-c", "core.hooksPath=/dev/null"),
    *("-c", "core.fsmonitor=false"),
    *("-c", "commit.gpgSign=false"),
    *("-c", "tag.gpgSign=false"),
    *("-c", "gc.auto=0"),
    *("-c", "maintenance.auto=false"),
    *("-c", "core.pager=cat"),
    *("-c", "core.editor=:"),
    *("-c", "sequence.editor=:"),
    *("-c", "core.askPass="),
    *("-c", "credential.helper="),
    *("-c", "protocol.allow=never"),
    *(arg for event in HOOK_EVENTS for arg in ("-c", f"hook.{event}.enabled=false")),
)
"""What turns off every program a repository's config can name for these commands."""

IN_PROGRESS = (
    ("MERGE_HEAD", "a merge", "finish it (git commit) or abort it (git merge --abort)"),
    ("CHERRY_PICK_HEAD", "a cherry-pick", "finish it or abort it (git cherry-pick --abort)"),
    ("REVERT_HEAD", "a revert", "finish it or abort it (git revert --abort)"),
    ("rebase-merge", "a rebase", "finish it or abort it (git rebase --abort)"),
    ("rebase-apply", "a rebase or `git am`", "finish it or abort it (git rebase --abort)"),
)
_EXECUTABLE_VARIABLE = "GIT_PYTHON_GIT_EXECUTABLE"


def gitpython(executable: str) -> ModuleType:
    """GitPython, imported now (it runs `git version` as it loads: with `executable`, never a
    `git` that PATH lookup in the current directory could find)."""
    if "git.repo" in sys.modules:
        return sys.modules["git"]
    saved = os.environ.get(_EXECUTABLE_VARIABLE)
    os.environ[_EXECUTABLE_VARIABLE] = executable
    try:
        import git
    finally:
        if saved is None:
            os.environ.pop(_EXECUTABLE_VARIABLE, None)
        else:
            os.environ[_EXECUTABLE_VARIABLE] = saved
    return git


@dataclass(frozen=True, slots=True)
class Done:
    """A git command that exited with one of the codes its caller accepts."""

    status: int
    stdout: bytes
    stderr: str


@dataclass(frozen=True, slots=True)
class Head:
    """Where HEAD is."""

    branch: str | None
    """The branch it is on (None: detached)."""
    sha: str | None
    """The commit (None: a branch with no commit yet)."""


class UserRepo:
    """The user's repository, open (close it, or use it as a context manager)."""

    def __init__(self, repo: Repo, *, executable: str, trusted: bool) -> None:
        self._repo = repo
        self.executable = executable
        self.trusted = trusted
        """Whether the repository's own hooks and program-running config may run."""
        self._overrides: tuple[str, ...] | None = None

    def __enter__(self) -> UserRepo:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._repo.close()

    @property
    def work_tree(self) -> Path:
        return Path(self._repo.working_tree_dir or self._repo.git_dir).resolve()

    @property
    def git_dir(self) -> Path:
        """This work tree's git dir (its HEAD, index, MERGE_HEAD…)."""
        return Path(self._repo.git_dir).resolve()

    @property
    def index_path(self) -> Path:
        return self.git_dir / "index"

    # -- commands ------------------------------------------------------------------------------
    def run(
        self,
        *args: str,
        index: Path | None = None,
        stdin: bytes = b"",
        ok_codes: tuple[int, ...] = (0,),
    ) -> Done:
        """`git ARGS` as the user's own command (see the module docstring); GitRefusal with
        git's own words unless it exits with one of `ok_codes`."""
        settings = () if self.trusted else self.overrides()
        return self._execute([*settings, *args], index, stdin, ok_codes, own=False)

    def query(
        self,
        *args: str,
        index: Path | None = None,
        ok_codes: tuple[int, ...] = (0,),
        stdin: bytes = b"",
    ) -> Done:
        """`git ARGS` for agentcli's own sake: nothing the repository configures runs."""
        return self._execute([*self.overrides(), *args], index, stdin, ok_codes)

    def overrides(self) -> tuple[str, ...]:
        """PROGRAMS_OFF, plus the filter drivers and configured hooks that the repository's own
        config (and what it includes) defines, each turned off by name."""
        if self._overrides is None:
            done = self._execute(
                [*PROGRAMS_OFF, "config", "--show-scope", "--list", "--includes", "--name-only",
                 "-z"], None, b"", (0, 1),
            )  # fmt: skip
            fields = done.stdout.decode(errors="surrogateescape").split("\0")
            named: list[str] = []
            for scope, key in zip(fields[0::2], fields[1::2], strict=False):
                section, _, rest = key.partition(".")
                name, _, _variable = rest.rpartition(".")
                if scope not in ("local", "worktree") or not name:
                    continue
                if section.lower() == "filter":
                    named += [f"filter.{name}.{v}=" for v in ("clean", "smudge", "process")]
                    named.append(f"filter.{name}.required=false")
                elif section.lower() == "hook":
                    named.append(f"hook.{name}.enabled=false")
            unique = dict.fromkeys(named)
            self._overrides = (*PROGRAMS_OFF, *(a for s in unique for a in ("-c", s)))
        return self._overrides

    def _execute(
        self,
        args: Sequence[str],
        index: Path | None,
        stdin: bytes,
        ok_codes: tuple[int, ...],
        *,
        own: bool = True,
    ) -> Done:
        with tempfile.TemporaryFile() as feed:
            feed.write(stdin)
            feed.seek(0)
            status, out, err = self._repo.git.execute(
                [self.executable, *args],
                istream=feed,
                env=self.environment(index, own=own),
                with_extended_output=True,
                with_exceptions=False,
                stdout_as_string=False,
                strip_newline_in_stdout=False,
            )
        stdout = out if isinstance(out, bytes) else str(out).encode()
        if status not in ok_codes:
            raise command_failed(args, status, err)
        return Done(status, stdout, err)

    def environment(self, index: Path | None = None, *, own: bool = True) -> dict[str, str]:
        """What GitPython adds to the process's environment for a command: the index to use,
        no editor, pager or terminal prompt, agentcli's own keys blanked, and for agentcli's
        own questions no optional locks (`git status` does not rewrite the user's index)."""
        env = {
            "GIT_INDEX_FILE": str(index or self.index_path),
            "GIT_EDITOR": ":",
            "GIT_SEQUENCE_EDITOR": ":",
            "GIT_PAGER": "cat",
            "GIT_TERMINAL_PROMPT": "0",
        }
        if own:
            env["GIT_OPTIONAL_LOCKS"] = "0"
        credentials = own_credentials()
        env.update({name: "" for name in os.environ if name.upper() in credentials})
        return env

    # -- state ---------------------------------------------------------------------------------
    def head(self) -> Head:
        head = self._repo.head
        if head.is_detached:
            return Head(branch=None, sha=head.commit.hexsha)
        branch = head.reference.name
        return Head(branch=branch, sha=head.commit.hexsha if head.is_valid() else None)

    def branch_exists(self, name: str) -> bool:
        ref = f"refs/heads/{name}"
        return self.query("rev-parse", "-q", "--verify", ref, ok_codes=(0, 1)).status == 0

    def in_progress(self) -> tuple[str, str] | None:
        """(what, how to end it) for a merge, rebase, cherry-pick or revert in progress."""
        for marker, what, how in IN_PROGRESS:
            if (self.git_dir / marker).exists():
                return what, how
        return None

    def check_not_busy(self) -> None:
        found = self.in_progress()
        if found is not None:
            what, how = found
            raise GitRefusal(f"{what} is in progress in {self.work_tree}", hint=how)

    def check_identity(self) -> None:
        """GitRefusal unless git knows who the author and committer are (their e-mail): git
        itself might make one up from the host name."""
        done = self.query(
            "config", "-z", "--get-regexp", r"^(user|author|committer)\.email$", ok_codes=(0, 1)
        )
        keys = {
            entry.partition("\n")[0].lower()
            for entry in done.stdout.decode(errors="surrogateescape").split("\0")
            if entry.partition("\n")[2].strip()
        }
        env = os.environ
        fallback = "user.email" in keys or bool(env.get("EMAIL"))
        author = bool(env.get("GIT_AUTHOR_EMAIL")) or "author.email" in keys or fallback
        committer = bool(env.get("GIT_COMMITTER_EMAIL")) or "committer.email" in keys or fallback
        if not (author and committer):
            raise GitRefusal(
                "git does not know who you are: user.email is not set, so a commit would have "
                "no author",
                hint='git config --global user.email "you@example.com" (and user.name)',
            )

    def check_committable(self) -> Head:
        """Where HEAD is, once it is sure a commit can go there: on a branch, with no merge or
        rebase in progress and an identity to commit as (GitRefusal otherwise)."""
        head = self.head()
        if head.branch is None:
            raise GitRefusal(
                f"HEAD is detached in {self.work_tree} (at {head.sha and head.sha[:12]}): a "
                "commit would be on no branch",
                hint="switch to a branch first (git switch NAME), or start one with --branch NAME",
            )
        self.check_not_busy()
        self.check_identity()
        return head

    def hooks_left_out(self, events: Sequence[str]) -> list[str]:
        """The hooks among `events` the repository would run, were it trusted."""
        done = self._execute(["rev-parse", "--git-path", "hooks"], None, b"", (0,))
        where = Path(done.stdout.decode(errors="surrogateescape").strip())
        hooks_dir = where if where.is_absolute() else self.work_tree / where
        found = [e for e in events if os.access(hooks_dir / e, os.X_OK) and _is_file(hooks_dir / e)]
        configured = self._execute(
            ["config", "-z", "--get-regexp", r"^hook\..*\.event$"], None, b"", (0, 1)
        )
        for entry in configured.stdout.decode(errors="surrogateescape").split("\0"):
            event = entry.partition("\n")[2].strip()
            if event in events and event not in found:
                found.append(event)
        return found

    def signs_commits(self) -> bool:
        done = self._execute(
            ["config", "--type=bool", "--get", "commit.gpgSign"], None, b"", (0, 1)
        )
        return done.stdout.strip() == b"true"

    @contextlib.contextmanager
    def index_locked(self) -> Iterator[Path]:
        """Hold the repository's index lock (`index.lock`, git's own protocol) as `git commit`
        holds it: no other git command changes the index, or commits, meanwhile. The lock file
        is removed at the end unless the caller renamed it over the index."""
        lock = self.git_dir / "index.lock"
        try:
            os.close(os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        except FileExistsError:
            raise GitRefusal(
                f"the repository's index is locked: {lock} exists",
                hint="another git process is running in this repository; if none is, remove "
                "that file",
            ) from None
        try:
            yield lock
        finally:
            lock.unlink(missing_ok=True)


def _is_file(path: Path) -> bool:
    return path.is_file()


def command_failed(args: Sequence[str], status: int, stderr: str) -> GitRefusal:
    """git's own words for a command that failed: its `fatal:`/`error:` lines, else its last."""
    subcommand = next((a for a in args if not a.startswith("-") and "=" not in a), "git")
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    said = [line for line in lines if line.startswith(("fatal:", "error:"))] or lines[-3:]
    detail = "; ".join(said) or f"exit {status}"
    return GitRefusal(f"git {subcommand} failed: {detail}")


def open_repository(workspace: Path, *, trusted: bool) -> UserRepo:
    """The repository holding `workspace` (GitRefusal when there is none agentcli writes to)."""
    found = locate(workspace)
    if found is None:
        raise GitRefusal(
            f"{workspace} is not in a git repository",
            hint="--branch and --commit work in a git repository (git init makes one)",
        )
    executable = find_git(outside=found.directory)
    if executable is None:
        raise GitRefusal("git is not installed (no git on PATH)")
    layout = settle(found, workspace, executable)
    if layout is None:
        raise GitRefusal(
            f"agentcli does not write to the repository at {found.directory}: it is bare, its "
            "work tree is elsewhere (core.worktree), or another user owns it"
        )
    module = gitpython(executable)
    try:
        repo = module.Repo(str(layout.work_tree))
    except (module.exc.GitError, OSError, ValueError) as exc:
        raise GitRefusal(f"GitPython cannot open {layout.work_tree}: {exc}") from exc
    return UserRepo(repo, executable=executable, trusted=trusted)
