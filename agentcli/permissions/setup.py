"""Building a session's permissions from its settings: policy, sandbox, denial limit.

What is read (`agentcli.settings`): the mode, the `allow` / `ask` / `deny` rules (config files
and flags), `permissions.denial_limit`, and `[sandbox]` (`enabled`, `writable`, `readable`,
`deny_read`, `allow_unix_sockets`, `network`, `env_scrub`, `env_keep`). In a workspace the user
has not trusted, its in-repo files could not loosen any of these (`agentcli.config`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agentcli.confinement import CommandSandbox
from agentcli.hook_entry import named_files
from agentcli.own_install import own_install_paths
from agentcli.paths import data_home, project_config_paths, user_config_path
from agentcli.permissions import PermissionMode
from agentcli.permissions.policy import RulePolicy
from agentcli.permissions.rules import RuleKind, RuleSet
from agentcli.settings import DEFAULTS, Settings
from agentcli.trust import is_trusted, user_rules_path

if TYPE_CHECKING:  # the sandbox modules load only when a session uses the sandbox
    from agentcli.sandbox.runner import OsSandbox

DEFAULT_DENIAL_LIMIT = DEFAULTS.permissions.denial_limit


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
    rules: RuleSet | None = None,
    hook_scripts: tuple[Path, ...] = (),
) -> RulePolicy:
    """The policy for a session. Malformed rules are a UsageError naming their source.
    "Always" answers are saved when `persist`: to `<workspace>/.agentcli/config.local.toml` if
    the workspace is `trusted` (None: ask the trust store, not --trust-project, which lasts one
    run), else to the user's data dir, since that file would be ignored next time. `rules`
    (e.g. `settings_rules`) come first when given."""
    rules = rules if rules is not None else RuleSet()
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
        install_dirs=own_install_paths(),
        workspace=workspace,
        hook_scripts=hook_scripts,
    )


def hook_scripts(settings: Settings, workspace: Path) -> tuple[Path, ...]:
    """The workspace files the configured hooks run: the model may not change them without
    asking, and sandboxed commands may not at all."""
    found = [
        path
        for _event, group in settings.hooks.groups()
        for handler in group.hooks
        for path in named_files(handler.command, workspace)
    ]
    return tuple(dict.fromkeys(found))


def _always_answers_path(workspace: Path, trusted: bool | None) -> Path:
    if trusted is None:
        trusted = is_trusted(workspace)
    return project_config_paths(workspace)[1] if trusted else user_rules_path(workspace)


def settings_rules(settings: Settings) -> RuleSet:
    """The rules of `settings`, each labelled with where it came from ("config files", or the
    flag)."""
    rules = RuleSet()
    for kind in RuleKind:
        for source, items in settings.rule_sources(kind.value):
            rules.add(kind, items, source)
    return rules


def uses_sandbox(mode: PermissionMode, settings: Settings) -> bool:
    return mode is not PermissionMode.YOLO and settings.sandbox.enabled


def build_permissions(*, settings: Settings, workspace: Path) -> SessionPermissions:
    """Policy and sandbox for `settings.permission_mode`. Without a working sandbox the policy
    asks before every command (and a notice says why) instead of running any unconfined
    unasked."""
    mode = settings.permission_mode
    notices: list[str] = []
    sandbox: OsSandbox | None = None
    problem: str | None = None
    scripts = hook_scripts(settings, workspace)
    if uses_sandbox(mode, settings):
        sandbox, problem = _make_sandbox(settings, workspace, scripts)
    elif mode is not PermissionMode.YOLO:
        problem = "the sandbox is disabled in the config (sandbox.enabled = false)"
    if problem:
        notices.append(f"every command will ask, and run unconfined if you approve it: {problem}")
    policy = build_policy(
        mode=mode,
        rules=settings_rules(settings),
        workspace=workspace,
        sandbox_available=sandbox is not None,
        sandbox_problem=problem,
        sandbox_network=sandbox is not None and not sandbox.block_network,
        hook_scripts=scripts,
    )
    return SessionPermissions(
        policy=policy,
        sandbox=sandbox,
        denial_limit=settings.permissions.denial_limit,
        notices=notices,
    )


def _make_sandbox(
    settings: Settings, workspace: Path, read_only: tuple[Path, ...] = ()
) -> tuple[OsSandbox | None, str | None]:
    from agentcli.sandbox.runner import PYTHON_IN_WORKSPACE, OsSandbox, SandboxSettings
    from agentcli.sandbox.support import probe_support

    support = probe_support()
    if not support.ok:
        return None, support.problem
    config = settings.sandbox
    sandbox_settings = SandboxSettings(
        writable=_paths(config.writable, workspace),
        readable=_paths(config.readable, workspace),
        deny_read=_paths(config.deny_read, workspace),
        allow_unix_sockets=_paths(config.allow_unix_sockets, workspace),
        network=config.network,
        env_scrub=tuple(config.env_scrub),
        env_keep=tuple(config.env_keep),
        agentcli_dirs=(user_config_path().parent, data_home()),
        read_only=read_only,
        own_install=own_install_paths(),
    )
    sandbox = OsSandbox(workspace=workspace, settings=sandbox_settings)
    if sandbox.python is None:
        return None, PYTHON_IN_WORKSPACE
    return sandbox, None


def _paths(values: Sequence[str], workspace: Path) -> tuple[Path, ...]:
    return tuple(
        path if path.is_absolute() else workspace / path
        for path in (Path(v).expanduser() for v in values)
    )
