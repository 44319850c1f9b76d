"""A repository's own hooks: they run only in a trusted workspace, only once the user approved
that exact set (definitions and the scripts they name), only in the OS sandbox, and never
silently not: every state (untrusted, trusted-unapproved, approved, changed after approval) is
named at the start with the command that would make the hook run."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from agentcli.config import load_settings
from agentcli.hooks.approval import approved_digest, store_path
from agentcli.permissions import Decision, PermissionMode
from agentcli.permissions.setup import build_permissions
from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text, tool_use
from agentcli.trust import set_trusted
from agentcli.vocabulary import PermissionTarget, Risk
from tests.hooks.conftest import (
    cli,
    hook_table,
    project_hooks,
    python_hook,
    records,
    requires_sandbox,
    run_json,
    script,
    trust_and_approve,
    user_hooks,
)

LOG = ".hooklog.jsonl"
"""Where the repository's hook logs (in the workspace: a sandboxed hook can write nowhere else)."""


def repository_hook(workspace: Path, event: str = "UserPromptSubmit", **handler: object) -> Path:
    """A Python hook in the repository that logs its input into the workspace and says so."""
    path = python_hook(
        workspace / ".agentcli" / "hooks" / "log.py",
        "data['transcript'] = open(data['transcript_path']).read() if data['transcript_path'] "
        "else None\n"
        f"open(os.path.join(os.environ['AGENTCLI_PROJECT_DIR'], {LOG!r}), 'a')"
        ".write(json.dumps(data) + '\\n')\n"
        "print('the repository hook ran')\n",
    )
    project_hooks(workspace, hook_table(event, ".agentcli/hooks/log.py", **handler))
    return path


def ran(workspace: Path) -> list[dict[str, object]]:
    return records(workspace / LOG)


def test_an_untrusted_workspaces_hooks_do_not_run_and_the_notice_says_how(
    server: FakeMessagesServer, workspace: Path
) -> None:
    repository_hook(workspace)
    server.push(stream_message([text("ok")]))
    proc, _result = run_json(workspace, server, "go")
    assert proc.returncode == 0
    assert ran(workspace) == []
    assert "this workspace is not trusted, so its 1 hook does not run" in proc.stderr
    assert "UserPromptSubmit `.agentcli/hooks/log.py` (project)" in proc.stderr
    assert "`agentcli trust`, then review them with `agentcli hooks`" in proc.stderr
    assert "agentcli hooks approve" in proc.stderr
    listing = cli("hooks", server=None, cwd=workspace).stdout
    assert "not run: workspace not trusted" in listing


def test_trusted_but_not_approved_hooks_do_not_run_and_a_run_never_approves(
    server: FakeMessagesServer, workspace: Path
) -> None:
    repository_hook(workspace)
    set_trusted(workspace, True)
    server.push(stream_message([text("ok")]), stream_message([text("ok")]))
    for _ in range(2):  # no run approves anything, however often it runs
        proc, _result = run_json(workspace, server, "go")
        assert ran(workspace) == []
        assert "this repository's 1 hook does not run: you have not approved them" in proc.stderr
    assert not store_path().exists()
    assert "not run: not approved" in cli("hooks", server=None, cwd=workspace).stdout


@requires_sandbox
def test_approved_hooks_run_in_the_sandbox(server: FakeMessagesServer, workspace: Path) -> None:
    repository_hook(workspace)
    trust_and_approve(workspace)
    approved = approved_digest(workspace)
    assert approved is not None and len(approved) == 64
    assert stat.S_IMODE(store_path().stat().st_mode) == 0o600
    listing = cli("hooks", server=None, cwd=workspace).stdout
    assert "project (" in listing and "sandboxed: runs" in listing
    assert f"(sha256 {approved[:16]}…) are approved" in listing
    server.push(stream_message([text("ok")]), stream_message([text("again")]))
    proc, _result = run_json(workspace, server, "go")
    assert "does not run" not in proc.stderr
    assert (
        "the repository hook ran" in server.requests[0].body["messages"][-1]["content"][1]["text"]
    )
    run_json(workspace, server, "--continue", "more")
    first, second = ran(workspace)
    assert first["prompt"] == "go" and second["prompt"] == "more"
    # A sandboxed hook gets the transcript where it can read it: the sandbox's temp dir.
    assert "agentcli-session-" in str(second["transcript_path"])
    lines = [json.loads(line) for line in str(second["transcript"]).splitlines()]
    assert [(line["type"], line["message"]["content"][0]["text"]) for line in lines] == [
        ("user", "go"),
        ("assistant", "ok"),
    ]


@requires_sandbox
@pytest.mark.parametrize("change", ["definition", "script"])
def test_a_set_changed_after_approval_does_not_run_until_approved_again(
    server: FakeMessagesServer, workspace: Path, change: str
) -> None:
    hook = repository_hook(workspace)
    trust_and_approve(workspace)
    before = approved_digest(workspace)
    if change == "definition":
        project_hooks(
            workspace, hook_table("UserPromptSubmit", ".agentcli/hooks/log.py", timeout=5)
        )
    else:
        hook.write_text(hook.read_text() + "print('and something new')\n")
    server.push(stream_message([text("ok")]), stream_message([text("ok")]))
    proc, _result = run_json(workspace, server, "go")
    assert ran(workspace) == []
    assert "this repository's hooks changed since you approved them" in proc.stderr
    assert "not run: changed since approved" in cli("hooks", server=None, cwd=workspace).stdout
    approved = cli("hooks", "approve", server=None, cwd=workspace)
    assert "approved 1 hook(s)" in approved.stdout
    assert approved_digest(workspace) != before
    proc, _result = run_json(workspace, server, "go")
    assert len(ran(workspace)) == 1


