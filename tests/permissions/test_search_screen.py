"""Which files grep and glob leave out, as a table: mode × search root × file → shown or withheld.

`read(...)` deny rules withhold their files in every mode; ask rules withhold theirs except in
yolo mode and when the user was asked about the search root itself. A property test ties the
screen to the policy's own read decision, so the two cannot drift apart. A directory a rule
names is withheld whole (as ripgrep skips it).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcli.globs import globs_under, rg_glob
from agentcli.permissions import Decision, PermissionMode
from agentcli.permissions.policy import RulePolicy
from agentcli.permissions.setup import build_policy
from agentcli.tools.base import PermissionTarget, Risk

MODES = tuple(PermissionMode)  # default, accept-edits, read-only, auto, yolo: the letters' order
DENY = ["read(secrets/**)", "read(**/.env)"]
ASK = ["read(config/prod/**)"]


def policy(mode: PermissionMode, tmp_path: Path, **rules: list[str]) -> RulePolicy:
    return build_policy(
        mode=mode,
        flag_deny=rules.get("deny", DENY),
        flag_ask=rules.get("ask", ASK),
        flag_allow=rules.get("allow", ["read(**)"]),
        workspace=tmp_path,
        sandbox_available=True,
        persist=False,
    )


# (search root, file) → per mode (default, accept-edits, read-only, auto, yolo): `s` shown,
# `w` withheld.
SCREEN = {
    (".", "src/app.py"): "sssss",
    (".", "secrets/key.txt"): "wwwww",
    (".", "secrets/deep/er/key.txt"): "wwwww",
    (".", ".env"): "wwwww",
    (".", "src/.env"): "wwwww",
    (".", "src/.env.example"): "sssss",
    (".", "config/prod/db.toml"): "wwwws",
    (".", "config/dev/db.toml"): "sssss",
    ("config", "config/prod/db.toml"): "wwwws",
    # The root is under the ask rule: the user was asked about this search and said yes.
    ("config/prod", "config/prod/db.toml"): "sssss",
    ("config/prod", "config/prod/.env"): "wwwww",
    ("src", "src/secrets/key.txt"): "sssss",  # rule globs are anchored at the workspace
    (".", "/elsewhere/secrets/key.txt"): "sssss",  # and never match an absolute path
    (".", "keys/old.env/notes.txt"): "sssss",
    (".", "keys/.env/notes.txt"): "wwwww",  # in a directory the rule names
}


@pytest.mark.parametrize(("root", "path"), list(SCREEN))
def test_screen_table(root: str, path: str, tmp_path: Path) -> None:
    got = "".join(
        "w" if policy(mode, tmp_path).search_screen(root).withholds(path) else "s" for mode in MODES
    )
    assert got == SCREEN[(root, path)], f"modes {[m.value for m in MODES]}"


# The search root itself is judged like read_file's target: a denied directory is refused as
# a whole, a directory under an ask rule asks.
ROOTS = {
    "secrets": "ddddd",
    "secrets/deep": "ddddd",
    "src/.env": "ddddd",
    "config/prod": "????a",
    "config": "aaaaa",
    ".": "aaaaa",
}


@pytest.mark.parametrize("root", list(ROOTS))
def test_search_root_table(root: str, tmp_path: Path) -> None:
    letters = {Decision.ALLOW: "a", Decision.ASK: "?", Decision.DENY: "d"}
    got = "".join(
        letters[
            policy(mode, tmp_path).decide(Risk.READ, PermissionTarget("read", root, root)).decision
        ]
        for mode in MODES
    )
    assert got == ROOTS[root]


SEGMENTS = st.sampled_from(["src", "secrets", "config", "prod", ".env", "a.py", "x"])
PATHS = st.lists(SEGMENTS, min_size=1, max_size=4).map("/".join)
GLOBS = st.lists(
    st.sampled_from(["src", "secrets", "config", "prod", ".env", "*", "**", "*.py", "s*"]),
    min_size=1,
    max_size=3,
).map(lambda parts: f"read({'/'.join(parts)})")


@settings(max_examples=300, deadline=None)
@given(
    deny=st.lists(GLOBS, max_size=2),
    ask=st.lists(GLOBS, max_size=2),
    mode=st.sampled_from(MODES),
    root=PATHS | st.just("."),
    path=PATHS,
)
def test_the_screen_is_the_policys_read_decision(
    deny: list[str], ask: list[str], mode: PermissionMode, root: str, path: str
) -> None:
    """A file is withheld exactly when read_file on it, or on a directory it is in, would be
    denied, or would ask while the search itself did not."""
    rules = policy(mode, Path("/nonexistent-ws"), deny=deny, ask=ask, allow=[])
    root_asked = rules.decide(Risk.READ, PermissionTarget("read", root, "")).decision
    if root_asked is Decision.DENY:
        return  # the search never runs

    def covered(subject: str) -> bool:
        decision = rules.decide(Risk.READ, PermissionTarget("read", subject, "")).decision
        return decision is Decision.DENY or (
            decision is Decision.ASK and root_asked is not Decision.ASK
        )

    parts = path.split("/")
    expected = any(covered("/".join(parts[:n])) for n in range(1, len(parts) + 1))
    assert rules.search_screen(root).withholds(path) is expected


# A rule glob rebased onto the directory ripgrep runs in.
UNDER = [
    ("secrets/**", ".", ["secrets/**"]),
    ("secrets/**", "secrets", ["**"]),
    ("secrets/**", "secrets/deep", ["**"]),
    ("secrets/**", "src", []),
    ("**/.env", ".", ["**/.env"]),
    ("**/.env", "src/app", ["**/.env"]),
    ("src/*/gen/**", "src/web", ["gen/**"]),
    ("src/*/gen/**", "docs/web", []),
    ("**/secrets/*.txt", "a/secrets", ["**/secrets/*.txt", "*.txt"]),
    ("a/**/b/*", "a/x/b", ["*", "**/b/*"]),
    ("docs/readme.md", "docs", ["readme.md"]),
    ("docs/readme.md", "docs/readme.md", []),  # the root itself: the policy judges it
    ("/abs/secrets/**", "/abs", ["secrets/**"]),
    ("/abs/secrets/**", ".", []),
    ("**/.env", "/abs", []),
]


@pytest.mark.parametrize(("pattern", "base", "expected"), UNDER)
def test_globs_under(pattern: str, base: str, expected: list[str]) -> None:
    assert globs_under(pattern, base) == expected


def test_rg_glob_escapes_what_rules_take_literally() -> None:
    assert rg_glob("secrets/**") == "/secrets/**"
    assert rg_glob("a[1]/{b}/c\\d*") == "/a\\[1\\]/\\{b\\}/c\\\\d*"


def test_the_notice_names_rules_never_files(tmp_path: Path) -> None:
    screen = policy(PermissionMode.DEFAULT, tmp_path).search_screen(".")
    notice = screen.notice(".")
    assert "read(secrets/**), read(**/.env)" in notice
    assert "read(config/prod/**)" in notice and "read_file" in notice
    # Only the rules that can cover something under the root are named.
    assert screen.notice("src") == (
        "(files matching read(**/.env) are left out of search results: the user denied "
        "reading them)"
    )
    assert (
        policy(PermissionMode.DEFAULT, tmp_path, deny=[], ask=[]).search_screen(".").notice(".")
        == ""
    )


# The shell's built-in readers cannot leave files out as the grep tool does: one that searches
# a directory which may hold denied files asks, even under `shell(*)`, in every mode but yolo
# (read-only mode denies first whatever is not a built-in read-only command: `git -C`, `env`).
# Rules: `deny read(secrets/**)`; a real workspace with `src/` and `secrets/`.
SHELL = {
    "grep -rn token .": "????a",
    "grep -R token": "????a",
    "grep --recursive token": "????a",
    "rg token": "????a",
    "rg -n token .": "????a",
    "find . -name '*.py'": "????a",
    "ls -R": "????a",
    "ls && rg token": "????a",
    "rg token src": "aaaaa",
    "grep -rn token src README.md": "aaaaa",
    "find src -name '*.py'": "aaaaa",
    "grep token README.md": "aaaaa",
    "ls": "aaaaa",
    "grep -r token secrets": "ddddd",
    "ls secrets": "ddddd",
    "cat secrets/key.txt": "ddddd",
    "grep -fsecrets/key.txt README.md": "ddddd",  # patterns from the denied file
    "grep -nfsecrets/key.txt README.md": "ddddd",
    "rg -fsecrets/key.txt src": "ddddd",
    "grep -eTODO -m5 README.md": "aaaaa",
    # Arithmetic (`$[1]`): not a built-in read-only command; it reads a shell pattern.
    "cat $[1] secre*/key.txt": "??d?a",
    # git prints committed files no path in its arguments reveals (`HEAD:secrets/key.txt`).
    "git show HEAD:secrets/key.txt": "????a",
    "git diff HEAD~1": "????a",
    "git log -p": "????a",
    "git log --patch -- src": "????a",
    "git log -Stoken": "????a",
    "git -C . grep token": "??d?a",
    "git --git-dir .git show HEAD:secrets/key.txt": "??d?a",
    "git annotate secrets/key.txt": "??d?a",
    "git diff-tree -p HEAD": "??d?a",
    "git fast-export --all": "??d?a",
    "git --work-tree . --namespace x log -p": "??d?a",
    "git status": "aaaaa",
    "git log --oneline -5": "aaaaa",
    "git log --stat": "aaaaa",
    # Options that print contents without -p (-U3 and --binary imply it).
    "git log -U3": "????a",
    "git log --unified=1 -- src": "????a",
    "git log --binary": "????a",
    "git log -c": "????a",
    "git log --word-diff": "????a",
    "git reflog -p": "??d?a",
    "git stash show -p": "??d?a",
    # grep and ls read long options by any unambiguous prefix; grep -d recurse is grep -r.
    # (An abbreviated option is never a built-in read-only command: read-only mode denies.)
    "grep --recurs token .": "??d?a",
    "grep --dereference-rec token src": "??d?a",
    "grep -d recurse token .": "????a",
    "grep --directories recurse token .": "????a",
    "grep --dir=recurse token": "??d?a",
    "ls --recur": "??d?a",
    # Following symbolic links, a search of src/ reaches secrets/ through src/link.
    "grep -R token src": "????a",
    "rg -L token src": "????a",
    "rg --follow token src": "????a",
    "find -L src -name '*.py'": "????a",
    "ls -RL src": "????a",
    "ls -R src": "aaaaa",
    # Which files a pattern names is known only once bash expands it (through src/link too).
    "cat secre*/key.txt": "????a",
    "head src/*/key.txt": "????a",
    "grep token sec?ets/key.txt": "????a",
    "wc -l < secre*/key.txt": "????a",
    "ls src/*.py": "????a",
    # ... also run through a wrapper, which must not lose which words bash expands.
    "env cat secre*/key.txt": "??d?a",
    "timeout 5 cat secre*/key.txt": "??d?a",
    "nice -n 5 head src/*/key.txt": "??d?a",
    "xargs cat secre*/key.txt": "??d?a",
    "find src -exec cat secre*/key.txt {} ;": "??d?a",
    # An input redirection is a read like an argument, also around a compound command.
    "cat < secrets/key.txt": "ddddd",
    "grep token < secrets/key.txt": "ddddd",
    "sort < secrets/key.txt": "ddddd",
    "{ cat; } < secrets/key.txt": "ddddd",
    "while read -r line; do echo $line; done < secrets/key.txt": "ddddd",
    "wc -l < src/app.py": "aaaaa",
}


@pytest.mark.parametrize("allow", [[], ["shell(*)"]])
@pytest.mark.parametrize("command", list(SHELL))
def test_shell_searches_over_denied_files_ask(
    command: str, allow: list[str], tmp_path: Path
) -> None:
    for rel in ("src/app.py", "secrets/key.txt", "README.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("token\n")
    (tmp_path / "src" / "link").symlink_to("../secrets")
    letters = {Decision.ALLOW: "a", Decision.ASK: "?", Decision.DENY: "d"}
    got = ""
    for mode in MODES:
        rules = policy(mode, tmp_path, deny=["read(secrets/**)"], ask=[], allow=allow)
        verdict = rules.decide(Risk.EXECUTE, PermissionTarget("shell", command, command))
        got += letters[verdict.decision]
        if verdict.decision is Decision.ASK:
            assert "read(secrets/**)" in verdict.reason and "grep" in verdict.reason
    assert got == SHELL[command]
