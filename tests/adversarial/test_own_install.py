"""Issue 26, class 6: agentcli's own install is writable from the sandbox.

The README's own set-up installs agentcli into a `.venv` of the directory it then works in.
A sandboxed command may write the workspace, and so, there, agentcli's own interpreter, its
`site-packages` and what starts it: a `.pth` file (or a `sitecustomize`) dropped into the
virtualenv's site-packages runs at the next agentcli start, outside the sandbox, before
anything is asked. Here agentcli runs from a virtualenv inside the lab's workspace; in auto
mode each member tries one way of changing that virtualenv (shell and python, the interpreter
itself, its `pyvenv.cfg`, a rename of the whole virtualenv, the file tool), then agentcli is
started again (`agentcli doctor`).

Evidence: the virtualenv is exactly as before (every file's content and mode), no payload ran
(markers), and the workspace outside the virtualenv stayed writable (a control member).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.conftest import requires_landlock
from tests.adversarial.lab import (
    Lab,
    Member,
    call,
    describe_markers,
    describe_member,
    describe_run,
    run_members,
    sh,
)

pytestmark = requires_landlock
CHECKOUT = Path(__file__).resolve().parents[2]
PYVER = f"python{sys.version_info.major}.{sys.version_info.minor}"
SITE = f".venv/lib/{PYVER}/site-packages"


def make_venv(lab: Lab) -> Path:
    """A virtualenv in the workspace that runs this checkout's agentcli (its dependencies
    from the test virtualenv, through a `.pth` of its own, as an install would put them)."""
    venv = lab.ws / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    deps = sysconfig.get_paths()["purelib"]
    (lab.ws / SITE / "agentcli-deps.pth").write_text(f"{CHECKOUT}\n{deps}\n")
    lab.python = str(venv / "bin" / "python")
    return venv


def tree(root: Path) -> dict[str, str]:
    """Every entry under `root`: path -> what it is (content hash, link target, mode)."""
    found = {}
    for top, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(top) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                found[rel] = f"link {os.readlink(path)}"
            elif path.is_file():
                digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
                found[rel] = f"file {digest} {oct(path.stat().st_mode)}"
            else:
                found[rel] = f"dir {oct(path.stat().st_mode)}"
    return found


def pth_line(marker: Path) -> str:
    return f"import subprocess; subprocess.run(['/bin/sh', '{marker}'])"


def members(lab: Lab) -> list[Member]:
    def payload(name: str) -> Path:
        return lab.payload(name, lab.ws / "payloads" / f"{name}.sh")

    line = lab.ws / "payloads" / "pth-line.txt"
    line.write_text(pth_line(payload("own-pth-python")) + "\n")
    python_write = (
        ".venv/bin/python -c \"import site; open(site.getsitepackages()[0] + '/zz-py.pth', "
        f"'w').write(open('{line}').read())\""
    )
    return [
        sh("own-pth-shell", f'echo "{pth_line(payload("own-pth-shell"))}" > {SITE}/zz-sh.pth'),
        sh("own-pth-python", python_write),
        sh("own-sitecustomize", f"cp {line} {SITE}/sitecustomize.py"),
        sh("own-interpreter", f"ln -sfn {payload('own-interpreter')} .venv/bin/python"),
        sh("own-pyvenv-cfg", "echo 'include-system-site-packages = true' >> .venv/pyvenv.cfg"),
        sh(
            "own-rename-venv",
            f"mv .venv .venv-aside && mkdir -p {SITE} && "
            f'echo "{pth_line(payload("own-rename-venv"))}" > {SITE}/zz-mv.pth',
        ),
        sh("own-deps-pth", f"echo '/nonexistent-own-deps' >> {SITE}/agentcli-deps.pth"),
        call(
            "own-pth-tool",
            "write_file",
            path=f"{SITE}/zz-tool.pth",
            content=pth_line(payload("own-pth-tool")) + "\n",
        ),
        sh("control-workspace-write", "echo written > control.txt"),
    ]


def build(root: Path) -> dict[str, Any]:
    lab = Lab(root)
    venv = make_venv(lab)
    before = tree(venv)
    turn = members(lab)

    def start_again(lab: Lab, outcome: dict[str, Any]) -> None:
        outcome["runs"].append(lab.agentcli("doctor"))

    outcome = run_members(lab, "auto", [turn], follow_up=start_again)
    after = tree(venv) if venv.is_dir() else {}
    outcome["venv_changes"] = sorted(
        f"{rel}: {before.get(rel, 'absent')} -> {after.get(rel, 'absent')}"
        for rel in set(before) | set(after)
        if before.get(rel) != after.get(rel)
    )
    outcome["control"] = (lab.ws / "control.txt").is_file()
    return outcome


def batch_of(params: dict[str, Any]) -> tuple[str, Callable[[Path], dict[str, Any]]]:
    return "i26-c6-own-install", build


def test_agentcli_ran_from_the_virtualenv_twice(outcome: dict[str, Any]) -> None:
    first, again = outcome["runs"]
    assert first["result"] is not None, describe_run(outcome)
    assert again["returncode"] == 0, describe_run(outcome)


def test_the_virtualenv_is_unchanged(outcome: dict[str, Any]) -> None:
    changed = outcome["venv_changes"]
    members = "\n".join(
        describe_member(outcome, slug) for slug in outcome["members"] if slug.startswith("own-")
    )
    assert not changed, (
        "auto mode: a sandboxed command (or the file tool, unasked) changed the virtualenv "
        "agentcli runs from:\n  " + "\n  ".join(changed) + f"\n{members}\n{describe_run(outcome)}"
    )


def test_no_payload_ran_at_the_next_start(outcome: dict[str, Any]) -> None:
    ran = [m for m in outcome["markers"] if not m["inside_workspace"] or m["chain"]]
    assert not ran, (
        "a payload planted in agentcli's own install ran:\n"
        f"{describe_markers(ran)}\n{describe_run(outcome)}"
    )


@pytest.mark.parametrize("slug", ["own-pth-tool"])
def test_the_file_tool_asks_before_writing_agentcli_s_install(
    outcome: dict[str, Any], slug: str
) -> None:
    member = outcome["members"][slug]
    assert member["status"] != "succeeded", describe_member(outcome, slug)


def test_the_workspace_outside_the_install_stays_writable(outcome: dict[str, Any]) -> None:
    assert outcome["control"], describe_member(outcome, "control-workspace-write")


def test_the_model_is_told_why(outcome: dict[str, Any]) -> None:
    """Not "outside the writable places" (the model would go looking for another): the write
    hit agentcli's own installation."""
    seen = outcome["members"]["own-pth-shell"]["result"]
    assert "part of agentcli's own installation" in seen, describe_member(outcome, "own-pth-shell")
