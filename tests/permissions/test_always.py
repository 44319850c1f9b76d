""" "Always" answers: the narrowest rule that matches what the model issues next time, saved to
`.agentcli/config.local.toml` without disturbing what is already there."""

from __future__ import annotations

import multiprocessing
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcli.config import load_settings
from agentcli.errors import UsageError
from agentcli.permissions import Decision, PermissionMode
from agentcli.permissions.persist import append_allow_rule
from agentcli.permissions.rules import command_pattern_matches
from agentcli.permissions.setup import build_policy, settings_rules
from agentcli.permissions.shell import SimpleCommand, parse_command
from agentcli.permissions.suggest import command_rule, path_rule
from agentcli.tools.base import PermissionTarget, Risk
from agentcli.trust import set_trusted


@pytest.mark.parametrize(
    ("command", "rule", "next_time"),
    [
        ("pytest tests/test_a.py -q", "shell(pytest *)", "pytest -x tests/test_b.py"),
        ("git fetch origin", "shell(git fetch *)", "git fetch --all --prune"),
        ("git commit -m 'fix the parser'", "shell(git commit *)", "git commit -am other"),
        ("npm run test -- --watch=false", "shell(npm run test *)", "npm run test"),
        ("npm install", "shell(npm install *)", "npm install left-pad"),
        ("python -m pytest -q", "shell(python -m pytest *)", "python -m pytest tests/x.py"),
        (
            "python scripts/gen.py --out x",
            "shell(python scripts/gen.py *)",
            "python scripts/gen.py",
        ),
        ("uv run pytest -k slow", "shell(uv run pytest *)", "uv run pytest"),
        ("cargo test --all", "shell(cargo test *)", "cargo test parser::"),
        ("make test", "shell(make test *)", "make test V=1"),
        ("./scripts/check.sh --fast", "shell(./scripts/check.sh *)", "./scripts/check.sh"),
        ("CI=1 npm test", "shell(CI=1 npm test *)", "CI=1 npm test -- --ci"),
        ("npx prettier --check .", "shell(npx prettier *)", "npx prettier --write src"),
        ("mypy agentcli", "shell(mypy *)", "mypy --strict tests"),
    ],
)
def test_the_rule_is_the_command_prefix_and_matches_next_time(
    command: str, rule: str, next_time: str, tmp_path: Path
) -> None:
    policy = build_policy(
        mode=PermissionMode.DEFAULT, workspace=tmp_path, sandbox_available=True, persist=False
    )
    target = PermissionTarget("shell", command, command)
    verdict = policy.decide(Risk.EXECUTE, target)
    assert verdict.decision is Decision.ASK
    assert verdict.suggested_rule == rule
    policy.remember(rule)
    again = policy.decide(Risk.EXECUTE, PermissionTarget("shell", next_time, next_time))
    assert again.decision is Decision.ALLOW, again.reason
    assert policy.decide(Risk.EXECUTE, target).decision is Decision.ALLOW


@pytest.mark.parametrize(
    ("subject", "rule"),
    [
        ("src/app/models.py", "write(src/app/**)"),
        ("README.md", "write(README.md)"),
        ("./docs/index.md", "write(docs/**)"),
    ],
)
def test_write_rules_name_the_directory(subject: str, rule: str, tmp_path: Path) -> None:
    assert path_rule("write", subject) == rule
    policy = build_policy(
        mode=PermissionMode.DEFAULT, workspace=tmp_path, sandbox_available=True, persist=False
    )
    verdict = policy.decide(Risk.WRITE, PermissionTarget("write", subject, "write"))
    assert verdict.suggested_rule == rule