@requires_sandbox
def test_a_repository_hook_cannot_write_outside_the_workspace_nor_opt_out_of_the_sandbox(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    script(
        workspace / "scripts" / "escape.sh",
        f"#!/bin/bash\ntouch {outside}/pwned 2>/dev/null; echo $? > attempt.txt\n",
    )
    project_hooks(workspace, hook_table("UserPromptSubmit", "scripts/escape.sh", sandbox=False))
    trust_and_approve(workspace)
    server.push(stream_message([text("ok")]))
    proc, _result = run_json(workspace, server, "go")
    assert "says `sandbox = false`: a repository's hooks always run in the sandbox" in proc.stderr
    assert (workspace / "attempt.txt").read_text().strip() != "0"
    assert not (outside / "pwned").exists()
    listing = cli("hooks", server=None, cwd=workspace).stdout
    assert "scripts/escape.sh" in listing and "sandboxed" in listing


def test_a_user_hook_runs_unconfined_unless_it_asks_for_the_sandbox(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    free = script(tmp_path / "free.sh", f"#!/bin/bash\ntouch {outside}/free\n")
    boxed = f"touch {outside}/boxed"
    user_hooks(
        hook_table("UserPromptSubmit", str(free)),
        hook_table("UserPromptSubmit", boxed, sandbox=True),
    )
    server.push(stream_message([text("ok")]))
    run_json(workspace, server, "go")
    assert (outside / "free").exists()
    from tests.hooks.conftest import sandbox_works

    if sandbox_works():
        assert not (outside / "boxed").exists()


def test_the_model_cannot_approve_hooks_or_change_the_scripts_they_run(workspace: Path) -> None:
    script(workspace / "scripts" / "check.sh", "#!/bin/bash\nexit 0\n")
    user_hooks(hook_table("PostToolUse", "scripts/check.sh"))
    set_trusted(workspace, True)
    settings = load_settings(workspace).model_copy(update={"permission_mode": PermissionMode.AUTO})
    policy = build_permissions(settings=settings, workspace=workspace).policy

    def decide(rule_class: str, subject: str) -> Decision:
        risk = Risk.EXECUTE if rule_class == "shell" else Risk.WRITE
        return policy.decide(risk, PermissionTarget(rule_class, subject, subject)).decision

    assert decide("write", "scripts/check.sh") is Decision.ASK
    assert decide("write", "scripts/other.sh") is Decision.ALLOW  # auto mode writes
    assert decide("shell", "sed -i s/0/1/ scripts/check.sh") is Decision.ASK
    assert decide("shell", "agentcli hooks approve") is Decision.ASK
    assert decide("shell", "python -m agentcli hooks approve") is Decision.ASK
    assert decide("shell", "touch scripts/other.sh") is Decision.ALLOW
    assert decide("write", ".agentcli/config.toml") is Decision.ASK  # where hooks are defined


@requires_sandbox
def test_sandboxed_commands_cannot_change_a_hooks_script(
    server: FakeMessagesServer, workspace: Path
) -> None:
    check = script(workspace / "scripts" / "check.sh", "#!/bin/bash\nexit 0\n")
    user_hooks(hook_table("PostToolUse", "scripts/check.sh"))
    # A write the command's words do not show: allowed unasked, but the sandbox keeps the
    # script as it is.
    sneaky = "python3 -c \"open('scripts/check.sh', 'a').write('exit 3')\""
    server.push(
        stream_message([tool_use("shell", {"command": sneaky}, id="s1")]),
        stream_message([text("ok")]),
    )
    _proc, result = run_json(workspace, server, "go", "--permission-mode", "auto")
    assert result["tool_calls"][0]["status"] == "succeeded"  # it ran (and failed in there)
    assert (
        "Read-only file system" in server.requests[1].body["messages"][-1]["content"][0]["content"]
    )
    assert check.read_text() == "#!/bin/bash\nexit 0\n"


def test_approving_in_an_untrusted_workspace_says_they_run_once_trusted(workspace: Path) -> None:
    repository_hook(workspace, "Stop")
    approved = cli("hooks", "approve", server=None, cwd=workspace)
    assert approved.returncode == 0
    assert "approved 1 hook(s)" in approved.stdout and "not trusted" in approved.stdout
    assert approved_digest(workspace) is not None
    data = json.loads(store_path().read_text())
    assert list(data["workspaces"]) == [str(workspace.resolve())]


def test_no_hooks_to_approve(workspace: Path) -> None:
    assert "no hooks to approve" in cli("hooks", "approve", server=None, cwd=workspace).stdout
    assert "no hooks are configured" in cli("hooks", server=None, cwd=workspace).stdout


def test_a_local_config_hook_is_the_repositorys_too(
    server: FakeMessagesServer, workspace: Path
) -> None:
    python_hook(workspace / "hook.py", "print('x')\n")
    project_hooks(workspace, hook_table("Stop", "hook.py"), local=True)
    set_trusted(workspace, True)
    listing = cli("hooks", server=None, cwd=workspace).stdout
    assert "local (" in listing and "not run: not approved" in listing


def test_what_an_untrusted_repository_holds_that_is_no_hook_is_named_too(workspace: Path) -> None:
    project_hooks(workspace, '[[hooks.Stop]]\nhooks = [{ type = "command", comand = "x" }]\n')
    listing = cli("hooks", server=None, cwd=workspace).stdout
    assert "not a hook: Stop in" in listing and "`hooks.0.command`: Field required" in listing
