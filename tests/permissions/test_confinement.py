"""How each allowed (or approved) shell command runs: the sandbox profile that travels with the
permission decision, mode × command × rule, and the request to run outside the sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcli.confinement import Confinement, Profile
from agentcli.permissions import Decision, PermissionMode, Verdict
from agentcli.permissions.setup import build_policy
from agentcli.tools.base import PermissionTarget, Risk

RO = Confinement(profile=Profile.READ_ONLY)
WS = Confinement(profile=Profile.WORKSPACE_WRITE)
NET = Confinement(profile=Profile.WORKSPACE_WRITE, network=True)
GIT = Confinement(profile=Profile.WORKSPACE_WRITE, git_write=True)
BOTH = Confinement(profile=Profile.WORKSPACE_WRITE, network=True, git_write=True)
OUT = Confinement(profile=Profile.UNCONFINED)
A, Q, D = Decision.ALLOW, Decision.ASK, Decision.DENY

ROWS = [
    # (mode, command, allow rules, decision, confinement)
    ("default", "ls -la", (), A, RO),
    ("default", "git status && git log --oneline", (), A, RO),
    ("default", "cat README.md | wc -l", (), A, RO),
    ("accept-edits", "rg -n main", (), A, RO),
    ("read-only", "ls", (), A, RO),
    ("read-only", "cat /etc/passwd", (), Q, RO),  # reads outside: asks, still read-only
    ("default", "pytest -q", (), Q, WS),
    ("default", "pytest -q", ("shell(pytest *)",), A, WS),
    ("default", "ls && pytest -q", ("shell(pytest *)",), A, WS),
    ("default", "pip install requests", (), Q, NET),
    ("default", "pip install requests", ("shell(pip install *)",), A, NET),
    ("default", "git add -A && git commit -m x", (), Q, GIT),
    ("default", "git commit -m x", ("shell(git commit *)",), A, GIT),
    ("default", "git commit -m x && curl example.org", ("shell(*)",), A, BOTH),
    ("default", "git commit -m x && make", ("shell(*)",), A, WS),  # mixed: nothing opened
    ("default", "python3 -c 'import os'", ("shell(python3 *)",), A, WS),
    ("default", "rm -rf build", ("shell(*)",), Q, WS),  # destructive asks
    ("auto", "make build", (), A, WS),
    ("auto", "echo $(whoami) > out", (), A, WS),
    ("auto", "npm install left-pad", (), Q, NET),
    ("auto", "git push", (), Q, BOTH),
    ("auto", "ls", (), A, RO),
    ("yolo", "rm -rf build", (), A, OUT),
    ("yolo", "ls", (), A, OUT),
]


def verdict_for(
    target: PermissionTarget,
    mode: str,
    workspace: Path,
    allow: tuple[str, ...] = (),
    deny: tuple[str, ...] = (),
) -> Verdict:
    policy = build_policy(
        mode=PermissionMode(mode),
        flag_allow=allow,
        flag_deny=deny,
        workspace=workspace,
        sandbox_available=True,
        persist=False,
    )
    return policy.decide(Risk.EXECUTE, target)


@pytest.mark.parametrize(
    ("mode", "command", "allow", "decision", "confinement"),
    ROWS,
    ids=[f"{r[0]}|{r[1]}|{','.join(r[2]) or 'no rule'}" for r in ROWS],
)
def test_the_decision_carries_its_confinement(
    mode: str,
    command: str,
    allow: tuple[str, ...],
    decision: Decision,
    confinement: Confinement,
    tmp_path: Path,
) -> None:
    verdict = verdict_for(PermissionTarget("shell", command, command), mode, tmp_path, allow)
    assert (verdict.decision, verdict.confinement) == (decision, confinement), verdict.reason


@pytest.mark.parametrize("mode", ["default", "accept-edits", "auto"])
@pytest.mark.parametrize("allow", [(), ("shell(*)",), ("shell(make *)",)])
def test_running_outside_the_sandbox_always_asks_a_person(
    mode: str, allow: tuple[str, ...], tmp_path: Path
) -> None:
    target = PermissionTarget("shell", "make build", "run", outside_sandbox=True)
    verdict = verdict_for(target, mode, tmp_path, allow)
    assert verdict.decision is Decision.ASK
    assert verdict.confinement == OUT
    assert verdict.suggested_rule is None  # an "always" answer must not allow it next time
    assert "OUTSIDE" in verdict.reason


def test_outside_the_sandbox_in_read_only_and_yolo_and_under_a_deny(tmp_path: Path) -> None:
    target = PermissionTarget("shell", "make build", "run", outside_sandbox=True)

    def decide(mode: str, deny: tuple[str, ...] = ()) -> tuple[Decision, Confinement | None]:
        verdict = verdict_for(target, mode, tmp_path, deny=deny)
        return verdict.decision, verdict.confinement

    assert decide("read-only")[0] is Decision.DENY
    assert decide("yolo") == (Decision.ALLOW, OUT)
    assert decide("default", ("shell(make *)",))[0] is Decision.DENY
