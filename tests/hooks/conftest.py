"""What the hooks tests share: real hook scripts (shell and Python) written into temporary
directories, config files at each level, and `agentcli` run in-process against the fake
Messages API."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcli.paths import user_config_path
from agentcli.testing.fake_api import FakeMessagesServer
from tests.inprocess import decoded, run_in_process


@pytest.fixture
def server() -> Iterator[FakeMessagesServer]:
    with FakeMessagesServer() as fake:
        yield fake
        assert fake.pairing_problems() == []


def script(path: Path, body: str) -> Path:
    """An executable hook script at `path` (its first line says what runs it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    path.chmod(0o755)
    return path


def python_hook(path: Path, body: str) -> Path:
    """A Python hook script: `data` is the event's JSON from stdin."""
    head = f"#!{sys.executable}\nimport json, os, sys\ndata = json.load(sys.stdin)\n"
    return script(path, head + body)


def hook_table(event: str, command: str, matcher: str | None = None, **handler: Any) -> str:
    """One `[[hooks.EVENT]]` group with one command handler, as TOML."""
    fields = {"type": "command", "command": command, **handler}
    inline = ", ".join(f"{key} = {json.dumps(value)}" for key, value in fields.items())
    lines = [f"[[hooks.{event}]]"]
    if matcher is not None:
        lines.append(f"matcher = {json.dumps(matcher)}")
    lines.append(f"hooks = [{{ {inline} }}]")
    return "\n".join(lines) + "\n"


def user_hooks(*tables: str) -> Path:
    """The user's own config file holding `tables`."""
    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(tables))
    return path


def project_hooks(workspace: Path, *tables: str, local: bool = False) -> Path:
    """The repository's `.agentcli/config.toml` (or `config.local.toml`) holding `tables`."""
    path = workspace / ".agentcli" / ("config.local.toml" if local else "config.toml")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(tables))
    return path


def cli(
    *args: str, server: FakeMessagesServer | None, cwd: Path, stdin: str = "", **env: str
) -> subprocess.CompletedProcess[str]:
    """`agentcli ARGS` in-process, pointed at the fake server (if any)."""
    given = {}
    if server is not None:
        given = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test"}
    return decoded(run_in_process(*args, cwd=cwd, env={**given, **env}, stdin=stdin))


def run_json(
    workspace: Path, server: FakeMessagesServer, *args: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """`agentcli run --output-format json ARGS`: the process and its result object."""
    proc = cli("run", *args, "--output-format", "json", server=server, cwd=workspace)
    lines = proc.stdout.strip().splitlines()
    assert lines, proc.stderr
    return proc, json.loads(lines[-1])


def trust_and_approve(workspace: Path) -> None:
    assert cli("trust", str(workspace), server=None, cwd=workspace).returncode == 0
    approved = cli("hooks", "approve", server=None, cwd=workspace)
    assert approved.returncode == 0, approved.stderr


def sandbox_works() -> bool:
    from agentcli.sandbox.support import probe_support

    return probe_support().ok


requires_sandbox = pytest.mark.skipif(
    not sandbox_works(), reason="no OS sandbox on this kernel: repository hooks cannot run"
)


def records(log: Path) -> list[dict[str, Any]]:
    """The JSON lines a logging hook wrote (one per run)."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def logging_hook(path: Path, log: Path, then: str = "") -> Path:
    """A Python hook that appends its stdin JSON (and its environment's agentcli names) to
    `log`, then runs `then`."""
    body = (
        "data['env'] = {k: os.environ.get(k) for k in "
        "('AGENTCLI_PROJECT_DIR', 'CLAUDE_PROJECT_DIR', 'AGENTCLI_SESSION_ID')}\n"
        f"with open({str(log)!r}, 'a') as out:\n"
        "    out.write(json.dumps(data) + '\\n')\n"
    )
    return python_hook(path, body + then)
