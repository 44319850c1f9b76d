"""What this machine's kernel lets the sandbox enforce, found by trying it.

`probe_support()` runs the helper's `--probe` once per process: a forked child confines itself
on a scratch directory and checks that a write beside `.git` works while writes into `.git` and
outside fail and a TCP connect to a local listener fails. `sandbox_report()` turns the result
into lines for `agentcli doctor`.
"""

from __future__ import annotations

import functools
import json
import platform
import subprocess
import sys
from dataclasses import dataclass

from agentcli.sandbox import landlock

PROBE_TIMEOUT_S = 20


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxSupport:
    landlock_abi: int
    ok: bool
    """Writes are confined (workspace, temp dir, configured paths; `.git` read-only)."""
    network: str
    """How the network is blocked, or "cannot be blocked"."""
    read_only: str
    """How `.git` and `.agentcli` are kept read-only."""
    problem: str | None = None
    """Why there is no sandbox (when not ok)."""

    @property
    def network_blockable(self) -> bool:
        return self.ok and self.network != "cannot be blocked"


@functools.cache
def probe_support() -> SandboxSupport:
    kernel = f"{platform.system()} {platform.release()}"
    if platform.system() != "Linux":
        return _unsupported(0, f"the OS sandbox needs Linux with Landlock ({kernel})")
    abi = landlock.abi_version()
    if abi < 1:
        return _unsupported(
            0,
            f"the kernel ({kernel}) does not offer Landlock (Linux ≥ 5.13 with landlock "
            "in the LSM list, e.g. lsm=landlock,… on the kernel command line)",
        )
    try:
        completed = subprocess.run(
            [sys.executable, "-I", "-m", "agentcli.sandbox.exec", "--probe"],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        found = json.loads(completed.stdout or "{}")
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
        return _unsupported(abi, f"the sandbox probe failed: {exc}")
    if not found.get("ok"):
        why = found.get("error") or completed.stderr.strip() or "its checks did not hold"
        return _unsupported(abi, f"Landlock ABI {abi} is present but the sandbox failed: {why}")
    return SandboxSupport(
        landlock_abi=abi,
        ok=True,
        network=str(found.get("network", "cannot be blocked")),
        read_only=str(found.get("read_only", "none")),
    )


def _unsupported(abi: int, problem: str) -> SandboxSupport:
    return SandboxSupport(
        landlock_abi=abi, ok=False, network="cannot be blocked", read_only="none", problem=problem
    )


def sandbox_report(support: SandboxSupport | None = None) -> list[str]:
    """Lines for `agentcli doctor`: what the sandbox enforces here and what auto mode does."""
    support = support or probe_support()
    kernel = f"{platform.system()} {platform.release()} ({platform.machine()})"
    if not support.ok:
        return [
            f"sandbox: unavailable on {kernel}: {support.problem}",
            "auto mode: asks before every command that is not a built-in read-only command "
            "(it never runs commands unsandboxed without asking)",
        ]
    lines = [
        f"sandbox: Landlock ABI {support.landlock_abi} on {kernel}: commands write only to the "
        "workspace, a session temp dir and configured paths",
        f"sandbox .git/.agentcli read-only: {support.read_only}",
        f"sandbox network off: {support.network}",
        "auto mode: commands run in the sandbox without asking",
    ]
    if not support.network_blockable:
        lines.append(
            "auto mode: note that sandboxed commands can reach the network on this kernel "
            "(Landlock ABI < 4 and no network namespace)"
        )
    return lines
