"""What a subagent may do: at most what the task that delegated to it may.

- **Tools**: its parent's (the session's built-in, MCP and skill tools), filtered by the
  definition's `tools` (an allow-list) and `disallowedTools` (a deny-list; it wins); the
  `agent` tool only while the depth limit allows another level; never `todo_write` (the todo
  list is the user's task's).
- **Permissions**: its parent's policy (the same rules, sandbox and protected paths). A
  definition's `permissionMode` applies only when it is narrower than the parent's mode
  (`read-only` < `default` < `accept-edits` < `auto` < `yolo`); then every call is decided by
  both the parent's policy and the policy in that mode, and the stricter verdict wins (so the
  child can never be allowed what the parent would not be). An allow rule the child's own work
  would grant (a skill's `allowed-tools`) does not reach its parent's policy.
- **Questions**: its parent's prompter, one question at a time across all subagents, each
  labelled with the subagent (`[explore] shell wants to run …`); without a terminal they are
  denied as the parent's are. `permissionMode: dontAsk` denies them without asking.

A subagent's own subagent (`[agents] max_depth` above 1) is bounded the same way by the
subagent that started it: its tools, its policy and its prompter, not the session's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from agentcli.agents.definitions import AgentDefinition
from agentcli.confinement import Confinement, Profile
from agentcli.permissions import (
    Answer,
    PermissionPolicy,
    PermissionRequest,
    PromptAnswer,
    Prompter,
)
from agentcli.permissions.rules import RuleKind, RulesView, class_matches
from agentcli.permissions.screen import SearchScreen
from agentcli.todo import TODO_TOOL
from agentcli.tools.base import Tool
from agentcli.vocabulary import Decision, PermissionMode, PermissionTarget, Risk, Verdict

AGENT_TOOL = "agent"
TASK_ONLY = frozenset({TODO_TOOL})
"""Tools whose state is the user's task's own (its todo list, shown to the user and kept across
compactions): a subagent plans in its own context instead."""

WIDTH = {
    PermissionMode.READ_ONLY: 0,
    PermissionMode.DEFAULT: 1,
    PermissionMode.ACCEPT_EDITS: 2,
    PermissionMode.AUTO: 3,
    PermissionMode.YOLO: 4,
}
"""How much each mode lets run unasked, narrowest first."""
_STRICTNESS = {Decision.ALLOW: 0, Decision.ASK: 1, Decision.DENY: 2}
_PROFILE_WIDTH = {Profile.READ_ONLY: 0, Profile.WORKSPACE_WRITE: 1, Profile.UNCONFINED: 2}


def child_mode(parent: PermissionMode, asked: PermissionMode | None) -> PermissionMode:
    """The mode a subagent runs in: the one its definition asks for if that is narrower."""
    if asked is not None and WIDTH[asked] < WIDTH[parent]:
        return asked
    return parent


def child_policy(parent: PermissionPolicy, asked: PermissionMode | None) -> PermissionPolicy:
    """The policy a subagent's calls are decided by (see the module docstring)."""
    mode = child_mode(parent.mode, asked)
    return Bounded(parent, parent.for_mode(mode) if mode is not parent.mode else None)


def _confinement_width(confinement: Confinement | None) -> tuple[int, bool, bool]:
    if confinement is None:
        return (-1, False, False)
    return (_PROFILE_WIDTH[confinement.profile], confinement.network, confinement.git_write)


def stricter(first: Verdict, second: Verdict) -> Verdict:
    """The verdict that lets less happen: deny over ask over allow; between two of the same
    decision, the one that confines a command more (the first when they are alike)."""
    a, b = _STRICTNESS[first.decision], _STRICTNESS[second.decision]
    if a != b:
        return first if a > b else second
    second_narrower = _confinement_width(second.confinement) < _confinement_width(first.confinement)
    chosen = second if second_narrower else first
    return replace(chosen, firm=first.firm or second.firm)


