"""`LandlockSandbox`: the `CommandSandbox` that runs each shell command through the helper.

Every command may write to the workspace, a per-session temp dir (`$TMPDIR`) and the
configured paths; `.git` (and a worktree's git dirs) and `.agentcli/` are read-only; the
network is off. Two escalations are decided from the command text, the same way the policy
decides that such commands need the user's approval in auto mode:
- a command made only of git commands that change the repository (`git add … && git commit …`)
  runs with the git dirs writable;
- a command made only of commands known to need the network (package installs,
  `git fetch/pull/push`, `curl`) runs with the network on.
Everything substituted into such a command must be read-only (`git commit -m "$(cat msg)"`),
and nothing else may be chained to it, so an approved command cannot carry an unapproved one
past the sandbox. `.agentcli/` is never writable: commands cannot grant themselves rules.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import sys
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path

from agentcli.permissions.commands import needs_git_write, needs_network
from agentcli.permissions.readonly import is_read_only_part
from agentcli.permissions.shell import parse_command
from agentcli.sandbox.explain import SandboxLimits, explain

_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
# Substitutions are fine in an escalated command when what they run is read-only.
_TOLERATED_UNSAFE = frozenset({"command substitution"})


@dataclass(frozen=True, slots=True)
class Escalation:
    git_write: bool = False
    network: bool = False


def escalation_for(command: str) -> Escalation:
    """What the sandbox lifts for this command (nothing unless every part needs it)."""
    parsed = parse_command(command)
    if not parsed.ok or not parsed.parts or set(parsed.unsafe) - _TOLERATED_UNSAFE:
        return Escalation()
    if not all(is_read_only_part(inner) for inner in parsed.nested):
        return Escalation()
    git = [needs_git_write(part) for part in parsed.parts]
    network = [needs_network(part) for part in parsed.parts]
    if not all(g or n for g, n in zip(git, network, strict=True)):
        return Escalation()
    return Escalation(git_write=any(git), network=any(network))


def shell_command_of(argv: list[str]) -> str:
    """The command string of `bash -c CMD` (or `sh -lc CMD`, ...), else ""."""
    if len(argv) >= 3 and Path(argv[0]).name in _SHELLS:
        flag = argv[-2]
        if flag.startswith("-") and not flag.startswith("--") and "c" in flag:
            return argv[-1]
    return ""


def git_dirs(workspace: Path) -> tuple[Path, ...]:
    """The `.git` entry that governs the workspace and the directories git writes through it
    (for a worktree: its git dir and the common dir)."""
    for directory in (workspace, *workspace.parents):
        dotgit = directory / ".git"
        if dotgit.is_dir():
            return (dotgit.resolve(),)
        if dotgit.is_file():
            found = re.match(r"gitdir:\s*(.+)", dotgit.read_text(errors="replace"))
            if not found:
                return (dotgit,)
            gitdir = (directory / found.group(1).strip()).resolve()
            dirs = [dotgit, gitdir]
            commondir = gitdir / "commondir"
            if commondir.is_file():
                dirs.append((gitdir / commondir.read_text().strip()).resolve())
            return tuple(dirs)
    return ()


class LandlockSandbox:
    """Runs commands under Landlock (and namespaces where the kernel allows them)."""

    def __init__(
        self,
        *,
        workspace: Path,
        writable: tuple[Path, ...] = (),
        network: bool = False,
        network_blockable: bool = True,
    ) -> None:
        self.workspace = workspace.resolve()
        self.temp_dir = Path(tempfile.mkdtemp(prefix="agentcli-session-")).resolve()
        # Removed when the sandbox is collected or, at the latest, when the process exits.
        self._cleanup = weakref.finalize(self, shutil.rmtree, self.temp_dir, ignore_errors=True)
        self.writable = tuple(p.expanduser().resolve() for p in writable)
        self.block_network = not network and network_blockable
        self.git = git_dirs(self.workspace)
        config = self.workspace / ".agentcli"
        # It must exist to be made read-only: otherwise a command could create it with rules.
        with contextlib.suppress(OSError):  # if we cannot create it, neither can a command
            config.mkdir(exist_ok=True)
        self.protected = (*self.git, config)
        self.limits = SandboxLimits(
            workspace=self.workspace,
            temp_dir=self.temp_dir,
            writable=self.writable,
            protected=self.protected,
            network_blocked=self.block_network,
        )

    def wrap(self, argv: list[str], *, cwd: Path) -> list[str]:
        escalation = escalation_for(shell_command_of(argv))
        writes = [self.workspace, self.temp_dir, *self.writable]
        read_only = list(self.protected)
        if escalation.git_write:
            git_writable = [p for p in self.git if p.is_dir()]
            writes += git_writable
            read_only = [p for p in read_only if p not in git_writable]
        helper = [sys.executable, "-I", "-m", "agentcli.sandbox.exec", "--tmp", str(self.temp_dir)]
        if self.block_network and not escalation.network:
            helper.append("--no-network")
        for path in writes:
            helper += ["--write", str(path)]
        for path in read_only:
            helper += ["--read-only", str(path)]
        return [*helper, "--", *argv]

    def explain_failure(self, output: str, exit_code: int) -> str | None:
        return explain(output, self.limits)
