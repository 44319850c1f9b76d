"""Permission decisions (code, testable as a table) and the seam for asking the user.

`PermissionPolicy.decide` maps a tool call's target to allow / ask / deny. An `ask` goes to a
`Prompter`; without a terminal, `NonInteractivePrompter` turns it into a denial at once, never a
hang, and the denial names the rule the user could add.

The real policy is `policy.RulePolicy` (mode × risk × rules, parsed shell commands), built by
`setup.build_policy` / `setup.build_permissions` (which also sets up the OS sandbox from
`agentcli.sandbox`); `basic.ModePolicy` is a mode-only stand-in for tests. The policy also says
which files the search tools leave out (`screen.SearchScreen`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from agentcli.confinement import Confinement
from agentcli.permissions.rules import RuleKind, RulesView
from agentcli.vocabulary import Decision, PermissionMode, PermissionTarget, Risk, Verdict

if TYPE_CHECKING:
    from agentcli.permissions.screen import SearchScreen

__all__ = ["Decision", "PermissionMode", "Verdict"]  # re-exported: the policy's vocabulary


@dataclass(frozen=True, slots=True)
class PermissionRequest:
    call_id: str
    tool: str
    risk: Risk
    target: PermissionTarget
    suggested_rule: str | None
    preview: str = ""
    """What will happen: a diff for an edit, the command and cwd for shell."""
    reason: str = ""
    """Why the policy asks (e.g. "forced rm: destructive commands always ask")."""
    confinement: Confinement | None = None
    """How the command will run if approved (shown: above all when it is unconfined)."""


class Answer(enum.StrEnum):
    YES = "yes"
    ALWAYS = "always"
    NO = "no"


@dataclass(frozen=True, slots=True)
class PromptAnswer:
    answer: Answer
    reason: str | None = None


class PermissionPolicy(Protocol):
    @property
    def mode(self) -> PermissionMode: ...

    @property
    def sandbox_available(self) -> bool:
        """Commands run inside a working OS sandbox."""
        ...

    @property
    def sandbox_problem(self) -> str | None:
        """Why there is no sandbox (None: there is one, or nobody said why not)."""
        ...

    def decide(self, risk: Risk, target: PermissionTarget) -> Verdict: ...

    def remember(self, rule: str) -> None:
        """Add an allow rule for the rest of the session (an "always" answer)."""

    def rules_view(self) -> RulesView:
        """The rules in force, read-only."""
        ...

    def add_rule(self, kind: RuleKind, text: str, source: str = "session") -> None:
        """Add a rule for the rest of the session (not saved); UsageError if it is not one."""

    def drop_rules(self, source: str) -> None:
        """Remove the rules added with `source` (a grant for one task ends with it)."""

    def take_notices(self) -> list[str]:
        """What the user should hear about since the last call (e.g. a rule not saved)."""
        ...

    def search_screen(self, root: str) -> SearchScreen:
        """The files a search (grep, glob) under `root` must leave out of its results, once
        the search itself is allowed (see `agentcli.permissions.screen`)."""

    def for_mode(self, mode: PermissionMode) -> PermissionPolicy:
        """This policy deciding in `mode` (a subagent's narrower mode): the same rules, the
        same sandbox."""
        ...


class Prompter(Protocol):
    @property
    def asks_a_person(self) -> bool:
        """Whether an `ask` reaches someone who may answer yes (False: it denies at once; a
        prompter that passes questions on says what the next one does)."""
        ...

    async def ask(self, request: PermissionRequest) -> PromptAnswer: ...


class NonInteractivePrompter:
    """No one can answer: every `ask` is a denial, at once (the rule hint that goes with it is
    added by the tool runtime from `suggested_rule`)."""

    asks_a_person = False

    async def ask(self, request: PermissionRequest) -> PromptAnswer:
        why = f" ({request.reason})" if request.reason else ""
        return PromptAnswer(
            Answer.NO, f"no terminal to ask for permission to {request.target.summary}{why}"
        )


def suggested_rule(target: PermissionTarget) -> str:
    """A rough rule for `target` (the mode-only policy's hint; `RulePolicy` suggests the
    narrowest rule from the parsed command, see `agentcli.permissions.suggest`)."""
    if target.rule_class == "shell":
        first = target.subject.split()[0] if target.subject.split() else "*"
        return f"shell({first} *)"
    if target.rule_class in ("read", "write"):
        return f"{target.rule_class}({target.subject})"
    return target.rule_class
