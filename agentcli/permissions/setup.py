"""Building a session's permissions from flags and config: policy, sandbox, denial limit.

Config keys (any level; see `agentcli.config`): `allow` / `ask` / `deny` rule lists (also under
`[permissions]`), `permissions.denial_limit` (denials in one task before it stops, default 3),
and `[sandbox]`: `enabled` (default true; never used in yolo; false means every command asks
and runs unconfined if approved), `writable` (extra directories sandboxed commands may write),
`readable` (extra paths read-only-profile commands may read), `deny_read` (paths hidden from
every sandboxed command), `allow_unix_sockets` (socket paths commands may connect to),
`network` (default false: every workspace-write command gets the network), `env_scrub` /
`env_keep` (more variable name patterns to scrub, names to keep). In a workspace the user has
not trusted, its in-repo files cannot loosen any of these (`agentcli.config`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentcli.config import FileConfig, data_home, project_config_paths, user_config_path
from agentcli.errors import UsageError
from agentcli.permissions import PermissionMode
from agentcli.permissions.policy import RulePolicy
from agentcli.permissions.rules import RuleKind, RuleSet
from agentcli.tools.base import CommandSandbox
from agentcli.trust import is_trusted, user_rules_path

if TYPE_CHECKING:  # the sandbox modules load only when a session uses the sandbox
    from agentcli.sandbox.runner import OsSandbox

DEFAULT_DENIAL_LIMIT = 3


@dataclass(kw_only=True)
class SessionPermissions:
    policy: RulePolicy
    sandbox: CommandSandbox | None
    """Set when shell commands must run sandboxed (goes into `ToolContext.sandbox`)."""
    denial_limit: int = DEFAULT_DENIAL_LIMIT
    notices: list[str] = field(default_factory=list)
    """What the user should be told once, at the start (e.g. no sandbox on this kernel)."""


def build_policy(
    *,
    mode: PermissionMode,
    flag_allow: Sequence[str] = (),
    flag_deny: Sequence[str] = (),
    file_rules: Mapping[str, Sequence[str]] | None = None,
    workspace: Path,
    sandbox_available: bool,
    sandbox_problem: str | None = None,
    sandbox_network: bool = False,
    flag_ask: Sequence[str] = (),
    persist: bool = True,
    trusted: bool | None = None,
) -> RulePolicy:
    """The policy for a session. Malformed rules are a UsageError naming their source.
    "Always" answers are saved when `persist`: to `<workspace>/.agentcli/config.local.toml` if
    the workspace is `trusted` (None: ask the trust store, not --trust-project, which lasts one
    run), else to the user's data dir, since that file would be ignored next time."""
    rules = RuleSet()
    for kind in RuleKind:
        rules.add(kind, (file_rules or {}).get(kind.value, ()), "config files")
    rules.add(RuleKind.ALLOW, flag_allow, "--allow")
    rules.add(RuleKind.ASK, flag_ask, "--ask")
    rules.add(RuleKind.DENY, flag_deny, "--deny")
    return RulePolicy(
        mode=mode,
        rules=rules,
        sandbox_available=sandbox_available,
        sandbox_problem=sandbox_problem,
        sandbox_network=sandbox_network,
        persist_to=_always_answers_path(workspace, trusted) if persist else None,
        agentcli_dirs=(user_config_path().parent, data_home()),
        workspace=workspace,
    )


def _always_answers_path(workspace: Path, trusted: bool | None) -> Path:
    if trusted is None:
        trusted = is_trusted(workspace)
    return project_config_paths(workspace)[1] if trusted else user_rules_path(workspace)


def uses_sandbox(mode: PermissionMode, files: FileConfig) -> bool:
    if mode is PermissionMode.YOLO:
        return False
    enabled = files.get("sandbox.enabled", True)
    if not isinstance(enabled, bool):
        raise UsageError(f"sandbox.enabled must be true or false (got {enabled!r})")
    return enabled


def build_permissions(
    *,
    mode: PermissionMode,
    allow: Sequence[str],
    deny: Sequence[str],
    files: FileConfig,
    workspace: Path,
) -> SessionPermissions:
    """Policy and sandbox for `mode`. Without a working sandbox the policy asks before every
    command (and a notice says why) instead of running any unconfined unasked."""
    notices: list[str] = []
    sandbox: OsSandbox | None = None
    problem: str | None = None
    if uses_sandbox(mode, files):
        sandbox, problem = _make_sandbox(files, workspace)
    elif mode is not PermissionMode.YOLO:
        problem = "the sandbox is disabled in the config (sandbox.enabled = false)"
    if problem:
        notices.append(f"every command will ask, and run unconfined if you approve it: {problem}")
    policy = build_policy(
        mode=mode,
        flag_allow=allow,
        flag_deny=deny,
        file_rules=files.rules,
        workspace=workspace,
        sandbox_available=sandbox is not None,
        sandbox_problem=problem,
        sandbox_network=sandbox is not None and not sandbox.block_network,
    )
    return SessionPermissions(
        policy=policy,
        sandbox=sandbox,
        denial_limit=_denial_limit(files.get("permissions.denial_limit", DEFAULT_DENIAL_LIMIT)),
        notices=notices,
    )


def _make_sandbox(files: FileConfig, workspace: Path) -> tuple[OsSandbox | None, str | None]:
    from agentcli.sandbox.runner import PYTHON_IN_WORKSPACE, OsSandbox, SandboxSettings
    from agentcli.sandbox.support import probe_support

    support = probe_support()
    if not support.ok:
        return None, support.problem
    network = files.get("sandbox.network", False)
    if not isinstance(network, bool):
        raise UsageError(f"sandbox.network must be true or false (got {network!r})")
    settings = SandboxSettings(
        writable=_paths(files, "sandbox.writable", workspace),
        readable=_paths(files, "sandbox.readable", workspace),
        deny_read=_paths(files, "sandbox.deny_read", workspace),
        allow_unix_sockets=_paths(files, "sandbox.allow_unix_sockets", workspace),
        network=network,
        env_scrub=_names(files, "sandbox.env_scrub"),
        env_keep=_names(files, "sandbox.env_keep"),
        agentcli_dirs=(user_config_path().parent, data_home()),
    )
    sandbox = OsSandbox(workspace=workspace, settings=settings)
    if sandbox.python is None:
        return None, PYTHON_IN_WORKSPACE
    return sandbox, None


def _paths(files: FileConfig, key: str, workspace: Path) -> tuple[Path, ...]:
    value = files.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{key} must be a list of paths")
    return tuple(
        path if path.is_absolute() else workspace / path
        for path in (Path(v).expanduser() for v in value)
    )


def _names(files: FileConfig, key: str) -> tuple[str, ...]:
    value = files.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise UsageError(f"{key} must be a list of environment variable names or patterns")
    return tuple(value)


def _denial_limit(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"permissions.denial_limit must be a whole number ≥ 1 (got {value!r})")
    return value
