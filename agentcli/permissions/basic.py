"""A mode-only policy for tests that need a policy but no rules (sessions use RulePolicy)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from agentcli.errors import UsageError
from agentcli.permissions import Decision, PermissionMode, Verdict, suggested_rule
from agentcli.permissions.rules import RuleKind, RulesView, parse_rule
from agentcli.permissions.screen import SearchScreen
from agentcli.vocabulary import PermissionTarget, Risk


@dataclass
class ModePolicy:
    mode: PermissionMode = PermissionMode.DEFAULT
    allowed: set[str] = field(default_factory=set)
    sandbox_available: bool = False
    sandbox_problem: str | None = None
    _sources: dict[str, set[str]] = field(default_factory=dict)
    """The rules `add_rule` added, by source (what `drop_rules` removes)."""

    def decide(self, risk: Risk, target: PermissionTarget) -> Verdict:
        rule = suggested_rule(target)
        if self.mode is PermissionMode.YOLO or risk in (Risk.READ, Risk.DELEGATE):
            return Verdict(Decision.ALLOW, f"{risk.value} is allowed in {self.mode.value} mode")
        if self.mode is PermissionMode.READ_ONLY:
            return Verdict(Decision.DENY, "read-only mode denies every write and command")
        if rule in self.allowed:
            return Verdict(Decision.ALLOW, f"allowed by {rule}")
        if risk is Risk.WRITE and self.mode in (PermissionMode.ACCEPT_EDITS, PermissionMode.AUTO):
            return Verdict(
                Decision.ALLOW, f"workspace writes are allowed in {self.mode.value} mode"
            )
        return Verdict(Decision.ASK, f"{risk.value} needs permission", suggested_rule=rule)

    def remember(self, rule: str) -> None:
        self.allowed.add(rule)

    def rules_view(self) -> RulesView:
        return RulesView(allow=tuple(parse_rule(text, "session") for text in sorted(self.allowed)))

    def add_rule(self, kind: RuleKind, text: str, source: str = "session") -> None:
        if kind is not RuleKind.ALLOW:
            raise UsageError("this policy knows only allow rules")
        rule = parse_rule(text, source).text
        self.allowed.add(rule)
        self._sources.setdefault(source, set()).add(rule)

    def drop_rules(self, source: str) -> None:
        self.allowed -= self._sources.pop(source, set())

    def take_notices(self) -> list[str]:
        return []

    def for_mode(self, mode: PermissionMode) -> ModePolicy:
        return replace(self, mode=mode)

    def search_screen(self, root: str) -> SearchScreen:
        return SearchScreen()  # no rules, so every read is allowed
