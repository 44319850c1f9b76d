"""How agentcli starts its own git: which binary, which arguments, which environment.

Every git process agentcli runs for itself goes through `run_git`. The repository it works on
may be hostile (a cloned project, or files the model wrote), so nothing the repository or the
user's git setup names is allowed to decide what runs:

- the binary is found once, on PATH, skipping relative entries and directories inside the
  repository's work tree (a `git` the model wrote there is not ours to run);
- the environment is the user's minus every `GIT_*` variable (GIT_DIR, GIT_INDEX_FILE,
  GIT_CONFIG_PARAMETERS / GIT_CONFIG_COUNT…, GIT_EXTERNAL_DIFF, GIT_SSH_COMMAND, GIT_ASKPASS,
  GIT_EXEC_PATH, …) and minus agentcli's own credentials, plus the variables below;
- no system or global config file is read (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL=/dev/null);
  the repository's own config is never read either, because `GIT_DIR` is always agentcli's
  private git dir (see `owngit.repo`);
- `-c` settings on the command line, which beat every config file, turn off what could still
  run a program or a background job: hooks, fsmonitor, signing, pager, editor, auto-gc.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from agentcli.environment import own_credentials

NO_REPOSITORY = "/nonexistent/agentcli-no-git-dir"
"""GIT_DIR for git commands that need no repository (`git config --file`): nothing is found
by discovery, nothing is read."""

HARDENING = (
    "--no-pager",
    "--no-replace-objects",
    *("-c", "core.hooksPath=/dev/null"),
    *("-c", "core.fsmonitor=false"),
    *("-c", "core.splitIndex=false"),
    *("-c", "commit.gpgSign=false"),
    *("-c", "tag.gpgSign=false"),
    *("-c", "core.pager=cat"),
    *("-c", "core.editor=:"),
    *("-c", "sequence.editor=:"),
    *("-c", "core.askPass="),
    *("-c", "credential.helper="),
    *("-c", "protocol.allow=never"),
    *("-c", "gc.auto=0"),
    *("-c", "maintenance.auto=false"),
    *("-c", "core.quotePath=false"),
)
"""Global options for every own git call. Command-line `-c` is the strongest config scope."""

FIXED_ENVIRONMENT = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_SYSTEM": "/dev/null",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_PAGER": "cat",
    "GIT_EDITOR": ":",
    "GIT_PROTOCOL_FROM_USER": "0",
}
DROPPED_VARIABLES = frozenset({"SSH_ASKPASS", "PAGER", "EDITOR", "VISUAL"})


class GitError(Exception):
    """An own git command failed (or git could not be started)."""

    def __init__(self, args: Sequence[str], returncode: int | None, stderr: str) -> None:
        self.command = list(args)
        self.returncode = returncode
        self.stderr = stderr.strip()
        subcommand = next((a for a in args if not a.startswith("-")), "git")
        lines = self.stderr.splitlines()
        detail = lines[-1] if lines else f"exit {returncode}"
        # git's own `error:` line names what failed (`error: pipe.txt: can only add regular
        # files…`) where its last line only says that something did.
        cause = next((line for line in lines[:-1] if line.startswith("error: ")), None)
        if cause is not None:
            detail = f"{cause}; {detail}"
        super().__init__(f"git {subcommand}: {detail}")


def find_git(outside: Path | None = None) -> str | None:
    """The git executable on PATH, skipping relative PATH entries and any directory inside
    `outside` (the work tree); None when there is none."""
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        directory = Path(entry)
        if not entry or not directory.is_absolute():
            continue
        if outside is not None and directory.resolve().is_relative_to(outside):
            continue
        found = shutil.which("git", path=entry)
        if found is not None:
            return found
    return None


def environment(git_dir: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The user's environment without git's variables, agentcli's credentials or pager/editor
    choices, with the fixed variables above, GIT_DIR and `extra` (GIT_WORK_TREE, GIT_INDEX_FILE,
    author identity: only ever set by agentcli)."""
    own = own_credentials()
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("GIT_") and name.upper() not in own and name not in DROPPED_VARIABLES
    }
    env.update(FIXED_ENVIRONMENT)
    env["GIT_DIR"] = git_dir
    env.update(extra or {})
    return env


def run_git(
    git: str,
    args: Sequence[str],
    *,
    git_dir: str,
    cwd: Path,
    settings: Sequence[str] = (),
    extra_env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    ok_codes: tuple[int, ...] = (0,),
) -> subprocess.CompletedProcess[bytes]:
    """Run `git [HARDENING] [settings] ARGS` in `git_dir`; GitError unless it exits with one of
    `ok_codes`. `settings` are further `-c key=value` pairs (values read as data from the
    repository's or user's config, never programs)."""
    argv = [git, *HARDENING, *settings, *args]
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            env=environment(git_dir, extra_env),
            input=stdin,
            stdin=subprocess.DEVNULL if stdin is None else None,
            capture_output=True,
            check=False,
            umask=0o077,  # what it writes is agentcli's private git dir (file contents)
        )
    except OSError as exc:
        raise GitError(args, None, str(exc)) from exc
    if done.returncode not in ok_codes:
        raise GitError(args, done.returncode, done.stderr.decode(errors="replace"))
    return done
