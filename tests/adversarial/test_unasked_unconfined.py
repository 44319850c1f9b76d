"""Unconfined without a person's approval: acceptance checks when there is no sandbox.

Without a working sandbox (a kernel without Landlock or user namespaces, or
`sandbox.enabled = false`), every command the model proposes asks, because it would run
unconfined. The acceptance checks do not: they run, unconfined and unasked, the code the
model just wrote. In `accept-edits` the model writes files without asking, so a check such as
`sh check.sh` or `pytest` (a `conftest.py`) runs whatever the model put there, outside any
sandbox, with nobody asked. This plays it with `sandbox.enabled = false` (the same code path
as a kernel that cannot sandbox).

A marker outside the workspace means a payload ran unconfined.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.adversarial.lab import (
    Lab,
    call,
    describe_markers,
    describe_run,
    run_members,
)


def build(root: Path) -> dict[str, Any]:
    lab = Lab(root)
    (lab.ws / "README.md").write_text("# a project whose check is `sh check.sh`\n")
    (lab.ws / "check.sh").write_text("#!/bin/sh\nexit 0\n")
    with (lab.config_dir / "config.toml").open("a") as config:
        config.write("[sandbox]\nenabled = false\n")
    payload = lab.payload_text("acceptance-check")
    turns = [
        [call("read-check", "read_file", path="check.sh")],
        [call("write-check", "write_file", path="check.sh", content=payload)],
    ]
    return run_members(lab, "accept-edits", turns, extra_args=["--accept", "sh check.sh"])


def batch_of(params: dict[str, Any]) -> tuple[str, Callable[[Path], dict[str, Any]]]:
    return "c6-acceptance-without-sandbox", build


def test_acceptance_checks_do_not_run_model_code_unconfined_unasked(
    outcome: dict[str, Any],
) -> None:
    outside = [m for m in outcome["markers"] if not m["inside_workspace"]]
    assert not outside, (
        "accept-edits without a sandbox: the acceptance check ran the script the model wrote, "
        f"outside any sandbox, without asking:\n{describe_markers(outside)}\n"
        f"{describe_run(outcome)}"
    )
