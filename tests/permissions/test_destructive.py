"""Destructive commands and writes to `.git/` or agentcli's config ask in every mode but yolo,
even under the most permissive allow rules, however they are wrapped or spelled."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentcli.config import user_config_path
from agentcli.permissions import Decision, PermissionMode
from agentcli.permissions.setup import build_policy
from agentcli.tools.base import PermissionTarget, Risk
from agentcli.tools.paths import display_path, resolve_confined

PERMISSIVE = ["shell(*)", "write(**)", "shell(rm *)", "shell(git *)"]
ASKING_MODES = [PermissionMode.DEFAULT, PermissionMode.ACCEPT_EDITS, PermissionMode.AUTO]

DESTRUCTIVE = [
    "rm -rf build",
    "rm -fr build",
    "rm -r -f build",
    "rm --force x",
    "rm -Rf /",
    "/bin/rm -rf x",
    "\\rm -rf x",
    '"rm" -rf x',
    "r''m -rf x",
    "ls && rm -rf x",
    "ls; rm -f x",
    "ls | xargs rm -rf",
    "xargs -0 -n1 rm -rf < list",
    "sudo rm -rf /var/tmp/x",
    "sudo -u root rm -rf x",
    "env FOO=1 rm -rf x",
    "timeout 10 rm -rf x",
    "nice -n 5 rm -rf x",
    "command rm -rf x",
    "echo $(rm -rf x)",
    "bash -c 'rm -rf x'",
    'sh -c "ls && rm -rf x"',
    "bash -lc 'git reset --hard'",
    "eval 'rm -rf x'",
    "find . -name '*.o' -exec rm -f {} \\;",
    "git reset --hard",
    "git reset --hard HEAD~3",
    "git -C sub reset --hard",
    "git --git-dir .git reset --hard",  # a global option's value is not the subcommand
    "git --work-tree . clean -f",
    "git clean -fdx",
    "git clean -f",
    "git clean --force -d",
    "git checkout -- src/app.py",
    "git checkout .",
    "git checkout -f main",
    "git restore src/app.py",
    "git restore --staged .",
    "git push --force",
    "git push -f origin main",
    "git push --force-with-lease",
    "git push origin +main",
    "git push origin :feature",
    "git push --delete origin feature",
    "git branch -D feature",
    "git branch --delete --force feature",
    "git stash drop",
    "git stash clear",
    "time rm -rf x",  # the keyword reads like a wrapper of rm
    "rm x > /dev/null -rf",  # tree-sitter reads `-rf` as a second target; bash passes it to rm
    "rm -r\\\nf x",  # bash joins the words: `-rf`
    "''\\rm -rf x",  # one word to bash, two to tree-sitter
    "rm -rf x 'unterminated",
]

PROTECTED = [
    "echo evil > .git/hooks/pre-commit",
    "cat evil >> .git/config",
    "cp evil .git/hooks/post-checkout",
    "ln -sf /tmp/evil .git/hooks/pre-push",
    "tee .agentcli/config.local.toml < rules",
    "sed -i s/ask/allow/ .agentcli/config.toml",
    "mv x sub/.git/HEAD",
    "git config core.hooksPath /tmp/evil",
    "git config --global core.fsmonitor evil",
    "echo x > ./.git/info/exclude",
    "python -c 'pass' --out=.git/x",
    # A compound command's redirection is its commands' output.
    "{ echo evil; } > .git/hooks/pre-commit",
    "(echo evil) >> .git/config",
    "for i in 1; do echo evil; done > .git/hooks/pre-push",
    "f() { echo evil; } > .agentcli/config.local.toml",
]


def decide(mode: PermissionMode, command: str, workspace: Path) -> Decision:
    policy = build_policy(
        mode=mode, flag_allow=PERMISSIVE, workspace=workspace, sandbox_available=True, persist=False
    )
    verdict = policy.decide(Risk.EXECUTE, PermissionTarget("shell", command, command))
    if verdict.decision is Decision.ASK:
        assert verdict.suggested_rule is None, "no rule can allow a destructive command"
        assert "yolo" in verdict.reason
    return verdict.decision


@pytest.mark.parametrize("command", DESTRUCTIVE + PROTECTED)
def test_destructive_commands_ask_under_allow_rules(command: str, tmp_path: Path) -> None:
    for mode in ASKING_MODES:
        assert decide(mode, command, tmp_path) is Decision.ASK, mode


@pytest.mark.parametrize("command", DESTRUCTIVE[:5] + PROTECTED[:3])
def test_read_only_mode_denies_and_yolo_allows_them(command: str, tmp_path: Path) -> None:
    assert decide(PermissionMode.READ_ONLY, command, tmp_path) is Decision.DENY
    assert decide(PermissionMode.YOLO, command, tmp_path) is Decision.ALLOW


@pytest.mark.parametrize(
    "command",
    [
        "rm build/x.o",
        "rm -r build",
        "git checkout main",
        "git checkout -b feature",
        "git push origin main",
        "git branch -d merged",
        "git stash",
        "git reset HEAD~1",
        "git clean -n",
        "cat .git/config",
        "git add .agentcli/config.toml",
        "git config --get user.email",
        "ls .git/hooks",
        "echo 'rm -rf x'",
        "grep -rn 'git reset --hard' docs",
    ],
)
def test_ordinary_commands_are_not_destructive(command: str, tmp_path: Path) -> None:
    assert decide(PermissionMode.DEFAULT, command, tmp_path) is Decision.ALLOW


def test_writes_into_the_user_config_dir_ask(tmp_path: Path) -> None:
    config_dir = user_config_path().parent
    assert decide(PermissionMode.AUTO, f"echo x > {config_dir}/config.toml", tmp_path) is (
        Decision.ASK
    )
    policy = build_policy(
        mode=PermissionMode.ACCEPT_EDITS,
        flag_allow=["write(**)", f"write({config_dir}/**)"],
        workspace=tmp_path,
        sandbox_available=True,
        persist=False,
    )
    target = PermissionTarget("write", str(config_dir / "config.toml"), "write")
    assert policy.decide(Risk.WRITE, target).decision is Decision.ASK


@pytest.mark.parametrize(
    "subject",
    [".git/config", ".git/hooks/pre-commit", "vendor/lib/.git/HEAD", ".agentcli/config.toml"],
)
def test_file_tool_writes_to_protected_paths_ask(subject: str, tmp_path: Path) -> None:
    for mode in ASKING_MODES:
        policy = build_policy(
            mode=mode,
            flag_allow=["write(**)", "write(.git/**)"],
            workspace=tmp_path,
            sandbox_available=True,
            persist=False,
        )
        verdict = policy.decide(Risk.WRITE, PermissionTarget("write", subject, f"write {subject}"))
        assert verdict.decision is Decision.ASK
        assert verdict.suggested_rule is None


def test_a_symlink_into_git_is_judged_by_its_real_target(workspace: Path) -> None:
    """File tools resolve the real path before permission (as write_file and edit_file do), so
    `hooks-link/pre-commit` is a write to `.git/hooks/pre-commit`."""
    (workspace / ".git" / "hooks").mkdir(parents=True)
    os.symlink(workspace / ".git" / "hooks", workspace / "hooks-link")
    real = resolve_confined("hooks-link/pre-commit", workspace)
    subject = display_path(real, workspace)
    assert subject == ".git/hooks/pre-commit"
    policy = build_policy(
        mode=PermissionMode.ACCEPT_EDITS,
        flag_allow=["write(**)"],
        workspace=workspace,
        sandbox_available=True,
        persist=False,
    )
    verdict = policy.decide(Risk.WRITE, PermissionTarget("write", subject, "write"))
    assert verdict.decision is Decision.ASK


async def test_write_file_into_git_through_a_symlink_is_not_allowed_silently(
    workspace: Path,
) -> None:
    """The real write_file tool, the real runtime: `write(**)` in accept-edits mode, but the
    target resolves into `.git/hooks`, so it asks, and without a terminal that is a denial."""
    from agentcli.messages import ToolUseBlock
    from agentcli.permissions import NonInteractivePrompter
    from agentcli.store import MemoryJournal
    from agentcli.tools.base import ToolContext
    from agentcli.tools.runtime import ToolRuntime
    from agentcli.tools.write_file import WriteFile

    (workspace / ".git" / "hooks").mkdir(parents=True)
    os.symlink(workspace / ".git" / "hooks", workspace / "hooks-link")
    runtime = ToolRuntime(
        [WriteFile()],
        ctx=ToolContext(workspace=workspace, data_dir=workspace.parent / "data"),
        policy=build_policy(
            mode=PermissionMode.ACCEPT_EDITS,
            flag_allow=["write(**)"],
            workspace=workspace,
            sandbox_available=False,
            persist=False,
        ),
        prompter=NonInteractivePrompter(),
        journal=MemoryJournal(),
        events=lambda event: None,
    )
    calls = [
        ToolUseBlock(id=f"w{i}", name="write_file", input={"path": path, "content": "evil\n"})
        for i, path in enumerate(["hooks-link/pre-commit", ".git/hooks/post-checkout", "ok.txt"])
    ]
    records = runtime.propose(calls)
    await runtime.execute(calls, records)
    statuses = [record.status.value for record in records]
    assert statuses == ["denied", "denied", "succeeded"]
    assert "always ask" in records[0].result_text
    assert list((workspace / ".git" / "hooks").iterdir()) == []
    assert (workspace / "ok.txt").read_text() == "evil\n"