@dataclass(frozen=True, slots=True)
class Bounded:
    """A subagent's policy: its parent's, and in a narrower mode (`narrow`, if any) both decide
    and the stricter wins. What the user answers "always" to is remembered as the parent's
    (a person decided it); an allow rule granted by the subagent's own work (a skill's
    `allowed-tools`) is not: it would outlast the subagent and widen its parent."""

    parent: PermissionPolicy
    narrow: PermissionPolicy | None = None

    @property
    def mode(self) -> PermissionMode:
        return self.narrow.mode if self.narrow is not None else self.parent.mode

    @property
    def sandbox_available(self) -> bool:
        return self.parent.sandbox_available

    @property
    def sandbox_problem(self) -> str | None:
        return self.parent.sandbox_problem

    def decide(self, risk: Risk, target: PermissionTarget) -> Verdict:
        verdict = self.parent.decide(risk, target)
        return (
            verdict if self.narrow is None else stricter(self.narrow.decide(risk, target), verdict)
        )

    def remember(self, rule: str) -> None:
        self.parent.remember(rule)

    def rules_view(self) -> RulesView:
        return self.parent.rules_view()

    def add_rule(self, kind: RuleKind, text: str, source: str = "session") -> None:
        if kind is not RuleKind.ALLOW:  # an ask or deny only narrows
            self.parent.add_rule(kind, text, source)

    def drop_rules(self, source: str) -> None:
        self.parent.drop_rules(source)

    def take_notices(self) -> list[str]:
        return self.parent.take_notices()

    def search_screen(self, root: str) -> SearchScreen:
        return (self.narrow or self.parent).search_screen(root)

    def for_mode(self, mode: PermissionMode) -> PermissionPolicy:
        if WIDTH[mode] >= WIDTH[self.mode]:
            return self  # never wider than it is
        return Bounded(self, (self.narrow or self.parent).for_mode(mode))


def _named(tool: str, names: Sequence[str]) -> bool:
    """Is `tool` one of `names` (an MCP server's `mcp__SERVER__*` / `mcp__SERVER` covers each
    of its tools)?"""
    return any(class_matches(name, tool) for name in names)


def child_tools(
    parent: Sequence[Tool[Any]], definition: AgentDefinition, *, may_delegate: bool
) -> list[Tool[Any]]:
    """The tools a subagent of `definition` gets, in its parent's order."""
    chosen = []
    for tool in parent:
        if definition.tools is not None and not _named(tool.name, definition.tools):
            continue
        if _named(tool.name, definition.disallowed):
            continue
        if (tool.name == AGENT_TOOL and not may_delegate) or tool.name in TASK_ONLY:
            continue
        chosen.append(tool)
    return chosen


def child_prompter(
    parent: Prompter, label: str, lock: asyncio.Lock, *, never_asks: bool = False
) -> Prompter:
    """Who a subagent's questions go to: its parent's person, labelled with the subagent (a
    subagent's subagent with both: `[review › explore]`); nobody when its definition says
    `dontAsk`, or when its parent may not ask either."""
    if never_asks or isinstance(parent, NeverAsks):
        return NeverAsks(label)
    if isinstance(parent, LabelledPrompter):
        return LabelledPrompter(parent.person, f"{parent.label} › {label}", lock)
    return LabelledPrompter(parent, label, lock)


class LabelledPrompter:
    """A subagent's questions, to the person its task's go to: labelled, and one at a time
    across every subagent of the session (`lock`)."""

    def __init__(self, person: Prompter, label: str, lock: asyncio.Lock) -> None:
        self.person = person
        self.label = label
        self._lock = lock

    @property
    def asks_a_person(self) -> bool:
        return self.person.asks_a_person

    async def ask(self, request: PermissionRequest) -> PromptAnswer:
        async with self._lock:
            return await self.person.ask(replace(request, tool=f"[{self.label}] {request.tool}"))


class NeverAsks:
    """`permissionMode: dontAsk`: what would ask is denied, without asking anyone."""

    asks_a_person = False

    def __init__(self, label: str) -> None:
        self._label = label

    async def ask(self, request: PermissionRequest) -> PromptAnswer:
        return PromptAnswer(
            Answer.NO,
            f"the {self._label} subagent may not ask (permissionMode dontAsk) to "
            f"{request.target.summary}",
        )
