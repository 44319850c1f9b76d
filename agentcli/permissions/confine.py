"""How an allowed shell command is confined: the sandbox profile that goes with a decision.

The policy (`agentcli.permissions.policy`) decides *whether* a command runs; this module says
*how*, from the parsed command: commands the classifier knows to be read-only run in the
read-only profile; everything else that runs sandboxed runs in the workspace-write profile,
with `.git` writable or the network on only when every part of the command needs it (a commit,
an install, a fetch) and nothing else is chained to it, so an approved command cannot carry an
unapproved one past the sandbox. Substitutions in such a command must be read-only
(`git commit -m "$(cat msg)"`).
"""

from __future__ import annotations

from agentcli.confinement import READ_ONLY, WORKSPACE_WRITE, Confinement, Profile
from agentcli.permissions.commands import needs_git_write, needs_network
from agentcli.permissions.readonly import is_read_only_part
from agentcli.permissions.shell import ParsedCommand

_TOLERATED_UNSAFE = frozenset({"command substitution"})
"""Substitutions are fine in an escalated command when what they run is read-only."""


def escalated(parsed: ParsedCommand) -> Confinement:
    """The workspace-write profile, with `.git` and the network opened when every part of the
    command needs one of them (else nothing opened)."""
    if not parsed.ok or not parsed.parts or set(parsed.unsafe) - _TOLERATED_UNSAFE:
        return WORKSPACE_WRITE
    if not all(is_read_only_part(inner) for inner in parsed.nested):
        return WORKSPACE_WRITE
    git = [needs_git_write(part) for part in parsed.parts]
    network = [needs_network(part) for part in parsed.parts]
    if not all(g or n for g, n in zip(git, network, strict=True)):
        return WORKSPACE_WRITE
    return Confinement(profile=Profile.WORKSPACE_WRITE, git_write=any(git), network=any(network))


def read_only_or_escalated(parsed: ParsedCommand) -> Confinement:
    """The read-only profile for a command made only of built-in read-only commands."""
    if parsed.narrow_matchable and all(is_read_only_part(part) for part in parsed.parts):
        return READ_ONLY
    return escalated(parsed)
