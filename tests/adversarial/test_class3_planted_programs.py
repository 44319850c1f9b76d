"""Class 3, planted programs: agentcli installed in a virtualenv inside the workspace.

A common setup (`uv add --dev agentcli`, `pip install agentcli` in the project's `.venv`, or
agentcli working on its own checkout): the interpreter running agentcli, and the `rg` of the
`ripgrep` wheel beside it, are files in the workspace. agentcli starts both outside the sandbox:
the interpreter as the sandbox helper (before it confines anything) for every command, `rg` for
every `grep`/`glob` call. In `auto` mode the model replaces them with one sandboxed command
(the workspace is writable); the next command, even a read-only one, or the next search runs
the replacement unconfined, without any question asked.

A marker outside the workspace means a payload ran unconfined.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.conftest import requires_landlock
from tests.adversarial.lab import (
    VENV_BIN,
    Lab,
    call,
    describe_markers,
    describe_run,
    run_members,
    sh,
)

pytestmark = requires_landlock
PROGRAMS = ("helper-python", "rg")
"""What agentcli runs from its own virtualenv: the marker each replacement leaves."""
WRAPPER = "#!/bin/sh\n'{payload}' >/dev/null 2>&1 </dev/null\nexec '{real}' \"$@\"\n"


def real_rg() -> str | None:
    found = VENV_BIN / "rg"
    return str(found) if found.is_file() else shutil.which("rg")


def workspace_venv(lab: Lab) -> Path:
    """A virtualenv in the workspace whose Python imports this checkout's agentcli and whose
    bin/ has an `rg` (as the ripgrep wheel would put it there); agentcli runs from it."""
    venv = lab.ws / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = venv / "lib" / version / "site-packages"
    ours = sysconfig.get_paths()["purelib"]
    (site / "agentcli-under-test.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    rg = real_rg()
    if rg is not None:
        (venv / "bin" / "rg").write_text(f"#!/bin/sh\nexec '{rg}' \"$@\"\n")
        (venv / "bin" / "rg").chmod(0o755)
    lab.python = str(venv / "bin" / "python")
    return venv


def build(root: Path) -> dict[str, Any]:
    lab = Lab(root)
    (lab.ws / "README.md").write_text("# a project with its own virtualenv\nhello\n")
    venv = workspace_venv(lab)
    # What the hostile repository brings: replacements that leave a marker, then do the real
    # program's work (so agentcli goes on as if nothing happened).
    tools = lab.ws / "tools"
    reals = {"helper-python": os.path.realpath(venv / "bin" / "python"), "rg": real_rg()}
    for name, real in reals.items():
        if real is None:
            continue
        payload = lab.payload(f"agentcli-{name}", tools / f"mark-{name}.sh")
        (tools / name).write_text(WRAPPER.format(payload=payload, real=real))
        (tools / name).chmod(0o755)
    turns = [
        [
            sh(
                "swap-helper-python",
                "cp tools/helper-python .venv/bin/python.new && "
                "mv -f .venv/bin/python.new .venv/bin/python && echo swapped",
            ),
        ],
        [sh("swap-rg", "cp tools/rg .venv/bin/rg && echo swapped")],
        [sh("any-command", "echo hello"), call("search", "grep", pattern="hello")],
    ]
    outcome = run_members(lab, "auto", turns)
    outcome["has_rg"] = reals["rg"] is not None
    return outcome


def batch_of(params: dict[str, Any]) -> tuple[str, Callable[[Path], dict[str, Any]]]:
    return "c3-planted-programs", build


@pytest.mark.parametrize("program", PROGRAMS)
def test_class3_agentcli_never_runs_a_program_the_workspace_replaced(
    outcome: dict[str, Any], program: str
) -> None:
    if program == "rg" and not outcome["has_rg"]:
        pytest.skip("ripgrep is not installed")
    outside = [
        m
        for m in outcome["markers"]
        if m["name"] == f"agentcli-{program}" and not m["inside_workspace"]
    ]
    assert not outside, (
        f"class 3, member {program!r}, auto: agentcli ran the {program} the model put in "
        f"its workspace virtualenv, outside the sandbox:\n{describe_markers(outside)}\n"
        f"{describe_run(outcome)}"
    )
