"""Every mode × tool × rule combination → allow / ask / deny, as one table.

Each row names a tool call (its risk and permission target) and, for each kind of rule, the
expected decision in the five modes, in the order default, accept-edits, read-only, auto, yolo
(`a` allow, `?` ask, `d` deny). There is a working sandbox here; a second table covers a
machine without one. Which sandbox profile each allowed command gets is in
`test_confinement.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from agentcli.errors import UsageError
from agentcli.permissions import Decision, PermissionMode
from agentcli.permissions.setup import build_policy
from agentcli.tools.base import PermissionTarget, Risk

MODES = tuple(PermissionMode)  # default, accept-edits, read-only, auto, yolo: the letters' order
LETTER = {"a": Decision.ALLOW, "?": Decision.ASK, "d": Decision.DENY}


@dataclass(frozen=True)
class Call:
    risk: Risk
    rule_class: str
    subject: str
    matching_rule: str
    """A narrow rule that matches this call."""
    everything_rule: str
    """The rule of this class that matches everything."""


CALLS = {
    "read": Call(Risk.READ, "read", "src/app.py", "read(src/**)", "read(**)"),
    "write": Call(Risk.WRITE, "write", "src/app.py", "write(src/*.py)", "write(**)"),
    "write .git": Call(Risk.WRITE, "write", ".git/config", "write(.git/**)", "write(**)"),
    "write .agentcli": Call(
        Risk.WRITE, "write", ".agentcli/config.local.toml", "write(.agentcli/*)", "write(**)"
    ),
    "write .mcp.json": Call(Risk.WRITE, "write", ".mcp.json", "write(.mcp.json)", "write(**)"),
    "shell into .mcp.json": Call(
        Risk.EXECUTE, "shell", "cat new.json > .mcp.json", "shell(cat *)", "shell(*)"
    ),
    "shell read-only": Call(Risk.EXECUTE, "shell", "git status", "shell(git status)", "shell(*)"),
    "shell": Call(Risk.EXECUTE, "shell", "pytest -q tests", "shell(pytest *)", "shell(*)"),
    "shell destructive": Call(
        Risk.EXECUTE, "shell", "git reset --hard HEAD~1", "shell(git reset *)", "shell(*)"
    ),
    "shell substitution": Call(
        Risk.EXECUTE, "shell", "echo $(whoami)", "shell(echo *)", "shell(*)"
    ),
    "shell git write": Call(
        Risk.EXECUTE, "shell", "git commit -m wip", "shell(git commit *)", "shell(*)"
    ),
    "shell network": Call(
        Risk.EXECUTE, "shell", "pip install requests", "shell(pip install *)", "shell(*)"
    ),
    "external tool": Call(Risk.EXTERNAL, "web_fetch", "*", "web_fetch", "web_fetch(*)"),
    "execute tool": Call(Risk.EXECUTE, "notebook_run", "*", "notebook_run(*)", "notebook_run"),
    # The subagent tool: its subject is the subagent's type; Claude Code's names for it work.
    "delegate": Call(Risk.DELEGATE, "agent", "explore", "Task(Explore)", "Agent"),
}

#               no rule   allow     allow all  ask       deny
TABLE = {
    "read": ("aaaaa", "aaaaa", "aaaaa", "????a", "ddddd"),
    "write": ("?adaa", "aadaa", "aadaa", "??d?a", "ddddd"),
    "write .git": ("??d?a", "??d?a", "??d?a", "??d?a", "ddddd"),
    "write .agentcli": ("??d?a", "??d?a", "??d?a", "??d?a", "ddddd"),
    "write .mcp.json": ("??d?a", "??d?a", "??d?a", "??d?a", "ddddd"),
    "shell into .mcp.json": ("??d?a", "??d?a", "??d?a", "??d?a", "ddddd"),
    "shell read-only": ("aaaaa", "aaaaa", "aaaaa", "????a", "ddddd"),
    "shell": ("??daa", "aadaa", "aadaa", "??d?a", "ddddd"),
    "shell destructive": ("??d?a", "??d?a", "??d?a", "??d?a", "ddddd"),
    "shell substitution": ("??daa", "??daa", "aadaa", "??d?a", "ddddd"),
    "shell git write": ("??d?a", "aadaa", "aadaa", "??d?a", "ddddd"),
    "shell network": ("??d?a", "aadaa", "aadaa", "??d?a", "ddddd"),
    "external tool": ("??d?a", "aadaa", "aadaa", "??d?a", "ddddd"),
    "execute tool": ("??d?a", "aadaa", "aadaa", "??d?a", "ddddd"),
    "delegate": ("aaaaa", "aaaaa", "aaaaa", "????a", "ddddd"),
}
RULE_KINDS = ("none", "allow", "allow all", "ask", "deny")


def _rules(kind: str, call: Call) -> dict[str, list[str]]:
    rules: dict[str, list[str]] = {"allow": [], "ask": [], "deny": []}
    if kind == "allow":
        rules["allow"].append(call.matching_rule)
    elif kind == "allow all":
        rules["allow"].append(call.everything_rule)
    elif kind in ("ask", "deny"):
        rules[kind].append(call.matching_rule)
    return rules


CASES = [
    pytest.param(name, kind, TABLE[name][k], id=f"{name}|{kind}")
    for name in CALLS
    for k, kind in enumerate(RULE_KINDS)
]


@pytest.mark.parametrize(("name", "kind", "row"), CASES)
def test_decision_table(name: str, kind: str, row: str, tmp_path: Path) -> None:
    call = CALLS[name]
    rules = _rules(kind, call)
    target = PermissionTarget(call.rule_class, call.subject, f"{name}: {call.subject}")
    got = []
    # Rules reach the policy from config files and from flags; both must behave the same.
    for file_rules, flags in ((rules, {}), ({}, rules)):
        for mode in MODES:
            policy = build_policy(
                mode=mode,
                file_rules=file_rules,
                flag_allow=flags.get("allow", ()),
                flag_ask=flags.get("ask", ()),
                flag_deny=flags.get("deny", ()),
                workspace=tmp_path,
                sandbox_available=True,
                persist=False,
            )
            verdict = policy.decide(call.risk, target)
            assert verdict.reason
            got.append(next(k for k, v in LETTER.items() if v is verdict.decision))
    assert "".join(got) == row * 2, f"modes {[m.value for m in MODES]}"


def test_the_table_covers_every_mode_tool_and_rule() -> None:
    assert len(CASES) == len(CALLS) * len(RULE_KINDS)
    assert all(len(row) == len(MODES) for rows in TABLE.values() for row in rows)
    assert set(TABLE) == set(CALLS)
    assert {c.risk for c in CALLS.values()} == set(Risk)


# Without a sandbox (the kernel cannot, or sandbox.enabled = false), no command runs unasked in
# any mode but yolo: what would have run sandboxed asks, and runs unconfined if approved. Deny
# rules still deny; other tools are unaffected.
NO_SANDBOX = {
    ("shell", "none"): Decision.ASK,
    ("shell", "allow"): Decision.ASK,
    ("shell", "allow all"): Decision.ASK,
    ("shell", "deny"): Decision.DENY,
    ("shell read-only", "none"): Decision.ASK,
    ("shell substitution", "none"): Decision.ASK,
    ("shell substitution", "allow all"): Decision.ASK,
    ("shell git write", "none"): Decision.ASK,
    ("write", "none"): Decision.ALLOW,
    ("read", "none"): Decision.ALLOW,
}


@pytest.mark.parametrize(("name", "kind"), list(NO_SANDBOX))
def test_without_a_sandbox_commands_ask(name: str, kind: str, tmp_path: Path) -> None:
    call = CALLS[name]
    shell = call.rule_class == "shell"
    modes = (PermissionMode.DEFAULT, PermissionMode.ACCEPT_EDITS, PermissionMode.AUTO)
    for mode in modes if shell else (PermissionMode.AUTO,):  # auto allows writes by itself
        policy = build_policy(
            mode=mode,
            file_rules=_rules(kind, call),
            workspace=tmp_path,
            sandbox_available=False,
            sandbox_problem="the kernel has no Landlock",
            persist=False,
        )
        verdict = policy.decide(call.risk, PermissionTarget(call.rule_class, call.subject, name))
        assert verdict.decision is NO_SANDBOX[(name, kind)], (mode, verdict.reason)
        if call.rule_class == "shell" and verdict.decision is Decision.ASK:
            assert verdict.confinement is not None and not verdict.confinement.sandboxed
            assert verdict.suggested_rule is None  # no rule can allow an unconfined command


def test_without_a_sandbox_it_says_why_once(tmp_path: Path) -> None:
    policy = build_policy(
        mode=PermissionMode.AUTO,
        workspace=tmp_path,
        sandbox_available=False,
        sandbox_problem="the kernel has no Landlock",
        persist=False,
    )
    target = PermissionTarget("shell", "make build", "run make build")
    first = policy.decide(Risk.EXECUTE, target)
    second = policy.decide(Risk.EXECUTE, target)
    assert first.decision is second.decision is Decision.ASK
    assert "the kernel has no Landlock" in first.reason
    assert "the kernel has no Landlock" not in second.reason
    assert "no sandbox" in second.reason


def test_a_deny_at_any_level_wins_over_allows_elsewhere(tmp_path: Path) -> None:
    policy = build_policy(
        mode=PermissionMode.ACCEPT_EDITS,
        file_rules={"allow": ["write(**)", "shell(*)"], "deny": ["write(secrets/**)"]},
        flag_allow=["write(secrets/*)", "shell(curl *)"],
        flag_deny=["shell(curl *)"],
        workspace=tmp_path,
        sandbox_available=False,
        persist=False,
    )
    write = policy.decide(Risk.WRITE, PermissionTarget("write", "secrets/key", "write"))
    assert write.decision is Decision.DENY
    assert "secrets/**" in write.reason
    shell = policy.decide(Risk.EXECUTE, PermissionTarget("shell", "ls && curl x", "run"))
    assert shell.decision is Decision.DENY
    assert "--deny" in shell.reason


def test_network_commands_do_not_ask_when_sandboxed_commands_have_the_network(
    tmp_path: Path,
) -> None:
    policy = build_policy(
        mode=PermissionMode.AUTO,
        workspace=tmp_path,
        sandbox_available=True,
        sandbox_network=True,
        persist=False,
    )
    install = PermissionTarget("shell", "pip install -e .", "run")
    assert policy.decide(Risk.EXECUTE, install).decision is Decision.ALLOW
    commit = PermissionTarget("shell", "git commit -m x", "run")
    assert policy.decide(Risk.EXECUTE, commit).decision is Decision.ASK


# The built-in tools' own names, as users guess them, stand for their class: the rule decides
# exactly what the class rule decides, in every mode, as allow, ask and deny.
TOOL_NAMES = [
    ("write_file", "write", Risk.WRITE, "src/app.py"),
    ("edit_file", "write", Risk.WRITE, "src/app.py"),
    ("Edit", "write", Risk.WRITE, "src/app.py"),
    ("Write", "write", Risk.WRITE, "src/app.py"),
    ("read_file", "read", Risk.READ, "src/app.py"),
    ("Read", "read", Risk.READ, "src/app.py"),
    ("Bash(pytest *)", "shell(pytest *)", Risk.EXECUTE, "pytest -q"),
]


@pytest.mark.parametrize(("name", "same_as", "risk", "subject"), TOOL_NAMES)
def test_a_built_in_tool_name_is_a_rule_on_its_class(
    name: str, same_as: str, risk: Risk, subject: str, tmp_path: Path
) -> None:
    target = PermissionTarget(same_as.split("(")[0], subject, subject)

    def decisions(rule: str) -> list[Decision]:
        return [
            build_policy(
                mode=mode,
                file_rules={},
                **{f"flag_{kind}": [rule] if kind == given else [] for kind in KINDS},  # type: ignore[arg-type]
                workspace=tmp_path,
                sandbox_available=True,
                persist=False,
            )
            .decide(risk, target)
            .decision
            for mode in MODES
            for given in KINDS
        ]

    assert decisions(name) == decisions(same_as)
    assert Decision.ALLOW in decisions(name) and Decision.DENY in decisions(name)


KINDS = ("allow", "ask", "deny")


@pytest.mark.parametrize("name", ["grep", "glob", "Grep", "grep(src/**)"])
def test_search_tools_are_not_rules_of_their_own(name: str, tmp_path: Path) -> None:
    with pytest.raises(UsageError) as raised:
        build_policy(
            mode=PermissionMode.DEFAULT,
            file_rules={},
            flag_allow=[name],
            flag_ask=(),
            flag_deny=(),
            workspace=tmp_path,
            sandbox_available=True,
            persist=False,
        )
    assert "read(" in (raised.value.hint or "")
