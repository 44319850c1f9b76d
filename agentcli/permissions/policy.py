"""The permission policy: mode × risk × rules → allow / ask / deny.

Order of precedence, first match wins:
1. a `deny` rule (from any config level or `--deny`) denies, in every mode; a `read(...)` deny
   rule also denies a built-in reader (`cat`, `grep`, ...) whose arguments name such a file;
2. `yolo` allows everything else; `read-only` denies every command outside the built-in
   read-only set (before anything could ask about it);
3. in other modes a recursive reader (`grep -r`, `rg`, `find`) over a directory that may hold
   such files (any directory, if it follows symbolic links), a reader of files a shell pattern
   names (`cat src/*`), or a git command that prints committed files (`git show`, `git diff`,
   `git log -p`), asks, even under an allow rule; `read-only` denies every write and external
   action;
4. destructive commands, writes to `.git/` or agentcli's own config and data (the trust store)
   and `agentcli trust` ask, even under an allow rule;
5. an `ask` rule asks;
6. an `allow` rule allows (for shell, every part of a compound command must be allowed, and
   commands with substitutions or redirections into files are allowed only by `shell(*)`);
7. the mode's default: reads allowed; workspace writes allowed in `accept-edits` and `auto`;
   the built-in read-only commands allowed while their arguments stay inside the workspace
   (reading elsewhere asks); in `auto`, other commands allowed because they run inside the OS
   sandbox, except those that need more than it gives (git commands that change the
   repository, network installs) — those ask; everything else asks.

`search_screen` says which files grep and glob leave out of their results: those a `read(...)`
deny rule covers, and those of ask rules unless the search itself was asked about.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from agentcli.confinement import READ_ONLY, UNCONFINED, WORKSPACE_WRITE, Confinement
from agentcli.errors import UsageError
from agentcli.globs import globs_under
from agentcli.permissions import Decision, PermissionMode, Verdict
from agentcli.permissions.commands import (
    destructive_reason,
    every_command,
    git_prints_files,
    needs_git_write,
    needs_network,
    read_paths,
    reads_by_pattern,
    searched_dirs,
)
from agentcli.permissions.confine import escalated
from agentcli.permissions.persist import append_allow_rule, keep_out_of_git
from agentcli.permissions.protected import is_one_of, is_protected_path, protected_write_reason
from agentcli.permissions.readonly import is_read_only_part
from agentcli.permissions.rules import PATH_CLASSES, Rule, RuleKind, RuleSet, RulesView
from agentcli.permissions.screen import SearchScreen
from agentcli.permissions.shell import ParsedCommand, SimpleCommand, parse_command
from agentcli.permissions.suggest import command_rule, path_rule
from agentcli.vocabulary import PermissionTarget, Risk

YOLO_HINT = "only --permission-mode yolo runs it without asking"
_LIKE_READS = frozenset({Risk.READ, Risk.DELEGATE})
"""Risks allowed, unless a rule says otherwise, in every mode (read-only too)."""
OUT_OF_SCOPE = "it may read outside the workspace"


@dataclass(kw_only=True)
class RulePolicy:
    """The real `PermissionPolicy`. `mode` may change during a session (`/mode`)."""

    mode: PermissionMode
    rules: RuleSet = field(default_factory=RuleSet)
    sandbox_available: bool = False
    """Commands run inside a working OS sandbox (auto mode relies on it)."""
    sandbox_network: bool = False
    """Sandboxed commands have the network anyway (configured, or the kernel cannot block it),
    so needing it is no reason to ask."""
    sandbox_problem: str | None = None
    """Why there is no sandbox, said once when auto mode has to ask instead."""
    persist_to: Path | None = None
    """Where "always" answers are saved (`.agentcli/config.local.toml`), or nowhere."""
    agentcli_dirs: tuple[Path, ...] = ()
    """agentcli's own config and data directories (user config, trust store, "always" answers
    kept for untrusted workspaces): writes to them always ask, like writes to `.git/`."""
    install_dirs: tuple[Path, ...] = ()
    """agentcli's own installation (`agentcli.own_install`): a file tool's write there always
    asks (the next start would run it); commands cannot write it (the sandbox)."""
    workspace: Path | None = None
    """Built-in read-only commands run without asking only while they read inside it."""
    hook_scripts: tuple[Path, ...] = ()
    """The workspace files hooks run (`agentcli.hooks`): writes to them always ask, as a
    hook may run them as the user's program."""
    notices: list[str] = field(default_factory=list)
    """Things the user should hear about (printed by the UI)."""
    _groups: dict[str, tuple[str, ...]] = field(default_factory=dict)
    _said_no_sandbox: bool = False

    def decide(self, risk: Risk, target: PermissionTarget) -> Verdict:
        if target.rule_class == "shell":
            return self._decide_shell(target)
        return self._decide_other(risk, target)

    def remember(self, rule: str) -> None:
        """Allow `rule` (and the rules suggested with it) for the session, and save them."""
        for text in self._groups.get(rule, (rule,)):
            if any(existing.text == text for existing in self.rules.allow):
                continue
            source = "session"
            if self.persist_to is not None:
                try:
                    append_allow_rule(self.persist_to, text)
                    source = str(self.persist_to)
                except (OSError, UsageError) as exc:
                    why = exc.message if isinstance(exc, UsageError) else str(exc)
                    self.notices.append(f"{text} is allowed for this session only: {why}")
                else:
                    self._keep_personal(self.persist_to)
            self.rules.add(RuleKind.ALLOW, [text], source, granted=True)

    def _keep_personal(self, path: Path) -> None:
        """A rules file in the workspace is the user's own: the repository ignores it."""
        if self.workspace is None or not path.is_relative_to(self.workspace):
            return  # kept in agentcli's data dir: no repository's business
        try:
            keep_out_of_git(path)
        except OSError as exc:
            self.notices.append(f"{path} could not be added to git's ignored files: {exc}")

    def rules_view(self) -> RulesView:
        return self.rules.view()

    def for_mode(self, mode: PermissionMode) -> RulePolicy:
        """This policy deciding in `mode`: the same rules (one set: what is granted in one is
        granted in both), sandbox and protected paths."""
        return replace(self, mode=mode, notices=[], _groups={})

    def add_rule(self, kind: RuleKind, text: str, source: str = "session") -> None:
        self.rules.add(kind, [text], source, granted=True)

    def drop_rules(self, source: str) -> None:
        for kind in RuleKind:
            rules = self.rules.of(kind)
            rules[:] = [rule for rule in rules if rule.source != source]

    def take_notices(self) -> list[str]:
        taken, self.notices = self.notices, []
        return taken

    def search_screen(self, root: str) -> SearchScreen:
        """Files a search under `root` leaves out: those of `read(...)` deny rules, and of ask
        rules unless the user was asked about the search itself (its root is under one)."""
        root_target = PermissionTarget(rule_class="read", subject=root, summary=root)
        asked = self.decide(Risk.READ, root_target).decision is Decision.ASK
        reads = [rule for rule in self.rules.ask if rule.rule_class == "read"]
        return SearchScreen(
            denied=self._denied_reads(),
            asking=() if asked or self.mode is PermissionMode.YOLO else tuple(reads),
        )

    def _denied_reads(self) -> tuple[Rule, ...]:
        return tuple(rule for rule in self.rules.deny if rule.rule_class == "read")

    def _decide_other(self, risk: Risk, target: PermissionTarget) -> Verdict:
        rule_class, subject = target.rule_class, target.subject
        denied = self.rules.first(RuleKind.DENY, rule_class, subject)
        if denied:
            return _deny(f"denied by the rule {denied.text} (from {denied.source})")
        if self.mode is PermissionMode.READ_ONLY and risk not in _LIKE_READS:
            return _deny(f"read-only mode allows no {risk.value} actions")
        if self.mode is PermissionMode.YOLO:
            return _allow("yolo mode")
        suggestion = path_rule(rule_class, subject) if rule_class in PATH_CLASSES else rule_class
        if rule_class == "write" and is_one_of(subject, self.hook_scripts, self.workspace):
            return Verdict(
                Decision.ASK,
                f"{subject} is a script a hook runs: writes to it always ask; {YOLO_HINT}",
                firm=True,
            )
        if rule_class == "write" and is_protected_path(
            subject, self.agentcli_dirs, self.workspace, self.install_dirs
        ):
            return Verdict(
                Decision.ASK,
                "writes to .git/, .mcp.json and agentcli's own config, data and installation "
                f"always ask; {YOLO_HINT}",
                firm=True,
            )
        asked = self.rules.first(RuleKind.ASK, rule_class, subject)
        if asked:
            return Verdict(Decision.ASK, f"the rule {asked.text} asks", suggestion, firm=True)
        allowed = self.rules.first(RuleKind.ALLOW, rule_class, subject)
        if allowed:
            return _allow(f"allowed by the rule {allowed.text}")
        if risk is Risk.READ:
            return _allow("reads are allowed")
        if risk is Risk.DELEGATE:
            return _allow("delegating is allowed: each of the subagent's calls asks on its own")
        if risk is Risk.WRITE and self.mode in (PermissionMode.ACCEPT_EDITS, PermissionMode.AUTO):
            return _allow(f"workspace writes are allowed in {self.mode.value} mode")
        return Verdict(
            Decision.ASK,
            f"{risk.value} actions need permission in {self.mode.value} mode",
            suggestion,
        )

    def _decide_shell(self, target: PermissionTarget) -> Verdict:
        command = target.subject
        parsed = parse_command(command)
        everything = every_command(parsed)
        denial = self._shell_denial(command, everything)
        if denial is not None:
            return denial
        if self.mode is PermissionMode.YOLO:
            return Verdict(Decision.ALLOW, "yolo mode", confinement=UNCONFINED)
        if self.mode is PermissionMode.READ_ONLY and not _built_in_read_only(parsed):
            # Before anything may ask: a yes would run what read-only mode never runs.
            return _deny("read-only mode runs only the built-in read-only commands")
        if target.outside_sandbox:
            if self.mode is PermissionMode.READ_ONLY:
                return _deny("read-only mode never runs commands outside the sandbox")
            return Verdict(
                Decision.ASK,
                "it asks to run OUTSIDE the sandbox, unconfined; only a person may allow that",
                confinement=UNCONFINED,
                firm=True,
            )
        verdict = self._decide_sandboxed(parsed, everything)
        if verdict.decision is Decision.DENY or self.sandbox_available:
            return verdict
        return self._without_sandbox(verdict)

    def _decide_sandboxed(self, parsed: ParsedCommand, everything: list[SimpleCommand]) -> Verdict:
        """The decision when the command would run in the sandbox."""
        approved = READ_ONLY if self.mode is PermissionMode.READ_ONLY else escalated(parsed)
        denied_reads = self._denied_reads()
        for part in everything:
            why = self._searches_denied(part, denied_reads)
            if why:
                return _ask(f"{why}; {YOLO_HINT}", approved, firm=True)
        if self.mode is PermissionMode.READ_ONLY:
            return self._read_only_shell(parsed, everything)
        if not parsed.ok and denied_reads:
            # What an unparsable command reads cannot be checked against the rule at all.
            return _ask(
                f"{parsed.error}, so what it reads cannot be checked against the rule "
                f"{denied_reads[0].text} (the grep and file tools apply it); {YOLO_HINT}",
                approved,
                firm=True,
            )
        for part in everything:
            why = destructive_reason(part) or protected_write_reason(
                part, (*self.agentcli_dirs, *self.hook_scripts), self.workspace
            )
            if why:
                return _ask(
                    f"{why}: destructive commands and writes to protected paths always ask; "
                    + YOLO_HINT,
                    approved,
                    firm=True,
                )
        asked = self._ask_rule(everything)
        if asked:
            return _ask(f"the rule {asked} asks", approved, firm=True)
        everything_allowed = self.rules.allows_everything("shell")
        if everything_allowed:
            return _allow(f"allowed by the rule {everything_allowed.text}", approved)
        return self._shell_parts(parsed)

    def _without_sandbox(self, verdict: Verdict) -> Verdict:
        """No OS sandbox: what would have run confined asks, and runs unconfined if approved."""
        problem = self.sandbox_problem or "no OS sandbox is available"
        if self._said_no_sandbox:
            why = "there is no sandbox, so it would run unconfined"
        else:
            self._said_no_sandbox = True
            why = f"there is no OS sandbox ({problem}), so it would run unconfined"
        return Verdict(
            Decision.ASK,
            f"{verdict.reason}; {why} (only yolo mode runs commands unconfined without asking)",
            confinement=UNCONFINED,
            firm=True,
        )

    def _shell_denial(self, command: str, everything: list[SimpleCommand]) -> Verdict | None:
        """A `shell(...)` deny rule matching any part, or a `read(...)` deny rule naming a file
        a reader reads: denied in every mode."""
        for text in (command, *(part.text for part in everything)):
            denied = self.rules.first(RuleKind.DENY, "shell", text)
            if denied:
                return _deny(f"denied by the rule {denied.text} (from {denied.source})")
        for part in everything:
            why = self._denied_read(part)
            if why:
                return _deny(why)
        return None

    def _read_only_shell(self, parsed: ParsedCommand, everything: list[SimpleCommand]) -> Verdict:
        if not all(self._reads_in_scope(p) for p in parsed.parts):
            return _ask(OUT_OF_SCOPE, READ_ONLY, firm=True)
        asked = self._ask_rule(everything)
        if asked:
            return _ask(f"the rule {asked} asks", READ_ONLY, firm=True)
        return _allow("a built-in read-only command (read-only sandbox)", READ_ONLY)

    def _ask_rule(self, commands: list[SimpleCommand]) -> str | None:
        for part in commands:
            asked = self.rules.first(RuleKind.ASK, "shell", part.text)
            if asked:
                return asked.text
        return None

    def _shell_parts(self, parsed: ParsedCommand) -> Verdict:
        sandboxed = self.mode is PermissionMode.AUTO and self.sandbox_available
        approved = escalated(parsed)
        escalating = [
            part
            for part in parsed.parts
            if needs_git_write(part) or (needs_network(part) and not self.sandbox_network)
        ]
        if not parsed.narrow_matchable:
            if sandboxed and not escalating:
                return _allow("runs inside the sandbox", WORKSPACE_WRITE)
            why = parsed.error or "the command has " + ", ".join(parsed.unsafe)
            return _ask(f"{why}; only shell(*) or an answer allows such commands", approved)
        if all(is_read_only_part(part) and self._reads_in_scope(part) for part in parsed.parts):
            return _allow("a built-in read-only command (read-only sandbox)", READ_ONLY)
        missing = [
            part
            for part in parsed.parts
            if not (
                self.rules.first(RuleKind.ALLOW, "shell", part.text)
                or (is_read_only_part(part) and self._reads_in_scope(part))
                or (sandboxed and part not in escalating)
            )
        ]
        if not missing:
            return _allow("every part is allowed (sandboxed)", approved)
        return self._ask_for_parts(missing, sandboxed, approved)

    def _reads_in_scope(self, part: SimpleCommand) -> bool:
        """Does this reader read only inside the workspace? (Always, without a workspace.)"""
        return self.workspace is None or not read_paths(part, self.workspace)[1]

    def _denied_read(self, part: SimpleCommand) -> str | None:
        """The `read(...)` deny rule that names a file this reader's arguments name, if any."""
        if self.workspace is None:
            return None
        for path in read_paths(part, self.workspace)[0]:
            denied = self.rules.first(RuleKind.DENY, "read", path)
            if denied:
                return f"{part.name} {path} is denied by the rule {denied.text} ({denied.source})"
        return None

    def _searches_denied(self, part: SimpleCommand, denied: Sequence[Rule]) -> str | None:
        """Why a recursive reader (`grep -r`, `rg`, `find`) may read files a `read(...)` deny
        rule (`denied`) covers, inside a directory it searches: it cannot leave them out as the
        grep tool does, so it asks, even under an allow rule."""
        if self.workspace is None or not denied:
            return None
        if git_prints_files(part):
            return (
                f"`{part.text}` can print committed files the rule {denied[0].text} denies "
                "(the file tools and the grep tool leave those out)"
            )
        if reads_by_pattern(part):
            return (
                f"`{part.text}` reads the files a shell pattern expands to, which may be files "
                f"the rule {denied[0].text} denies (the file tools and the grep tool leave those "
                "out)"
            )
        for directory in searched_dirs(part, self.workspace):
            for rule in denied:
                if globs_under(rule.pattern, directory):
                    return (
                        f"`{part.name}` searches {directory}, which may hold files the rule "
                        f"{rule.text} denies (the grep and glob tools leave those out)"
                    )
        return None

    def _ask_for_parts(
        self, missing: list[SimpleCommand], sandboxed: bool, approved: Confinement
    ) -> Verdict:
        names = ", ".join(f"`{part.text}`" for part in missing[:3])
        if sandboxed:
            reason = f"{names} needs more than the sandbox gives (network or writing .git)"
        elif all(is_read_only_part(part) for part in missing):
            reason = f"{names}: {OUT_OF_SCOPE}"
        else:
            reason = f"{names} needs permission in {self.mode.value} mode"
        suggestions = tuple(dict.fromkeys(r for r in map(command_rule, missing) if r))
        if len(suggestions) > 1:
            self._groups[suggestions[0]] = suggestions
            reason += " (allowing it takes " + ", ".join(suggestions) + ")"
        return Verdict(
            Decision.ASK, reason, suggestions[0] if suggestions else None, confinement=approved
        )


def _allow(reason: str, confinement: Confinement | None = None) -> Verdict:
    return Verdict(Decision.ALLOW, reason, confinement=confinement)


def _ask(reason: str, confinement: Confinement, *, firm: bool = False) -> Verdict:
    """`firm`: no allow rule (or hook) could allow it: only a person answers."""
    return Verdict(Decision.ASK, reason, confinement=confinement, firm=firm)


def _built_in_read_only(parsed: ParsedCommand) -> bool:
    return parsed.narrow_matchable and all(is_read_only_part(p) for p in parsed.parts)


def _deny(reason: str) -> Verdict:
    return Verdict(Decision.DENY, reason)
