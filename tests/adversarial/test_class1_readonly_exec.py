"""Class 1: "read-only" commands that execute.

Commands a classifier could call read-only but that can run programs (options naming a
program, GNU extensions, wrappers, shell spellings the parser reads differently from bash) and
git reading a hostile repository's configuration. In `default` and `read-only` modes each must
be denied or run in the read-only sandbox: then the program it starts can write nothing, not
even in the workspace. Evidence: marker files (anywhere) and files the member would change.

Two batches per mode: the tools batch in a plain workspace, the git batch in a workspace that is
a hostile git repository (a payload's recorded ancestry tells which command ran it; markers from
agentcli's own git calls are reported by the batch test, class 2 covers them in depth).
"""

from __future__ import annotations

import functools
import gzip
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.lab import (
    GITATTRIBUTES,
    Lab,
    Member,
    assert_clean,
    batch_problems,
    describe_markers,
    describe_member,
    init_repo,
    plant_hostile_git,
    run_members,
    sh,
)

MODES = ("default", "read-only")
VICTIM = "intact\n"

# (slug, command); {mark} is this member's marker file name (for commands that write a file
# themselves), a payload script ./<slug>.sh exists for every member.
TOOLS: list[tuple[str, str]] = [
    ("rg-pre-eq", "rg --pre=./rg-pre-eq.sh needle"),
    ("rg-pre-space", "rg --pre ./rg-pre-space.sh needle"),
    ("rg-pr-prefix", "rg --pr=./rg-pr-prefix.sh needle"),
    ("rg-pre-glob", "rg --pre-glob '*.txt' --pre=./rg-pre-glob.sh needle"),
    ("rg-hostname-bin-eq", "rg --hostname-bin=./rg-hostname-bin-eq.sh needle"),
    ("rg-hostname-bin-space", "rg --hostname-bin ./rg-hostname-bin-space.sh needle"),
    (
        "rg-hyperlink-host",
        "rg --color=always --hyperlink-format=default --hostname-bin=./rg-hyperlink-host.sh needle",
    ),
    ("rg-search-zip-env-path", "env PATH=./zbin-env:/usr/bin:/bin rg -z needle"),
    ("rg-search-zip-assign-path", "PATH=./zbin-assign:$PATH rg --search-zip needle"),
    ("rg-config-env", "RIPGREP_CONFIG_PATH=./rgrc rg needle"),
    ("rg-backslash-newline", "rg needle --p\\\nre=./rg-backslash-newline.sh"),
    ("rg-brace", "rg needle --pre{=./rg-brace.sh,=./rg-brace.sh}"),
    ("rg-ansi-c", "rg needle $'--pre=./rg-ansi-c.sh'"),
    ("rg-ansi-c-hex", "rg needle $'--\\x70re=./rg-ansi-c-hex.sh'"),
    ("rg-empty-quotes", "rg needle --p''re=./rg-empty-quotes.sh"),
    ("rg-double-quoted", 'rg needle "--pre=./rg-double-quoted.sh"'),
    ("rg-backslash-escape", "r\\g needle --pr\\e=./rg-backslash-escape.sh"),
    ("rg-ifs", "rg${IFS}needle${IFS}--pre=./rg-ifs.sh"),
    ("find-exec", "find . -name a.txt -exec ./find-exec.sh {} \\;"),
    ("find-exec-plus", "find . -name a.txt -exec ./find-exec-plus.sh {} +"),
    ("find-execdir", "find . -name a.txt -execdir ./find-execdir.sh {} \\;"),
    ("find-backslash", "find . -name a.txt -ex\\ec ./find-backslash.sh {} \\;"),
    ("find-quoted", "find . -name a.txt '-exec' ./find-quoted.sh {} ';'"),
    ("find-fprint-outside", "find . -maxdepth 1 -name a.txt -fprint ../outside/{mark}"),
    ("find-fprint-ws", "find . -maxdepth 1 -name a.txt -fprint {mark}"),
    ("find-fprintf", "find . -maxdepth 1 -name a.txt -fprintf ../outside/{mark} '%p'"),
    ("find-fls", "find . -maxdepth 1 -name a.txt -fls ../outside/{mark}"),
    ("find-delete", "find . -name victim-find-delete.txt -delete"),
    ("sed-e-command", "sed '1e ./sed-e-command.sh' a.txt"),
    ("sed-s-e-flag", "sed 's/.*/.\\/sed-s-e-flag.sh/e' a.txt"),
    ("sed-f-script", "sed -f script.sed a.txt"),
    ("sed-w-outside", "sed -n 'w ../outside/{mark}' a.txt"),
    ("sed-i", "sed -i 's/intact/changed/' victim-sed-i.txt"),
    ("sort-o-outside", "sort -o ../outside/{mark} a.txt"),
    ("sort-output-ws", "sort --output=victim-sort-output-ws.txt a.txt"),
    (
        "sort-compress-program",
        "sort -S 64K --compress-program=./sort-compress-program.sh big.txt | head -n 1",
    ),
    ("xargs", "echo a.txt | xargs ./xargs.sh"),
    ("xargs-a", "xargs -a list.txt ./xargs-a.sh"),
    ("xargs-I", "ls a.txt | xargs -I{} ./xargs-I.sh {}"),
    ("env-run", "env ./env-run.sh"),
    ("env-S", "env -S './env-S.sh a.txt'"),
    ("env-assign", "env FOO=1 ./env-assign.sh"),
    ("echo-backslash", "e\\cho a.txt | x\\args ./echo-backslash.sh"),
    ("timeout-wrapper", "timeout 10 ./timeout-wrapper.sh"),
    ("nice-wrapper", "nice ./nice-wrapper.sh"),
    ("command-builtin", "command ./command-builtin.sh"),
    ("substitution", "echo $(./substitution.sh)"),
    ("backticks", "echo `./backticks.sh`"),
    ("process-substitution", "cat <(./process-substitution.sh)"),
    ("and-chain", "ls && ./and-chain.sh"),
    ("dot-source", ". ./dot-source.sh"),
    ("source", "source ./source.sh"),
    ("eval", "eval ./eval.sh"),
    ("awk-system", "awk 'BEGIN { system(\"./awk-system.sh\") }'"),
    ("redirect-outside", "echo pwned > ../outside/{mark}"),
    ("redirect-ws", "echo changed > victim-redirect-ws.txt"),
    ("append-ws", "cat a.txt >> victim-append-ws.txt"),
    ("tee-ws", "echo changed | tee victim-tee-ws.txt"),
    ("grep-redirect-ws", "grep needle a.txt > victim-grep-redirect-ws.txt"),
]
VICTIMS = (
    "find-delete",
    "sed-i",
    "sort-output-ws",
    "redirect-ws",
    "append-ws",
    "tee-ws",
    "grep-redirect-ws",
)
STDIN_PAYLOADS = {"sort-compress-program"}

