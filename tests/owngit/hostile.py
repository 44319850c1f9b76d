"""A hostile repository and a hostile git environment (the fixtures are in `conftest`): every
program git could be told to run is a script that leaves a marker file outside the repository.

`hostile_repo` is a committed repository whose `.git/config` sets every key of SECURITY-NOTES §4
that names a program (plus hooks in `.git/hooks` and in `core.hooksPath`, `.gitattributes` and
`info/attributes` that select filter/diff/merge drivers, an `include.path` and an `includeIf` that
pull in more of them from files in the work tree). The autouse `hostile_environment` also points
the user's environment at such programs (GIT_CONFIG_COUNT/KEY/VALUE, GIT_CONFIG_PARAMETERS,
GIT_EXTERNAL_DIFF, GIT_SSH_COMMAND, GIT_DIR, GIT_INDEX_FILE, a global config...). Tests assert
that `markers` stays empty while agentcli snapshots, checkpoints and undoes.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentcli.session.options import SessionOptions
from agentcli.tasks import TaskResult
from agentcli.testing import ScriptedModel, respond, text
from agentcli.ui.run import open_run_session
from agentcli.ui.sessions import undo_command

REAL_GIT = shutil.which("git") or "git"
"""Resolved before any test puts a fake `git` on PATH."""

HOOKS = (
    "applypatch-msg pre-applypatch post-applypatch pre-commit pre-merge-commit "
    "prepare-commit-msg commit-msg post-commit pre-rebase post-checkout post-merge pre-push "
    "pre-receive update proc-receive post-receive post-update reference-transaction "
    "push-to-checkout pre-auto-gc post-rewrite sendemail-validate fsmonitor-watchman "
    "p4-changelist p4-prepare-changelist p4-post-changelist p4-pre-submit post-index-change"
).split()

PROGRAM_KEYS = {
    "core.fsmonitor": "fsmonitor",
    "core.pager": "core-pager",
    "core.editor": "core-editor",
    "core.sshCommand": "ssh-command",
    "core.gitProxy": "git-proxy",
    "core.askPass": "askpass",
    "core.alternateRefsCommand": "alternate-refs",
    "sequence.editor": "sequence-editor",
    "pager.status": "pager-status",
    "pager.diff": "pager-diff",
    "pager.log": "pager-log",
    "pager.show": "pager-show",
    "diff.external": "diff-external",
    "diff.x.textconv": "diff-textconv",
    "diff.x.command": "diff-command",
    "filter.x.clean": "filter-clean",
    "filter.x.smudge": "filter-smudge",
    "filter.p.process": "filter-process",
    "merge.x.driver": "merge-driver",
    "credential.helper": "credential-helper",
    "gpg.program": "gpg-program",
    "gpg.ssh.program": "gpg-ssh-program",
    "gpg.x509.program": "gpg-x509-program",
    "uploadpack.packObjectsHook": "pack-objects-hook",
    "hook.x.command": "hook-command",
    "remote.origin.uploadpack": "remote-uploadpack",
    "remote.origin.receivepack": "remote-receivepack",
    "submodule.s.update": "submodule-update",
    "alias.st": "alias-st",
    "alias.snap": "alias-snap",
}
"""Config key -> the marker its program leaves."""

PLAIN_KEYS = {
    "filter.x.required": "true",
    "filter.p.required": "true",
    "commit.gpgSign": "true",
    "tag.gpgSign": "true",
    "hook.x.event": "pre-commit",
    "remote.origin.url": "ext::sh -c false",
    "protocol.allow": "always",
    "core.untrackedCache": "true",
    "core.splitIndex": "false",
}


@dataclass(frozen=True)
class Hostile:
    repo: Path
    markers: Path
    bin: Path

    def fired(self) -> list[str]:
        return sorted(p.name for p in self.markers.iterdir())


def plain_git(
    cwd: Path,
    *args: str,
    check: bool = True,
    stdin: str | None = None,
    env: dict[str, str] | None = None,
) -> str:
    """The real git with the test's own identity and none of the hostile environment (for
    setting repositories up, before they are armed, and for inspecting them); `env` adds
    variables of the test's own."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    clean.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL="/dev/null",
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
        **(env or {}),
    )
    done = subprocess.run(
        [REAL_GIT, *args], cwd=cwd, env=clean, input=stdin, capture_output=True, text=True
    )
    if check and done.returncode != 0:
        raise AssertionError(f"git {args}: {done.stderr}")
    return done.stdout


def marker_script(bin_dir: Path, markers: Path, name: str, body: str = "") -> Path:
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\ntouch '{markers / name}'\n{body}")
    path.chmod(0o755)
    return path


