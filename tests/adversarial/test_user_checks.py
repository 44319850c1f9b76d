"""Issue 26, class 9: the sandbox hid the user's own acceptance checks.

Checks run sandboxed (they run the model's code), and a sandboxed command sees nothing outside
the workspace but system and toolchain dirs. A check the user wrote that names something
outside the workspace failed there with exit 127 or 2: a virtualenv that is not activated
(`~/.virtualenvs/proj/bin/…`, whose script's `#!` names that virtualenv's python), a shared
check script that reads what lies beside it, an evaluation harness that keeps its tests out
of the model's reach. agentcli then spent every repair round asking the model to fix what it
could not, and reported the task failed, without a word about the sandbox.

Now such a check sees, read-only, what its command names (a file: with the directory it is
in) and the program it starts (a virtualenv's root); credentials stay hidden even when named,
also from the model's code the check runs. A check that cannot start at all, or names a hidden
path, ends the task as a setup error (exit 2, `config_error`) naming the path and
`sandbox.readable`, with no repair round.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.conftest import requires_landlock
from tests.adversarial.lab import Lab, call, describe_run, run_members

pytestmark = requires_landlock
PYVER = f"python{sys.version_info.major}.{sys.version_info.minor}"
CHECKLIB = """
from pathlib import Path

def run() -> int:
    answer = Path("answer.txt").read_text().strip() if Path("answer.txt").exists() else ""
    print("checklib: answer is", repr(answer))
    return 0 if answer == "42" else 1
"""
SHARED_CHECK = """#!/bin/sh
# A check kept beside what it compares with, outside the workspace.
expected=$(cat "$(dirname "$0")/expected.txt")
test "$(cat answer.txt)" = "$expected" && echo "shared check: ok"
"""
HARNESS = """
import sys
from pathlib import Path
hidden = Path(__file__).parent / "tests" / "expected.txt"  # the tests the model never saw
ok = Path("answer.txt").read_text().strip() == hidden.read_text().strip()
print("harness:", "passed" if ok else "failed")
sys.exit(0 if ok else 1)
"""
READS_SECRETS = """
import os, pathlib
for p in ("~/.ssh/id_rsa", "~/.aws/credentials", "~/.netrc"):
    path = pathlib.Path(os.path.expanduser(p))
    try:
        print(p, path.read_text())
    except OSError as exc:
        print(p, "unreadable:", exc.strerror)
"""


def user_setup(lab: Lab) -> dict[str, str]:
    """The user's things outside the workspace: a virtualenv with a test runner and a library,
    a shared check script, an evaluation harness with hidden tests."""
    venv = lab.home / ".virtualenvs" / "proj"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (venv / "lib" / PYVER / "site-packages" / "checklib.py").write_text(CHECKLIB)
    runner = venv / "bin" / "checkrunner"
    runner.write_text(f"#!{venv}/bin/python\nimport checklib\nraise SystemExit(checklib.run())\n")
    runner.chmod(0o755)
    shared = lab.root / "shared"
    shared.mkdir()
    (shared / "check.sh").write_text(SHARED_CHECK)
    (shared / "expected.txt").write_text("42\n")
    harness = lab.root / "harness"
    (harness / "tests").mkdir(parents=True)
    (harness / "run.py").write_text(HARNESS)
    (harness / "tests" / "expected.txt").write_text("42\n")
    return {
        "venv": "~/.virtualenvs/proj/bin/checkrunner",
        "shared": f"sh {shared / 'check.sh'}",
        "harness": f"python3 {harness / 'run.py'}",
        "missing": "~/.virtualenvs/gone/bin/pytest -q",
        "hidden": "grep -q aws_secret ~/.aws/credentials",
        "secrets": f"{venv}/bin/python read_secrets.py",
    }


def build(root: Path, checks: tuple[str, ...]) -> dict[str, Any]:
    lab = Lab(root)
    commands = user_setup(lab)
    (lab.ws / "read_secrets.py").write_text(READS_SECRETS)  # the model's code a check runs
    accept = [word for name in checks for word in ("--accept", commands[name])]
    turns = [[call("answer", "write_file", path="answer.txt", content="42\n")]]
    outcome = run_members(lab, "accept-edits", turns, extra_args=accept, final="Done: 42.")
    outcome["commands"] = {name: commands[name] for name in checks}
    return outcome


BATCHES = {
    "i26-c9-outside-checks": ("venv", "shared", "harness", "secrets"),
    "i26-c9-cannot-start": ("missing",),
    "i26-c9-names-a-hidden-path": ("hidden",),
}


def batch_of(params: dict[str, Any]) -> tuple[str, Callable[[Path], dict[str, Any]]]:
    return params["batch"], functools.partial(build, checks=BATCHES[params["batch"]])


def _result(outcome: dict[str, Any]) -> dict[str, Any]:
    result = outcome["runs"][0]["result"]
    assert result is not None, describe_run(outcome)
    return result  # type: ignore[no-any-return]


@pytest.mark.parametrize("batch", ["i26-c9-outside-checks"])
def test_the_user_s_checks_outside_the_workspace_run(outcome: dict[str, Any], batch: str) -> None:
    result = _result(outcome)
    checks = "\n".join(
        f"  {c['command']}: exit {c['exit_code']}: {c['output_tail'][-300:]!r}"
        for c in result["acceptance"]
    )
    assert result["task_state"] == "succeeded", f"{checks}\n{describe_run(outcome)}"
    assert result["repair_rounds"] == 0 and outcome["runs"][0]["returncode"] == 0, checks
    assert len(result["acceptance"]) == 4 and all(c["passed"] for c in result["acceptance"])


@pytest.mark.parametrize("batch", ["i26-c9-outside-checks"])
def test_credentials_stay_hidden_from_the_code_a_check_runs(
    outcome: dict[str, Any], batch: str
) -> None:
    result = _result(outcome)
    (secrets,) = [c for c in result["acceptance"] if "read_secrets.py" in c["command"]]
    assert "~/.ssh/id_rsa" in secrets["output_tail"], secrets  # it ran
    assert "HOMESECRET-" not in str(result["acceptance"]), secrets
    assert not outcome["request_leaks"], f"secrets reached the model: {outcome['request_leaks']}"


@pytest.mark.parametrize("batch", ["i26-c9-cannot-start", "i26-c9-names-a-hidden-path"])
def test_a_check_that_cannot_start_is_a_setup_error_not_a_repair_round(
    outcome: dict[str, Any], batch: str
) -> None:
    run = outcome["runs"][0]
    result = _result(outcome)
    assert run["returncode"] == 2, describe_run(outcome)
    assert result["terminal_reason"] == "config_error" and result["task_state"] == "failed"
    assert result["repair_rounds"] == 0 and len(run["bodies"]) == 2, describe_run(outcome)
    error = result["error"] or ""
    assert "sandbox.readable" in error, error
    named = "~/.virtualenvs/gone" if batch == "i26-c9-cannot-start" else ".aws/credentials"
    assert named.lstrip("~") in error, error
    assert "HOMESECRET-" not in str(result), "a hidden file's content reached the result"