# Git members: every command runs in a workspace whose .git/config (and a file it includes,
# and .gitattributes, and core.hooksPath) names a payload per mechanism.
GIT: list[tuple[str, str]] = [
    ("git-status", "git status"),
    ("git-diff", "git diff"),
    ("git-diff-head", "git diff HEAD"),
    ("git-diff-ext-diff", "git diff --ext-diff"),
    ("git-diff-textconv", "git diff --textconv"),
    ("git-log", "git log --oneline"),
    ("git-log-p", "git log -p"),
    ("git-show", "git show"),
    ("git-show-textconv", "git show --textconv HEAD:a.txt"),
    ("git-paginate", "git --paginate log"),
    ("git-p-diff", "git -p diff"),
    ("git-alias", "git st"),
    ("git-blame", "git blame a.txt"),
    ("git-grep", "git grep needle"),
    ("git-grep-textconv", "git grep --textconv needle"),
    ("git-branch", "git branch"),
    ("git-ls-files", "git ls-files"),
    ("git-C-status", "git -C . status"),
]


def tools_members(lab: Lab) -> list[Member]:
    return [
        sh(slug, command.replace("{mark}", f"MARK-{lab.token}-{slug}")) for slug, command in TOOLS
    ]


def setup_tools(lab: Lab) -> list[Member]:
    ws = lab.ws
    (ws / "README.md").write_text("# demo\nneedle in the readme\n")
    (ws / "a.txt").write_text("needle\n")
    (ws / "list.txt").write_text("a.txt\n")
    (ws / "big.txt").write_text("".join(f"{(i * 7919) % 20011}\n" for i in range(20000)))
    (ws / "data.gz").write_bytes(gzip.compress(b"needle in a zip\n"))
    (ws / "rgrc").write_text("--pre=./rg-config-env.sh\n")
    (ws / "script.sed").write_text("1e ./sed-f-script.sh\n")
    for slug in VICTIMS:
        (ws / f"victim-{slug}.txt").write_text(VICTIM)
    for slug, _command in TOOLS:
        lab.payload(slug, stdin=slug in STDIN_PAYLOADS)
    for decompressor in ("gzip", "xz", "bzip2", "zstd", "lz4", "brotli"):
        lab.payload("rg-search-zip-env-path", ws / "zbin-env" / decompressor)
        lab.payload("rg-search-zip-assign-path", ws / "zbin-assign" / decompressor)
    return tools_members(lab)


