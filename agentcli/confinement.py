"""How a command is confined: the sandbox profile a permission decision gives it, and the seam
that runs a command so (`CommandSandbox`, which `agentcli.sandbox.runner` implements).

The permission policy decides, with the decision, *how* an allowed command runs; the shell tool
and the acceptance checks pass that on to the sandbox (`agentcli.sandbox.runner`):
- `READ_ONLY`: commands that run without asking because the classifier knows them to be
  read-only: no writes but a private temp dir, reads limited to the workspace and the system
  and toolchain directories, no network;
- `WORKSPACE_WRITE`: auto mode, rule-allowed and prompt-approved commands: writes to the
  workspace, the session temp dir and `sandbox.writable`; `.git` writable and the network on
  only when the decision says so;
- `UNCONFINED`: yolo, and a command a person approved at a prompt explicitly to run outside
  the sandbox (or approved where no sandbox exists).

Both sandboxed profiles hide sensitive paths, scrub secrets from the environment, run the
command in its own PID namespace and keep pathname unix sockets out of reach.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

LEFTOVERS_NOTE = "agentcli sandbox: stopped background processes still running after the command"
"""What the sandbox's PID 1 prints when it stopped processes the command left running (the
helper, which cannot import this module, spells it out too; a test keeps the two equal)."""


class Profile(enum.StrEnum):
    READ_ONLY = "read-only"
    WORKSPACE_WRITE = "workspace-write"
    UNCONFINED = "unconfined"


@dataclass(frozen=True, slots=True, kw_only=True)
class Confinement:
    profile: Profile
    network: bool = False
    """The network is on for this command (only in `WORKSPACE_WRITE`)."""
    git_write: bool = False
    """The repository's git directories are writable for this command."""
    readable: tuple[Path, ...] = ()
    """More paths this command sees, read-only (a user's own acceptance check: what its command
    names, `agentcli.check_setup`); what the sandbox hides stays hidden."""

    @property
    def sandboxed(self) -> bool:
        return self.profile is not Profile.UNCONFINED

    def reading(self, paths: tuple[Path, ...]) -> Confinement:
        """This confinement, seeing `paths` too."""
        return replace(self, readable=(*self.readable, *paths))

    def describe(self) -> str:
        """How the command will run, in words for a permission prompt."""
        if self.profile is Profile.UNCONFINED:
            return "OUTSIDE the sandbox (unconfined: it can do anything you can)"
        if self.profile is Profile.READ_ONLY:
            return "in the read-only sandbox"
        opened = [
            *(["the network"] if self.network else []),
            *([".git"] if self.git_write else []),
        ]
        if not opened:
            return "in the sandbox (workspace writes only, no network)"
        return "in the sandbox, with " + " and ".join(opened) + " opened"


READ_ONLY = Confinement(profile=Profile.READ_ONLY)
WORKSPACE_WRITE = Confinement(profile=Profile.WORKSPACE_WRITE)
UNCONFINED = Confinement(profile=Profile.UNCONFINED)


@dataclass(frozen=True, slots=True)
class PreparedCommand:
    """The argv and environment that run a command confined as asked."""

    argv: list[str]
    env: Mapping[str, str] = field(default_factory=dict)


class CommandSandbox(Protocol):
    """Runs commands inside an OS sandbox (see `agentcli.sandbox`)."""

    temp_dir: Path
    """The session's temp dir: sandboxed commands see it (as `$TMPDIR`) and may write it."""

    def prepare(self, argv: list[str], confinement: Confinement) -> PreparedCommand:
        """The argv and environment that run `argv` confined as `confinement` says."""
        ...

    def explain_failure(self, output: str, exit_code: int, confinement: Confinement) -> str | None:
        """If a command failed because of the sandbox, a sentence saying so for the model."""
        ...

    def hides(self, paths: Sequence[Path]) -> list[Path]:
        """Those of `paths` that every command is kept from (credentials, agentcli's own data,
        `sandbox.deny_read`), whatever else it is given."""
        ...