def program(bin_dir: Path, markers: Path, name: str) -> str:
    # Filters and textconv pass content through, so plain git still works with them.
    body = "exec cat\n" if name.startswith(("filter-clean", "filter-smudge", "diff-text")) else ""
    return str(marker_script(bin_dir, markers, name, body))


def arm(repo: Path, git_dir: Path, bin_dir: Path, markers: Path, tag: str = "") -> None:
    """Make `repo` (whose git dir is `git_dir`, config in `git_dir`/config) hostile."""
    config = git_dir / "config"
    for key, name in PROGRAM_KEYS.items():
        value = program(bin_dir, markers, f"{tag}{name}")
        if key.startswith(("alias.", "credential.", "submodule.")):
            value = f"!{value}"
        plain_git(repo, "config", "--file", str(config), key, value)
    for key, value in PLAIN_KEYS.items():
        plain_git(repo, "config", "--file", str(config), key, value)
    hooks_path = bin_dir / f"{tag}hooks-path"
    for hooks, prefix in ((git_dir / "hooks", "hook-"), (hooks_path, "hookspath-")):
        hooks.mkdir(exist_ok=True)
        for hook in HOOKS:
            marker_script(hooks, markers, f"{tag}{prefix}{hook}").rename(hooks / hook)
    plain_git(repo, "config", "--file", str(config), "core.hooksPath", str(hooks_path))
    # Includes of work-tree files (paths relative to the config file's directory).
    included = repo / f"{tag}included.cfg"
    included.write_text(
        f"[core]\n\tfsmonitor = {program(bin_dir, markers, f'{tag}included-fsmonitor')}\n"
        f"[diff]\n\texternal = {program(bin_dir, markers, f'{tag}included-diff-external')}\n"
    )
    conditional = repo / f"{tag}included-if.cfg"
    conditional.write_text(
        f"[core]\n\tpager = {program(bin_dir, markers, f'{tag}includeif-pager')}\n"
        f'[filter "x"]\n\tclean = {program(bin_dir, markers, f"{tag}includeif-filter-clean")}\n'
    )
    plain_git(repo, "config", "--file", str(config), "include.path", str(included))
    plain_git(
        repo, "config", "--file", str(config), f"includeIf.gitdir:{git_dir}/.path", str(conditional)
    )
    (git_dir / "info").mkdir(exist_ok=True)
    (git_dir / "info" / "attributes").write_text("* filter=x diff=x merge=x\n")


def build_hostile(root: Path, markers: Path, bin_dir: Path) -> Path:
    repo = root
    repo.mkdir(parents=True, exist_ok=True)
    plain_git(repo, "init", "-q", "-b", "main")
    (repo / ".gitattributes").write_text("* filter=x diff=x merge=x\n*.p filter=p\n")
    (repo / "tracked.txt").write_text("tracked v1\n")
    (repo / "edit.txt").write_text("v1\n")
    (repo / "gone.txt").write_text("bye\n")
    (repo / "data.p").write_text("processed\n")
    (repo / "sub").mkdir()
    (repo / "sub" / "inner.txt").write_text("inner\n")
    (repo / ".gitignore").write_text("*.log\n")
    plain_git(repo, "add", "-A")
    plain_git(repo, "commit", "-q", "-m", "base")
    (repo / "untracked.txt").write_text("not added\n")
    (repo / "ignored.log").write_text("ignored\n")
    arm(repo, repo / ".git", bin_dir, markers)
    return repo


def git_dir_state(git_dir: Path) -> dict[str, bytes]:
    """Every file under a git dir, by content: what the repository holds."""
    return {
        str(path.relative_to(git_dir)): path.read_bytes()
        for path in sorted(git_dir.rglob("*"))
        if path.is_file()
    }


async def run_one_task(
    workspace: Path, calls: list[dict[str, Any]], accept: list[str]
) -> TaskResult:
    """A task through the same wiring as `agentcli run` (build_manager), with a scripted model."""
    model = ScriptedModel([*(respond(call) for call in calls), respond(text("done"))])
    options = SessionOptions(task=None, cwd=workspace, permission_mode="yolo", accept=accept)
    manager = open_run_session(options, lambda _e: None, model_factory=lambda _name: model)
    try:
        result = await manager.run_task("change things")
    finally:
        await manager.close()
    assert all(c["status"] == "succeeded" for c in result.tool_calls), result.tool_calls
    return result


def undo(workspace: Path, task: str | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = undo_command(workspace, task, out, err)
    return code, out.getvalue(), err.getvalue()
