"""`agentcli run --commit` and trust: the repository's own commit hooks run in a workspace the
user trusts (`--trust-project` here, `agentcli trust` for good) and not in one they have not,
where a notice says so; a hook that refuses fails the run and leaves the index as it was.
`[git] commit = true` in the user's config commits by default; a repository's own config may
not turn it on."""

from __future__ import annotations

import json
from pathlib import Path

from agentcli.paths import user_config_path
from agentcli.testing.fake_api import FakeMessagesServer
from tests.test_cli_run import result_of
from tests.usergit.conftest import git, install_hook
from tests.usergit.test_run_git import head, run, run_json, write_then_say


def test_an_untrusted_workspace_commits_without_its_hooks_and_says_so(
    server: FakeMessagesServer, repo: Path
) -> None:
    marker = repo.parent / "pre-commit-ran"
    install_hook(repo, "pre-commit", f"touch {marker}")
    write_then_say(server)
    proc = run(server, repo, "--commit", "--accept", "true")
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == ["new.txt"]
    assert (
        "agentcli: this workspace is not trusted: its git pre-commit hook did not run "
        "(`agentcli trust` lets them run)"
    ) in proc.stderr
    assert f"agentcli: committed {head(repo)[:12]} on main" in proc.stderr


def test_a_trusted_workspace_runs_its_hooks(server: FakeMessagesServer, repo: Path) -> None:
    marker = repo.parent / "pre-commit-saw"
    install_hook(repo, "pre-commit", f"git diff --cached --name-only > {marker}")
    write_then_say(server)
    proc = run(server, repo, "--commit", "--accept", "true", "--trust-project")
    assert proc.returncode == 0, proc.stderr
    assert marker.read_text().split() == ["new.txt"]
    assert "not trusted" not in proc.stderr


def test_a_hook_that_refuses_fails_the_run_and_leaves_the_index(
    server: FakeMessagesServer, repo: Path
) -> None:
    install_hook(repo, "pre-commit", "echo 'black would reformat new.txt' >&2; exit 1")
    (repo / "a.txt").write_text("staged by the user\n")
    git(repo, "add", "a.txt")
    index = (repo / ".git" / "index").read_bytes()
    write_then_say(server)
    proc = run(server, repo, "--commit", "--accept", "true", "--trust-project",
               "--output-format", "json")  # fmt: skip
    result = result_of(proc)
    assert proc.returncode == 1
    assert result["task_state"] == "succeeded" and result["subtype"] == "error_commit_failed"
    assert result["is_error"] is True and result["commit"] is None
    assert "black would reformat new.txt" in result["commit_skipped"]
    assert (repo / ".git" / "index").read_bytes() == index
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "1"
    assert "agentcli: not committed: git commit failed" in proc.stderr


def test_git_commit_in_the_users_config_is_the_default(
    server: FakeMessagesServer, repo: Path
) -> None:
    config = user_config_path()
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[git]\ncommit = true\n")
    write_then_say(server)
    code, result = run_json(server, repo, "--accept", "true")
    assert code == 0 and result["commit"]["sha"] == head(repo)
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    (repo / "new.txt").unlink(missing_ok=True)
    write_then_say(server)
    code, result = run_json(server, repo, "--accept", "true", "--no-commit")
    assert code == 0 and (result["commit"], result["commit_skipped"]) == (None, None)
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "1"


def test_an_untrusted_repository_cannot_turn_commits_on(
    server: FakeMessagesServer, repo: Path
) -> None:
    (repo / ".agentcli").mkdir()
    (repo / ".agentcli" / "config.toml").write_text("[git]\ncommit = true\n")
    write_then_say(server)
    proc = run(server, repo, "--accept", "true", "--output-format", "json")
    result = json.loads(proc.stdout)
    assert proc.returncode == 0 and result["commit"] is None and result["commit_skipped"] is None
    assert "git.commit = true" in proc.stderr  # the notice of what was ignored
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "1"
