"""The permission vocabulary every layer shares: how risky a call is, what rules match against,
and what a policy decides.

It sits at the bottom (it imports only `confinement`, itself a leaf), so the tool API
(`agentcli.tools.base`) and the permission policy (`agentcli.permissions`) both build on it
without importing each other.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from agentcli.confinement import Confinement


class Risk(enum.StrEnum):
    READ = "read"
    WRITE = "write"
    EXECUTE = "execute"
    EXTERNAL = "external"
    DELEGATE = "delegate"
    """Hands work to a subagent (`agent`): the call does nothing itself, and each call the
    subagent makes is decided on its own, with at most the delegating task's permissions. A
    rule may still deny or ask for it; it is allowed, as a read is, in every mode."""


@dataclass(frozen=True, slots=True)
class PermissionTarget:
    """What permission rules match: a rule class (`read`, `write`, `shell`, or the tool's
    name) and the subject (a workspace-relative path, a command, or `*`)."""

    rule_class: str
    subject: str
    summary: str
    outside_sandbox: bool = False
    """A command the model asks to run outside the OS sandbox: only a person may approve it."""


class Decision(enum.StrEnum):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


class PermissionMode(enum.StrEnum):
    DEFAULT = "default"
    ACCEPT_EDITS = "accept-edits"
    READ_ONLY = "read-only"
    AUTO = "auto"
    YOLO = "yolo"


@dataclass(frozen=True, slots=True)
class Verdict:
    decision: Decision
    reason: str
    suggested_rule: str | None = None
    """The narrowest `--allow` rule that would have allowed this call."""
    confinement: Confinement | None = None
    """How a shell command runs if allowed (or approved): its sandbox profile."""
    firm: bool = False
    """An ask that no allow rule (and no hook's allow) can turn into an allow: only a person
    answers it (an ask rule, a destructive command, a protected path, running unconfined)."""
