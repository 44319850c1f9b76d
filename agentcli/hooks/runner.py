"""Running one hook: `bash -c COMMAND` in the workspace, the event's JSON on its stdin, in its own
process group (stopped whole at its timeout), with stdout and stderr kept apart.

A hook that must be confined (every repository hook; a user hook with `sandbox = true`) runs
the way the acceptance checks run: prepared by the session's OS sandbox in the workspace-write
profile (writes to the workspace and the session's temp dir only, `.git` metadata and
`.agentcli/` read-only, no network unless `sandbox.network`, secrets scrubbed from its
environment, nothing it starts outliving it). A user's hook runs unconfined, as the user's own
`!command` does, without agentcli's own API keys.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agentcli.confinement import WORKSPACE_WRITE, CommandSandbox
from agentcli.environment import without_own_credentials
from agentcli.hook_entry import PROJECT_DIR_VARIABLES
from agentcli.hooks.protocol import Ran
from agentcli.ids import new_id
from agentcli.tools.output import HeadTailCollector
from agentcli.tools.process_group import run_in_group

CAPTURE_BYTES = 2 * 1024 * 1024
"""Output read from a hook, each of stdout and stderr: JSON this long is still read whole; more
is cut (head and tail) and spilled, and then is no JSON."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Launch:
    """What one hook run needs besides its command."""

    workspace: Path
    session_id: str
    stdin: bytes
    timeout_s: float
    spill_dir: Path
    sandbox: CommandSandbox | None
    """Run it confined by this sandbox (None: unconfined)."""


async def run_hook(command: str, launch: Launch) -> Ran:
    """Run `command` as one hook; how it ended and what it wrote."""
    argv = ["bash", "-c", command]
    extra = {name: str(launch.workspace) for name in PROJECT_DIR_VARIABLES}
    extra["AGENTCLI_SESSION_ID"] = launch.session_id
    env: Mapping[str, str]
    if launch.sandbox is not None:
        try:
            prepared = launch.sandbox.prepare(argv, WORKSPACE_WRITE)
        except OSError as exc:
            return _not_run(f"the sandbox could not be set up: {exc}")
        argv, env = prepared.argv, {**prepared.env, **extra}
    else:
        env = {**without_own_credentials(os.environ), **extra}
    stem = f"hook-{new_id()}"
    out = HeadTailCollector(CAPTURE_BYTES, launch.spill_dir / f"{stem}-stdout.txt")
    err = HeadTailCollector(CAPTURE_BYTES, launch.spill_dir / f"{stem}-stderr.txt")
    try:
        result = await run_in_group(
            argv,
            cwd=launch.workspace,
            timeout_s=launch.timeout_s,
            collector=out,
            env=env,
            stdin=launch.stdin,
            stderr=err,
        )
    except OSError as exc:
        return _not_run(f"it could not be started: {exc.strerror or exc}")
    return Ran(
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        stdout=result.output.text,
        stderr=result.errors.text if result.errors is not None else "",
        duration_s=result.duration_s,
    )


def _not_run(why: str) -> Ran:
    return Ran(exit_code=None, timed_out=False, stdout="", stderr="", duration_s=0.0, failure=why)
