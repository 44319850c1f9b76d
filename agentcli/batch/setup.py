"""A task's `setup` commands: run in its fresh workspace before the task, in the OS sandbox.

They come from the task file, which the user wrote, so they run unasked, as an approved
command would: in the workspace-write profile (writes to the workspace and `sandbox.writable`,
credentials hidden, a scrubbed environment, nothing left running), with the network opened
(setup installs dependencies). agentcli's config and data directories, the task's own (its
journal) among them, are hidden from them. Where no sandbox can be had they do not run, and
the task is an error, unless its permission mode is `yolo` (which runs everything unconfined
anyway).

Setup runs once, when the workspace is made; a resumed task does not run it again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agentcli.config import load_settings
from agentcli.confinement import Confinement, Profile
from agentcli.paths import data_home, user_config_path
from agentcli.permissions.setup import uses_sandbox
from agentcli.sandbox.runner import OsSandbox, SandboxSettings
from agentcli.sandbox.support import probe_support
from agentcli.tools.output import HeadTailCollector
from agentcli.tools.process_group import run_in_group
from agentcli.vocabulary import PermissionMode

SETUP_TIMEOUT_S = 1800.0
"""A setup command longer than this is killed (and the task is an error)."""
OUTPUT_BYTES = 64_000


@dataclass(frozen=True, slots=True)
class SetupFailure:
    command: str
    problem: str


def run_setup(
    commands: Sequence[str],
    workspace: Path,
    *,
    mode: PermissionMode,
    hidden: Sequence[Path],
    log: Path,
) -> SetupFailure | None:
    """Run `commands` in order in `workspace`; the first that fails stops the rest. Their
    output goes to `log`."""
    if not commands:
        return None
    return asyncio.run(_run_all(commands, workspace, mode, hidden, log))


async def _run_all(
    commands: Sequence[str],
    workspace: Path,
    mode: PermissionMode,
    hidden: Sequence[Path],
    log: Path,
) -> SetupFailure | None:
    prepare = _confiner(workspace, mode, hidden)
    if isinstance(prepare, SetupFailure):
        return prepare
    for number, command in enumerate(commands, 1):
        argv, env = ["bash", "-c", command], None
        if prepare is not None:
            prepared = prepare.prepare(
                argv, Confinement(profile=Profile.WORKSPACE_WRITE, network=True)
            )
            argv, env = prepared.argv, dict(prepared.env)
        collector = HeadTailCollector(OUTPUT_BYTES, log.with_name(f"setup-{number}.txt"))
        outcome = await run_in_group(
            argv, cwd=workspace, timeout_s=SETUP_TIMEOUT_S, collector=collector, env=env
        )
        with log.open("a", encoding="utf-8") as out:
            out.write(f"$ {command}\n{outcome.output.text}\n[exit {outcome.exit_code}]\n")
        if outcome.timed_out:
            return SetupFailure(command, f"setup ran longer than {SETUP_TIMEOUT_S:.0f} s")
        if outcome.exit_code != 0:
            return SetupFailure(command, f"setup command exited {outcome.exit_code} (see {log})")
    return None


def _confiner(
    workspace: Path, mode: PermissionMode, hidden: Sequence[Path]
) -> OsSandbox | SetupFailure | None:
    """The sandbox setup runs in (None: unconfined, in yolo mode), or why there is none."""
    settings = load_settings(workspace, trusted=False)
    if mode is PermissionMode.YOLO:
        return None
    support = probe_support()
    if not uses_sandbox(mode, settings) or not support.ok:
        why = support.problem if not support.ok else "sandbox.enabled = false"
        return SetupFailure("", f"setup needs the OS sandbox, which is not available: {why}")
    config = settings.sandbox
    return OsSandbox(
        workspace=workspace,
        settings=SandboxSettings(
            writable=tuple(Path(p).expanduser() for p in config.writable),
            readable=tuple(Path(p).expanduser() for p in config.readable),
            deny_read=tuple(Path(p).expanduser() for p in config.deny_read),
            network=True,
            env_scrub=tuple(config.env_scrub),
            env_keep=tuple(config.env_keep),
            agentcli_dirs=(user_config_path().parent, data_home(), *hidden),
        ),
    )
