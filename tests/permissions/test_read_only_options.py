"""The built-in read-only commands, option by option: each program's allowed options run without
asking; every forbidden option asks, however it is spelled (a GNU-style prefix, the `=` form,
an attached short value, inside a cluster), and so does any option the table does not know."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcli.permissions import Decision, PermissionMode
from agentcli.permissions.commands import is_read_only
from agentcli.permissions.setup import build_policy
from agentcli.tools.base import PermissionTarget, Risk

ALLOWED = {
    "ls": [
        *("ls", "ls -la", "ls -la src", "ls -1", "ls --all", "ls --color", "ls --color=never"),
        *("ls --sort=time", "ls --sort time", "ls -I '*.pyc'", "ls -w80", "ls -w 80"),
        *("ls -- -weird", "ls *.py", "ls -lhS --group-directories-first"),
    ],
    "cat": ["cat a.txt", "cat -n a.txt", "cat --number a.txt", "cat -", "cat a b", "cat -A a"],
    "head": [
        *("head -n 5 a", "head -n5 a", "head --lines=5 a", "head --lines 5 a", "head -5 a"),
        *("head -c 100 a", "head -qn 3 a b", "head src/*.py"),
    ],
    "tail": ["tail -n 50 build.log", "tail -n +5 a", "tail -20 a", "tail --lines=3 a", "tail a"],
    "wc": ["wc -l a", "wc -lw a", "wc --lines a", "wc"],
    "grep": [
        *("grep -rn TODO src", "grep -e foo -e bar a", "grep -eTODO -m5 README.md"),
        *("grep -A 3 x a", "grep -A3 -B 2 x a", "grep --include='*.py' -r x ."),
        *("grep --include '*.py' -r x .", "grep --color=always x a", "grep -C2 x a"),
        *("grep -5 x a", "grep -rnz x .", "grep -E 'a|b' a", "grep -- -x a", "grep -f pats a"),
        *("grep -d recurse x .", "grep --directories=recurse x ."),
    ],
    "rg": [
        *("rg -n 'def main' --type py", "rg -t py x", "rg -tpy x", "rg --glob '*.py' x"),
        *("rg -g '!*.md' x", "rg -uuu x", "rg --hidden --no-ignore x", "rg -A 2 x"),
        *("rg --max-depth 2 x", "rg -l x src", "rg --files", "rg --json x", "rg -i -w x src"),
        *("rg --replace=y x", "rg -e=x src", "rg -- -x src"),
    ],
    "find": [
        *("find . -name '*.py' -type f", "find src -maxdepth 2 -name x -print"),
        *("find -L src -name '*.py'", "find . \\( -name a -o -name b \\) -prune -o -print"),
        *("find . -newer a -size +1k", "find", "find . -printf '%p\\n'", "find . -type d -empty"),
        *("find src tests -name '*.py' ! -path '*/node_modules/*'", "find . -mtime -1 -ls"),
    ],
    "pwd": ["pwd", "pwd -P"],
    "echo": ["echo a b", "echo -n x", "echo --pre=sh", "echo *"],
    "true/false": ["true", "false x"],
    "stat": ["stat a", "stat -c %s a", "stat --format=%s a", "stat -L a"],
    "basename/dirname": ["basename a/b.py .py", "basename -s .py a/b.py", "dirname a/b"],
    "nl": ["nl a", "nl -ba a", "nl -b a a"],
    "uniq": ["uniq a", "uniq -c a", "sort a | uniq -c", "uniq -f 2 a"],
    "cut": ["cut -d, -f1 a", "cut -d ',' -f 1,2 a", "cut --fields=1 a", "cut -c1-10 a"],
    "tr": ["tr a-z A-Z", "tr -d '\\n'", "tr -s ' '"],
    "sort": ["sort a", "sort -rn a", "sort -k2 -t, a", "sort -k 2 a", "sort -u a b", "sort -"],
    "which": ["which python", "which -a python"],
    "uname": ["uname -a", "uname", "uname -sr"],
    "sed": ["sed -n 5p a", "sed -n '1,10p' a", "sed -n 3p"],
    "git": [
        *("git status", "git status -sb", "git status --porcelain=v1", "git status -uno"),
        *("git status --porcelain", "git diff", "git diff --stat", "git diff HEAD~1 -- src"),
        *("git diff --cached", "git diff -U5", "git diff --unified=1", "git diff -M50%"),
        *("git diff --word-diff=color", "git diff HEAD..main", "git diff --name-only"),
        *("git log --oneline -5", "git log -n 5", "git log -n5 --stat", "git log --format=%H"),
        *("git log --pretty=oneline", "git log --since=2.weeks --author=me", "git log -S foo"),
        *("git log -p -- src", "git log --graph --decorate --all", "git log -C -M"),
        *("git show HEAD", "git show HEAD:README.md", "git show --stat HEAD", "git show -s"),
    ],
}

ASKS = {
    "ls": ["ls --recur", "ls --al", "ls -j", "ls --bogus", "ls --all=x", "ls -w"],
    "cat": ["cat -z a", "cat --number=1 a", "cat --num a"],
    # A separate value that looks like an option asks (`head -n -5` reads fine with GNU head,
    # but a program that takes no value there would read an option).
    "head": ["head --lin=5 a", "head -x a", "head -n", "head -n -5 a", "head --lines --x a"],
    "tail": [
        *("tail -f log", "tail -F log", "tail --follow log", "tail --follow=name log"),
        *("tail --fol log", "tail --f log", "tail -fn 5 log", "tail -n5 -f log", "tail -qf log"),
        *("tail --retry log", "tail -s 1 log", "tail --pid=1 log", "tail *"),
    ],
    "wc": ["wc --files0-from=list", "wc -x a"],
    "grep": ["grep --recurs x .", "grep -j x a", "grep --dir=recurse x", "grep -e", "grep -e -x a"],
    "rg": [
        *("rg --pre=sh x", "rg --pre sh x", "rg --pr=sh x", "rg --pr sh x", "rg --pre-glob '*' x"),
        *("rg --hostname-bin=sh x", "rg --hostname-bin sh x", "rg -z x", "rg --search-zip x"),
        *("rg -nz x", "rg -rnz x", "rg -zn x", "rg --search-z x", "rg x *", "rg -r y x"),
        *("rg --pre= x", "rg -j", "rg --no-ignore-dot=x x", "rg --bogus x"),
    ],
    "find": [
        *("find . -exec rm {} ;", "find . -execdir x {} +", "find . -ok rm {} ;"),
        *("find . -okdir x ;", "find . -delete", "find . -fprint out", "find . -fprint0 out"),
        *("find . -fprintf out %p", "find . -fls out", "find . -name x -exec cat {} +"),
        *("find * -name x", "find . -bogus", "find . -name", "find -X ."),
    ],
    "pwd": ["pwd x", "pwd -x"],
    "sort": [
        *("sort -o out a", "sort --output=out a", "sort --output out a", "sort -uo out a"),
        *("sort -ro out a", "sort -T /tmp a", "sort --temporary-directory=/tmp a"),
        *("sort --compress-program=sh a", "sort --out=x a", "sort *"),
    ],
    "uniq": ["uniq a out", "uniq -c a out", "uniq *"],
    "sed": [
        *("sed -i s/a/b/ f", "sed -n 5w out f", "sed -n '1p;w out' f", "sed -n 1e f"),
        *("sed 5p f", "sed -n -e 5p f", "sed --quiet 5p f", "sed -n 5p -i f", "sed -n 5p *"),
        "sed -ni 5p f",
    ],
    "cut/tr/nl/which/uname/stat": [
        *("cut --bogus a", "tr -x a b", "tr a b c", "nl a b", "which -x", "uname x"),
        "stat --bogus a",
    ],
    "git": [
        *("git -c core.pager=evil log", "git -C .. status", "git --git-dir=x status"),
        *("git --work-tree=x status", "git --exec-path=x status", "git -p log"),
        *("git --paginate log", "git --no-pager log", "git --config-env=a=b log"),
        *("git diff --output=x", "git diff --out=x", "git diff --output x", "git diff --ext-diff"),
        *("git diff --textconv", "git diff --no-index a b", "git diff /etc/passwd /dev/null"),
        *("git diff ../x", "git diff -- ../x", "git log --show-signature", "git log --format=%G?"),
        *("git log --pretty=format:%GS", "git log --output=x", "git show --ext-diff"),
        *("git log -p --output pwned", "git status --bogus", "git commit -m x", "git branch"),
        *("git diff *", "git log --form=%H", "git status -uno --output=x", "git show --textconv"),
        *("git diff -U --output=x", "git log --author --output=x", "git diff --unified --output=x"),
    ],
    "computed, redirected, substituted": [
        *("cat $f", "ls ~", "cat a > out", "cat $(ls)", "A=1 ls", "ls `x`", "echo $'x'"),
        *("ls > /tmp/x", "/bin/ls", "./ls", "l* -la", "cat <(ls)", "head -n $N a"),
    ],
}


@pytest.mark.parametrize(
    "command", [c for commands in ALLOWED.values() for c in commands], ids=lambda c: c
)
def test_allowed_options_run_without_asking(command: str, tmp_path: Path) -> None:
    assert is_read_only(command)
    policy = build_policy(
        mode=PermissionMode.DEFAULT, workspace=tmp_path, sandbox_available=True, persist=False
    )
    verdict = policy.decide(Risk.EXECUTE, PermissionTarget("shell", command, command))
    assert verdict.decision is Decision.ALLOW, verdict.reason


@pytest.mark.parametrize(
    "command", [c for commands in ASKS.values() for c in commands], ids=lambda c: c
)
def test_forbidden_or_unknown_options_ask(command: str, tmp_path: Path) -> None:
    assert not is_read_only(command)
    policy = build_policy(
        mode=PermissionMode.DEFAULT, workspace=tmp_path, sandbox_available=True, persist=False
    )
    verdict = policy.decide(Risk.EXECUTE, PermissionTarget("shell", command, command))
    assert verdict.decision is Decision.ASK, verdict.reason