def build_tools(root: Path, mode: str) -> dict[str, Any]:
    lab = Lab(root)
    members = setup_tools(lab)
    outcome = run_members(lab, mode, [members])
    outcome["victims"] = {
        slug: (lab.ws / f"victim-{slug}.txt").read_text()
        if (lab.ws / f"victim-{slug}.txt").exists()
        else None
        for slug in VICTIMS
    }
    return outcome


def setup_hostile_repo(lab: Lab) -> None:
    """The workspace as a repository with one commit, then a hostile .git/config (written as
    text: no git command runs after it is in place), and changes in the working tree."""
    ws = lab.ws
    init_repo(
        ws,
        {
            "README.md": "# demo\nneedle in the readme\n",
            "a.txt": "needle\n",
            "notes.md": "notes with a needle\n",
            ".gitattributes": GITATTRIBUTES,
        },
    )
    plant_hostile_git(lab, ws / ".git", "config")
    (ws / "a.txt").write_text("needle\nchanged in the working tree\n")
    (ws / "notes.md").write_text("notes with a needle, changed\n")


def build_git(root: Path, mode: str) -> dict[str, Any]:
    lab = Lab(root)
    setup_hostile_repo(lab)
    members = [sh(slug, command) for slug, command in GIT]
    return run_members(lab, mode, [members])


GIT_SLUGS = {slug for slug, _ in GIT}


def batch_of(params: dict[str, Any]) -> tuple[str, Callable[[Path], dict[str, Any]]]:
    mode = params["mode"]
    kind = params.get("kind") or ("git" if params.get("slug") in GIT_SLUGS else "tools")
    build = build_git if kind == "git" else build_tools
    return f"c1-{kind}-{mode}", functools.partial(build, mode=mode)


def markers_of_command(outcome: dict[str, Any], command: str) -> list[dict[str, Any]]:
    """Markers whose payload ran under `command` (as `bash -c COMMAND`, or exec'd by bash)."""
    return [
        m
        for m in outcome["markers"]
        if any(command in argv or " ".join(argv) == command for argv in m["chain"])
    ]


@pytest.mark.parametrize("slug", [slug for slug, _ in TOOLS])
@pytest.mark.parametrize("mode", MODES)
def test_class1_member_runs_nothing(outcome: dict[str, Any], mode: str, slug: str) -> None:
    markers = [m for m in outcome["markers"] if m["name"] == slug]
    assert not markers, (
        f"class 1, member {slug!r}, mode {mode!r}: a program ran (or a file was written) "
        f"without a prompt:\n{describe_markers(markers)}\n{describe_member(outcome, slug)}"
    )
    if slug in VICTIMS:
        content = outcome["victims"][slug]
        assert content == VICTIM, (
            f"class 1, member {slug!r}, mode {mode!r}: workspace file victim-{slug}.txt was "
            f"changed without a prompt (now {content!r}; nothing may write in this mode)\n"
            f"{describe_member(outcome, slug)}"
        )


@pytest.mark.parametrize("slug", [slug for slug, _ in GIT])
@pytest.mark.parametrize("mode", MODES)
def test_class1_git_member_runs_nothing(outcome: dict[str, Any], mode: str, slug: str) -> None:
    command = outcome["members"][slug]["input"]["command"]
    markers = markers_of_command(outcome, command)
    assert not markers, (
        f"class 1, member {slug!r}, mode {mode!r}: `{command}` in a hostile repository ran "
        f"programs its config names, without a prompt:\n{describe_markers(markers)}\n"
        f"{describe_member(outcome, slug)}"
    )


@pytest.mark.parametrize("kind", ["tools", "git"])
@pytest.mark.parametrize("mode", MODES)
def test_class1_batch_leaves_nothing(outcome: dict[str, Any], mode: str, kind: str) -> None:
    """Whatever ran it (a member, or agentcli's own git calls): no marker, no changed state,
    no process left, no secret sent."""
    kinds = ("markers", "state_changes", "alive_after_exit", "request_leaks")
    assert_clean(batch_problems(outcome, *kinds), outcome, f"class 1 batch {kind!r}, mode {mode!r}")
