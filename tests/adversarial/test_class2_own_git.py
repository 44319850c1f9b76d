"""Class 2: agentcli's own git calls (snapshots, checkpoints, acceptance, undo) must never run
anything the repository configures.

The workspace is a git repository whose configuration names a marker payload for every key that
makes git run a program: core.fsmonitor, hooks (through core.hooksPath, or .git/hooks),
filter clean/smudge/process drivers and diff drivers chosen by .gitattributes, external diff,
textconv, pagers, editors, gpg programs with commit/tag signing on, merge drivers, ssh/askpass/
credential/proxy helpers, an `ext::` remote, `hook.<name>.command`, gc.auto. Variant "config"
sets them in .git/config (plus core.hooksPath and an include of a workspace file); variant
"include" sets them only through include.path / includeIf of workspace files.

The model does nothing but answer (default, read-only) or edit a file (accept-edits, auto):
every program that runs was run by agentcli itself. The task runs with `--accept true`, then
`agentcli undo`. Any marker is a failure, in every mode but yolo.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.lab import (
    GITATTRIBUTES,
    MECHANISMS,
    Lab,
    assert_clean,
    batch_problems,
    call,
    describe_markers,
    describe_run,
    init_repo,
    mechanism_of,
    plant_hostile_git,
    run_members,
)

MODES = ("default", "accept-edits", "read-only", "auto")
VARIANTS = ("config", "include")
BATCHES = [
    (mode, variant)
    for variant in VARIANTS
    for mode in MODES
    if variant == "config" or mode == "default"
]
"""The include variant plays in one mode: what it adds (includes of workspace files are not
honoured) does not depend on the mode."""
EDITING_MODES = {"accept-edits", "auto"}


def build(root: Path, mode: str, variant: str) -> dict[str, Any]:
    lab = Lab(root)
    init_repo(
        lab.ws,
        {
            "README.md": "# demo\n",
            "a.txt": "first\n",
            "notes.md": "notes\n",
            ".gitattributes": GITATTRIBUTES,
        },
    )
    plant_hostile_git(lab, lab.ws / ".git", variant)
    turns = []
    if mode in EDITING_MODES:
        turns.append(
            [
                call("read-txt", "read_file", path="a.txt"),
                call("read-md", "read_file", path="notes.md"),
            ]
        )
        turns.append(
            [
                call("edit-txt", "write_file", path="a.txt", content="first\nsecond\n"),
                call("edit-md", "write_file", path="notes.md", content="notes, edited\n"),
                call("new-txt", "write_file", path="new.txt", content="a new file\n"),
            ]
        )

    def undo(lab: Lab, outcome: dict[str, Any]) -> None:
        outcome["markers_after_run"] = lab.markers()
        outcome["runs"].append(lab.agentcli("undo", timeout=60))

    outcome = run_members(
        lab, mode, turns, extra_args=["--accept", "true"], final="Answered.", follow_up=undo
    )
    markers_after_undo = outcome.pop("markers")
    outcome["markers"] = [
        *({**m, "step": "run"} for m in outcome.pop("markers_after_run")),
        *({**m, "step": "undo"} for m in markers_after_undo),
    ]
    outcome["edited"] = (lab.ws / "a.txt").read_text()
    return outcome


def batch_of(params: dict[str, Any]) -> tuple[str, Callable[[Path], dict[str, Any]]]:
    mode, variant = params["mode"], params["variant"]
    return f"c2-{mode}-{variant}", functools.partial(build, mode=mode, variant=variant)


@pytest.mark.parametrize("mechanism", [*MECHANISMS, "other"])
@pytest.mark.parametrize(("mode", "variant"), BATCHES)
def test_class2_own_git_runs_no_repo_program(
    outcome: dict[str, Any], mode: str, variant: str, mechanism: str
) -> None:
    markers = [m for m in outcome["markers"] if mechanism_of(m["name"]) == mechanism]
    steps = sorted({m["step"] for m in markers})
    assert not markers, (
        f"class 2, member {mechanism!r} (hostile repo, variant {variant!r}), mode {mode!r}: "
        f"agentcli's own git calls ran programs the repository configures (during "
        f"{' and '.join(steps)}):\n{describe_markers(markers)}\n{describe_run(outcome)}"
    )


@pytest.mark.parametrize(("mode", "variant"), BATCHES)
def test_class2_own_git_leaves_nothing_behind(
    outcome: dict[str, Any], mode: str, variant: str
) -> None:
    problems = batch_problems(outcome, "state_changes", "alive_after_exit", "request_leaks")
    assert_clean(problems, outcome, f"class 2 (hostile repo, variant {variant!r}), mode {mode!r}")
