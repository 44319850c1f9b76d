"""`agentcli doctor`: what agentcli will use here, and what is missing.

Reports the model configuration (without importing the SDK), whether an API key is present
(never its value), the config files found, whether the workspace is trusted (and so what of its
in-repo config is ignored), git and ripgrep, and what the OS sandbox can enforce on this kernel,
i.e. what auto mode will do.

A problem found (a broken config file, no API key for the provider in use) is reported where
it is found and the other checks go on (with the default settings when the config cannot be
read); the exit code is 1 when there was any, so a script can rely on `agentcli doctor`.
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

from agentcli import __version__
from agentcli.config import load_settings
from agentcli.errors import ConfigError, UsageError
from agentcli.owngit.repo import git_version
from agentcli.paths import resolve_workspace
from agentcli.provider import OPENAI_DEFAULT_BASE_URL, Provider, is_loopback
from agentcli.sandbox.support import sandbox_report
from agentcli.settings import DEFAULTS, Settings
from agentcli.tools.ripgrep import find_rg
from agentcli.ui.term.safe import visible


def doctor_lines(workspace: Path) -> list[str]:
    """The report's lines (what `doctor_report` gives, without the problems)."""
    return doctor_report(workspace)[0]


def doctor_report(workspace: Path) -> tuple[list[str], list[str]]:
    """The report's lines, and the problems found (each also said in its line)."""
    problems: list[str] = []
    config_lines: list[str] = []
    try:
        settings = load_settings(workspace)
    except UsageError as exc:
        problems.append(exc.message)
        config_lines = [
            f"config: error: {exc.message}" + (f" ({exc.hint})" if exc.hint else ""),
            "  (the checks below use the default settings)",
        ]
        settings = DEFAULTS
    key = "ANTHROPIC_API_KEY" if os.environ.get("ANTHROPIC_API_KEY") else None
    key = key or ("ANTHROPIC_AUTH_TOKEN" if os.environ.get("ANTHROPIC_AUTH_TOKEN") else None)
    if key is None and settings.provider is Provider.ANTHROPIC:
        problems.append("no API key: export ANTHROPIC_API_KEY=…")
    openai = _openai_lines(settings)
    if any(line.endswith("missing (export OPENAI_API_KEY=…)") for line in openai):
        problems.append("no API key for the OpenAI-compatible server: export OPENAI_API_KEY=…")
    lines = [
        f"agentcli {__version__} on Python {platform.python_version()} ({sys.executable})",
        f"workspace: {workspace}",
        *config_lines,
        f"model: {settings.catalogue().resolve(settings.model)} ({_model_summary(settings)})"
        + (
            f" (API at {os.environ['ANTHROPIC_BASE_URL']})"
            if "ANTHROPIC_BASE_URL" in os.environ
            else ""
        ),
        f"API key: {key} is set" if key else "API key: missing (export ANTHROPIC_API_KEY=…)",
        *openai,
        "config files: " + (", ".join(str(p) for p in settings.provenance.sources) or "none"),
        *_trust_lines(workspace, settings),
        _mcp_line(workspace, settings),
        f"permission mode: {settings.permission_mode.value}",
        f"git: {git_version(workspace)}",
        f"ripgrep: {find_rg() or 'not found (grep and glob use the slower Python fallback)'}",
    ]
    return lines + sandbox_report(), problems


def _openai_lines(settings: Settings) -> list[str]:
    """With `--provider openai`: where requests go, and whether they carry a key."""
    if settings.provider is not Provider.OPENAI:
        return []
    url = settings.base_url or OPENAI_DEFAULT_BASE_URL
    if os.environ.get("OPENAI_API_KEY"):
        key = "OPENAI_API_KEY is set"
    elif is_loopback(url):
        key = "none (not needed: the server is on this machine)"
    else:
        key = "missing (export OPENAI_API_KEY=…)"
    return [f"provider: openai, at {url}; key: {key}"]


def _mcp_line(workspace: Path, settings: Settings) -> str:
    """The MCP servers a session here would start, and where each is configured (without
    starting them: `agentcli mcp list` does, and shows their tools)."""
    from agentcli.mcp.config import configured_servers

    try:
        found = configured_servers(settings, workspace)
    except (ConfigError, UsageError) as exc:
        return f"MCP servers: cannot be read: {visible(exc.message)}"
    parts = [f"{name} ({visible(server.source)})" for name, server in found.servers.items()]
    parts += [
        f"{name} (ignored: untrusted {visible(str(found.ignored_file))})" for name in found.ignored
    ]
    if found.ignored_file is not None and not found.ignored:
        parts.append(f"none readable in {visible(str(found.ignored_file))} (ignored: untrusted)")
    for held in found.held:
        why = "changed since approved" if held.changed else "not approved yet"
        where = visible(str(held.path))
        parts += [f"{name} (not started: {why} in {where}; agentcli trust)" for name in held.names]
    if not parts:
        return "MCP servers: none"
    return "MCP servers: " + ", ".join(parts) + " (agentcli mcp list starts them)"


def _model_summary(settings: Settings) -> str:
    """What the catalogue says of the configured model: limits, price, thinking and effort."""
    spec = settings.catalogue().lookup(settings.model)
    if not spec.known:
        return "not in the catalogue: conservative defaults, cost unknown"
    parts = [f"{spec.name}: {spec.context_window:,}-token context, {spec.max_output:,} output"]
    if spec.price is not None:
        rates = spec.price.rates
        parts.append(f"${rates.input:g}/${rates.output:g} per MTok in/out")
    parts.append(f"thinking {spec.thinking}")
    effort = spec.effort_for(settings.effort)
    if effort is not None:
        parts.append(f"effort {effort}")
    return ", ".join(parts) + (", legacy" if spec.legacy else "")


def _trust_lines(workspace: Path, settings: Settings) -> list[str]:
    provenance = settings.provenance
    if provenance.trusted:
        return ["workspace trust: trusted (its .agentcli config applies; agentcli trust --revoke)"]
    from agentcli.trust import user_rules_path

    return [
        "workspace trust: not trusted (its .agentcli config can only narrow permissions; "
        f'"always" answers are kept in {user_rules_path(workspace)}; agentcli trust to trust it)',
        *(f"  ignored in {path}: {'; '.join(items)}" for path, items in provenance.ignored.items()),
    ]


def doctor_command(cwd: Path | None) -> int:
    """Print the report; exit 1 when it found a problem (each is named in the last line)."""
    workspace = resolve_workspace(cwd)
    lines, problems = doctor_report(workspace)
    for line in lines:
        sys.stdout.write(visible(line) + "\n")
    if problems:
        count = f"{len(problems)} problem{'' if len(problems) == 1 else 's'}"
        sys.stdout.write(visible(f"{count}: " + "; ".join(problems)) + "\n")
        return 1
    return 0
