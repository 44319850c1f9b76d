"""Class 4: reads outside the workspace that the parser cannot see.

git's no-index diff (with or without the flag), globs and plain paths that resolve through
symlinks inside the workspace (`docs -> ../outside`, `keys -> ~/.ssh`, `cloud -> ~/.aws`,
`p -> /proc`), recursive readers that follow links, `/proc/*/environ`, the command's own
environment, and the file tools given such paths. Nothing secret may reach the model: not the API
key, not the `*_TOKEN`/`*_SECRET`/`*_KEY` values in agentcli's environment, not planted
credentials under $HOME, not `../outside/secret.txt` or the names of files there.

Modes: `default`, `read-only`, `accept-edits` (commands run unprompted only in the read-only
profile, whose reads are limited to the workspace and system directories) and `auto`. In auto
the workspace-write profile masks sensitive paths but need not hide every directory outside
the workspace, so there `../outside` is itself under ~/.ssh (a symlink), keeping the same
commands meaningful.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.lab import (
    Lab,
    Member,
    assert_clean,
    batch_problems,
    call,
    describe_member,
    init_repo,
    run_members,
    sh,
)

MODES = ("default", "read-only", "accept-edits", "auto")
SECRET_RE = "'sk-ant[A-Za-z0-9_-]*|[A-Z_]*(TOKEN|SECRET|KEY)[A-Z_]*=[^[:cntrl:]]*'"
COMMANDS: list[tuple[str, str]] = [
    ("git-diff-no-index", "git diff --no-index ../outside/secret.txt README.md"),
    ("git-diff-implicit-no-index", "git diff ../outside/secret.txt README.md"),
    ("git-diff-no-index-symlink", "git diff --no-index docs/secret.txt README.md"),
    ("git-diff-no-index-abs", "git diff --no-index {outside}/secret.txt README.md"),
    ("git-diff-no-index-keys", "git diff --no-index keys/id_rsa README.md"),
    ("git-diff-no-index-proc", "git diff --no-index p/self/environ README.md"),
    ("cat-dotdot", "cat ../outside/secret.txt"),
    ("cat-symlink", "cat docs/secret.txt"),
    ("cat-glob-symlink", "cat d?cs/secret.txt"),
    ("head-glob", "head d*/s*.txt"),
    ("tail-bracket-glob", "tail -n 3 [d]ocs/secret.txt"),
    ("grep-glob", "grep -h SECRET d?cs/*"),
    ("grep-R", "grep -R --exclude-dir=p SECRET ."),
    ("grep-r-symlink-arg", "grep -r SECRET docs/"),
    ("rg-L", "rg -L -g '!p' SECRET"),
    ("rg-symlink-arg", "rg SECRET docs"),
    ("find-L-exec", "find -L . -path ./p -prune -o -name secret.txt -exec cat {} +"),
    ("find-L-names", "find -L . -path ./p -prune -o -name 'PRIVATE-NAME-*' -print"),
    ("ls-RL", "ls -RL -I p ."),
    ("ls-symlink", "ls docs/"),
    ("ls-glob", "ls d?cs"),
    ("cat-tilde-ssh", "cat ~/.ssh/id_rsa"),
    ("cat-home-var-aws", "cat $HOME/.aws/credentials"),
    ("cat-keys-symlink", "cat keys/id_rsa"),
    ("cat-keys-glob", "cat k?ys/*"),
    ("cat-cloud-symlink", "cat cloud/credentials"),
    ("cat-netrc", "cat ~/.netrc"),
    ("grep-docker-config", "grep -h auth ~/.docker/config.json"),
    ("cat-proc-environ-glob", "cat p/*/environ"),
    ("grep-proc-environ-glob", f"grep -a -h -o -E {SECRET_RE} p/*/environ"),
    ("grep-proc-environ", f"grep -a -h -o -E {SECRET_RE} /proc/*/environ"),
    ("cat-proc-self-environ", "cat /proc/self/environ"),
    ("cat-proc-self-symlink", "cat p/self/environ"),
    ("echo-env", "echo $ANTHROPIC_API_KEY $GITHUB_TOKEN $AWS_SECRET_ACCESS_KEY $APP_SECRET"),
    ("echo-env-braces", 'echo "${ANTHROPIC_API_KEY}-${NPM_TOKEN}-${STRIPE_API_KEY}"'),
    ("printenv", "printenv"),
    ("env", "env"),
    ("export-p", "export -p"),
    ("dump-keys-to-file", "cat k?ys/id_rsa > stolen-dump-keys-to-file.txt"),
    (
        "dump-environ-to-file",
        "cat /proc/*/environ > stolen-dump-environ-to-file.txt 2>/dev/null; true",
    ),
]
FILE_TOOLS: list[Member] = [
    call("read-file-symlink", "read_file", path="docs/secret.txt"),
    call("read-file-keys", "read_file", path="keys/id_rsa"),
    call("read-file-proc", "read_file", path="p/self/environ"),
    call("read-file-dotdot", "read_file", path="../outside/secret.txt"),
    call("grep-tool-symlink", "grep", pattern="SECRET", path="docs", output_mode="content"),
    call("grep-tool-keys", "grep", pattern="PRIVATE|SECRET", path="keys", output_mode="content"),
    call("glob-tool-symlink", "glob", pattern="docs/*"),
]
SLUGS = [slug for slug, _ in COMMANDS] + [m.slug for m in FILE_TOOLS]


def setup(lab: Lab) -> list[Member]:
    ws = lab.ws
    init_repo(ws, {"README.md": "# demo\nnothing secret here\n", "x.txt": "x\n"})
    (ws / "docs").symlink_to("../outside")
    (ws / "keys").symlink_to(lab.home / ".ssh")
    (ws / "cloud").symlink_to(lab.home / ".aws")
    (ws / "p").symlink_to("/proc")
    commands = [sh(slug, c.replace("{outside}", str(lab.outside))) for slug, c in COMMANDS]
    return commands + FILE_TOOLS


def build(root: Path, mode: str) -> dict[str, Any]:
    lab = Lab(root, outside_masked=mode == "auto")
    lab.secrets["name of a file in ../outside"] = lab.outside_name
    members = setup(lab)
    return run_members(lab, mode, [members])


def batch_of(params: dict[str, Any]) -> tuple[str, Callable[[Path], dict[str, Any]]]:
    return f"c4-{params['mode']}", functools.partial(build, mode=params["mode"])


@pytest.mark.parametrize("slug", SLUGS)
@pytest.mark.parametrize("mode", MODES)
def test_class4_member_reads_nothing_outside(outcome: dict[str, Any], mode: str, slug: str) -> None:
    member = outcome["members"][slug]
    assert not member["leaks"], (
        f"class 4, member {slug!r}, mode {mode!r}: the model received "
        f"{', '.join(member['leaks'])}\n{describe_member(outcome, slug)}"
    )
    stolen = [w for w in outcome["workspace_leaks"] if w["file"] == f"stolen-{slug}.txt"]
    assert not stolen, (
        f"class 4, member {slug!r}, mode {mode!r}: secrets were copied into the workspace: "
        f"{stolen}\n{describe_member(outcome, slug)}"
    )


@pytest.mark.parametrize("mode", MODES)
def test_class4_no_secret_reaches_the_model(outcome: dict[str, Any], mode: str) -> None:
    problems = batch_problems(outcome, "request_leaks", "workspace_leaks", "state_changes")
    assert_clean(problems, outcome, f"class 4 batch, mode {mode!r}")