def test_compound_commands_remember_every_missing_part(tmp_path: Path) -> None:
    policy = build_policy(
        mode=PermissionMode.DEFAULT, workspace=tmp_path, sandbox_available=True, persist=True
    )
    command = "npm ci && npm run build && ls dist"
    verdict = policy.decide(Risk.EXECUTE, PermissionTarget("shell", command, command))
    assert verdict.suggested_rule == "shell(npm ci *)"
    assert "shell(npm run build *)" in verdict.reason
    policy.remember(verdict.suggested_rule)
    assert policy.decide(Risk.EXECUTE, PermissionTarget("shell", command, command)).decision is (
        Decision.ALLOW
    )
    saved = load_settings(tmp_path).permissions.allow
    assert saved == ["shell(npm ci *)", "shell(npm run build *)"]


def test_always_persists_so_the_next_session_does_not_ask(tmp_path: Path) -> None:
    first = build_policy(mode=PermissionMode.DEFAULT, workspace=tmp_path, sandbox_available=True)
    first.remember("shell(pytest *)")
    first.remember("write(src/**)")
    second = build_policy(
        mode=PermissionMode.DEFAULT,
        rules=settings_rules(load_settings(tmp_path)),
        workspace=tmp_path,
        sandbox_available=True,
    )
    shell = PermissionTarget("shell", "pytest -q", "run pytest")
    write = PermissionTarget("write", "src/a/b.py", "write")
    assert second.decide(Risk.EXECUTE, shell).decision is Decision.ALLOW
    assert second.decide(Risk.WRITE, write).decision is Decision.ALLOW


def test_a_rule_that_cannot_be_saved_still_holds_for_the_session(tmp_path: Path) -> None:
    set_trusted(tmp_path, True)  # "always" answers go to config.local.toml
    (tmp_path / ".agentcli").mkdir()
    (tmp_path / ".agentcli" / "config.local.toml").write_text("allow = [\n")  # broken TOML
    policy = build_policy(mode=PermissionMode.DEFAULT, workspace=tmp_path, sandbox_available=True)
    policy.remember("shell(make *)")
    target = PermissionTarget("shell", "make all", "run")
    assert policy.decide(Risk.EXECUTE, target).decision is Decision.ALLOW
    assert any("shell(make *)" in notice for notice in policy.notices)
    assert (tmp_path / ".agentcli" / "config.local.toml").read_text() == "allow = [\n"


EXISTING = {
    "no file": None,
    "empty": "",
    "comments and tables": '# my settings\nmodel = "x"\n\n[acceptance]\ncommands = ["pytest"]\n',
    "inline allow": 'allow = ["shell(ls *)"]  # keep me\nmodel = "x"\n',
    "empty allow": "allow = []\n",
    "multi-line allow": (
        'allow = [\n  "shell(a *)", # a comment with ] and "quotes"\n  "write(x/**)",\n]\n'
        "[acceptance]\ncommands = []\n"
    ),
    "tricky strings": "allow = ['''x]''', \"y\\\"]\"]\n",
    "permissions table": '[permissions]\ndeny = ["shell(curl *)"]\nallow = ["read(**)"]\n',
    "permissions without allow": '[permissions]\ndeny = ["shell(curl *)"]\n',
    "dotted permissions.allow": 'permissions.allow = ["read(**)"]  # dotted\n[sandbox]\n',
    "inline permissions table": 'permissions = { allow = ["read(**)"] }  # inline\n',
    "array of tables": 'model = "x"\n[[servers]]\nname = "a"\n',
}


@pytest.mark.parametrize("name", list(EXISTING))
def test_appending_keeps_existing_content(name: str, tmp_path: Path) -> None:
    path = tmp_path / ".agentcli" / "config.local.toml"
    before = EXISTING[name]
    if before is not None:
        path.parent.mkdir()
        path.write_text(before)
        old = tomllib.loads(before)
    else:
        old = {}
    assert append_allow_rule(path, "shell(pytest *)")
    assert not append_allow_rule(path, "shell(pytest *)")  # already there: unchanged
    text = path.read_text()
    data = tomllib.loads(text)
    allow = [*data.get("allow", []), *data.get("permissions", {}).get("allow", [])]
    assert allow.count("shell(pytest *)") == 1
    old_allow = [*old.get("allow", []), *old.get("permissions", {}).get("allow", [])]
    assert [r for r in allow if r != "shell(pytest *)"] == old_allow
    for key, value in old.items():
        if key not in ("allow", "permissions"):
            assert data[key] == value
    if before and "#" in before:
        assert before.split("#", 1)[1].split("\n", 1)[0] in text  # comments survive


def test_a_rule_with_quotes_and_backslashes_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "config.local.toml"
    rule = "shell(echo \"a\\b\" 'c' *)"
    append_allow_rule(path, rule)
    assert tomllib.loads(path.read_text())["allow"] == [rule]


def test_broken_toml_is_reported_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "config.local.toml"
    path.write_text("allow = [")
    with pytest.raises(UsageError, match="not valid TOML"):
        append_allow_rule(path, "shell(x *)")
    assert path.read_text() == "allow = ["


def _append_many(path: str, prefix: str) -> None:
    for index in range(15):
        append_allow_rule(Path(path), f"shell({prefix}{index} *)")


def test_concurrent_sessions_lose_no_rule(tmp_path: Path) -> None:
    path = tmp_path / ".agentcli" / "config.local.toml"
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_append_many, args=(str(path), p)) for p in "ab"]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    allow = tomllib.loads(path.read_text())["allow"]
    assert sorted(allow) == sorted(f"shell({p}{i} *)" for p in "ab" for i in range(15))


_WORD = st.text(alphabet=st.sampled_from(list("abz019._-/=:@+,~ *'\"$")), min_size=1, max_size=8)


@settings(max_examples=300, deadline=None)
@given(st.lists(_WORD, min_size=1, max_size=6))
def test_a_suggested_rule_always_matches_the_command_it_came_from(words: list[str]) -> None:
    part = SimpleCommand(assignments=(), argv=tuple(words))
    rule = command_rule(part)
    if rule is not None:
        assert rule.startswith("shell(") and rule.endswith(" *)")
        assert command_pattern_matches(rule[len("shell(") : -1], part.text)
        assert "'" not in rule  # it goes into --allow '…' hints unchanged


def test_suggestions_come_from_the_parsed_words() -> None:
    parsed = parse_command("pytest 'tests/test x.py' -q")
    assert command_rule(parsed.parts[0]) == "shell(pytest *)"


def git_status(repo: Path) -> str:
    import subprocess

    done = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


@pytest.mark.parametrize("linked_worktree", [False, True], ids=["repository", "linked worktree"])
def test_the_saved_rules_file_is_ignored_by_the_repository(
    tmp_path: Path, linked_worktree: bool
) -> None:
    """`.agentcli/config.local.toml` is personal: `git status` offered it for a commit."""
    import subprocess

    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "init"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", *args], cwd=repo)
    workspace = repo
    if linked_worktree:
        workspace = tmp_path / "wt"
        subprocess.run(["git", "worktree", "add", "-q", str(workspace)], cwd=repo, check=True)
    set_trusted(workspace, True)
    policy = build_policy(mode=PermissionMode.DEFAULT, workspace=workspace, sandbox_available=True)
    policy.remember("shell(make *)")
    policy.remember("shell(pytest *)")
    assert (workspace / ".agentcli" / "config.local.toml").is_file()
    assert git_status(workspace) == ""
    exclude = (repo / ".git" / "info" / "exclude").read_text()
    assert exclude.count("/.agentcli/config.local.toml") == 1  # once, however many answers
    shown = {rule.text: rule.source for rule in policy.rules_view().allow}
    assert shown["shell(make *)"] == str(workspace / ".agentcli" / "config.local.toml")


def test_rules_kept_for_an_untrusted_workspace_touch_no_repository(tmp_path: Path) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    before = (tmp_path / ".git" / "info" / "exclude").read_text()
    policy = build_policy(mode=PermissionMode.DEFAULT, workspace=tmp_path, sandbox_available=True)
    policy.remember("shell(make *)")
    assert (tmp_path / ".git" / "info" / "exclude").read_text() == before
    assert not (tmp_path / ".agentcli" / "config.local.toml").exists()
