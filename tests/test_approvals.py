"""Trust binds to content (issue 26, class 4): in a trusted workspace, what its own files start
unconfined (`.mcp.json` servers, `[mcp_servers]` of its `.agentcli` files) applies only as the
user approved it; changed or never approved, it is held back with a notice naming the file and
`agentcli trust`, which shows what it runs (marking what changed) and approves it. The store
(`agentcli.approvals`) is keyed by workspace, kind and file, and the sha256 of the content."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from agentcli import approvals
from agentcli.approvals import Content, Status, Subject
from agentcli.config import load_settings
from agentcli.errors import ConfigError
from agentcli.mcp.config import configured_servers
from agentcli.mcp.listing import server_lines
from agentcli.trust import set_trusted
from agentcli.ui.cli import run_app

MCP = Subject("mcp", ".mcp.json")


def write(path: Path, content: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    return path


def mcp_json(workspace: Path, **servers: str) -> Path:
    entries = {name: {"command": command, "args": ["--stdio"]} for name, command in servers.items()}
    return write(workspace / ".mcp.json", json.dumps({"mcpServers": entries}))


def config_servers(workspace: Path, **servers: str) -> Path:
    tables = "".join(f'[mcp_servers.{n}]\ncommand = "{c}"\n' for n, c in servers.items())
    return write(workspace / ".agentcli" / "config.toml", 'model = "haiku"\n' + tables)


def started(workspace: Path, trusted: bool | None = None) -> dict[str, str]:
    settings = load_settings(workspace, trusted=trusted)
    return {n: s.entry.target for n, s in configured_servers(settings, workspace).servers.items()}


# -- the store ----------------------------------------------------------------------------


def test_an_approval_binds_to_the_content(workspace: Path) -> None:
    first = Content.of(MCP, {"mcpServers": {"a": {"command": "x"}}})
    assert approvals.status(workspace, first) is Status.NEW
    approvals.approve(workspace, [first])
    assert approvals.status(workspace, first) is Status.APPROVED
    reordered = Content.of(MCP, json.loads(json.dumps({"mcpServers": {"a": {"command": "x"}}})))
    assert approvals.status(workspace, reordered) is Status.APPROVED
    changed = Content.of(MCP, {"mcpServers": {"a": {"command": "y"}}})
    assert approvals.status(workspace, changed) is Status.CHANGED
    assert approvals.approved_content(workspace, MCP) == first.data
    other_file = Content.of(Subject("mcp", ".agentcli/config.toml"), first.data)
    assert approvals.status(workspace, other_file) is Status.NEW


def test_an_approval_is_the_workspace_s_own(workspace: Path, tmp_path: Path) -> None:
    content = Content.of(MCP, {"mcpServers": {}})
    approvals.approve(workspace, [content])
    clone = tmp_path / "clone"
    clone.mkdir()
    assert approvals.status(clone, content) is Status.NEW
    (tmp_path / "link").symlink_to(workspace)
    assert approvals.status(tmp_path / "link", content) is Status.APPROVED  # resolved path
    assert approvals.forget(workspace) and not approvals.forget(workspace)
    assert approvals.status(workspace, content) is Status.NEW


def test_a_broken_store_is_a_config_error_naming_it(workspace: Path) -> None:
    write(approvals.store_path(), "{not json")
    with pytest.raises(ConfigError, match="approvals store"):
        approvals.status(workspace, Content.of(MCP, {}))


def _approve_many(directories: list[str]) -> None:
    for directory in directories:
        approvals.approve(Path(directory), [Content.of(MCP, {"d": directory})])


def test_concurrent_approvals_lose_none(tmp_path: Path) -> None:
    groups = [[str(tmp_path / f"{name}{i}") for i in range(10)] for name in "ab"]
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_approve_many, args=(group,)) for group in groups]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    for directory in groups[0] + groups[1]:
        content = Content.of(MCP, {"d": directory})
        assert approvals.status(Path(directory), content) is Status.APPROVED


# -- what a trusted workspace starts --------------------------------------------------------


def test_a_trusted_workspace_s_mcp_json_waits_for_approval(workspace: Path) -> None:
    path = mcp_json(workspace, docs="docs-server")
    set_trusted(workspace, True)  # trusted before approvals existed: nothing approved
    settings = load_settings(workspace)
    found = configured_servers(settings, workspace)
    assert found.servers == {}
    notice = found.notice() or ""
    assert str(path) in notice and "(docs)" in notice and "agentcli trust" in notice
    assert "you have not approved it" in notice
    assert any("not approved yet" in line for line in server_lines(found))

    assert run_app(["trust", str(workspace)]) == 0
    assert started(workspace) == {"docs": "docs-server --stdio"}

    mcp_json(workspace, docs="docs-server", evil="curl")  # a git pull, another program
    found = configured_servers(load_settings(workspace), workspace)
    assert found.servers == {}  # the whole file: what was approved is not what is there
    assert "it changed since you approved it" in (found.notice() or "")


def test_trust_project_vouches_for_the_files_as_they_are(workspace: Path) -> None:
    mcp_json(workspace, docs="docs-server")
    config_servers(workspace, notes="notes-mcp")
    assert started(workspace, trusted=True) == {
        "docs": "docs-server --stdio",
        "notes": "notes-mcp",
    }
    assert approvals.approvals(workspace) == {}  # for one run: nothing recorded


def test_config_servers_of_a_trusted_workspace_wait_for_approval(workspace: Path) -> None:
    config = config_servers(workspace, notes="notes-mcp")
    set_trusted(workspace, True)
    settings = load_settings(workspace)
    assert settings.model == "haiku"  # the rest of the file applies
    assert settings.mcp_servers == {}
    (held,) = settings.provenance.held
    assert held.path == config and held.names == ("notes",) and not held.changed
    notice = configured_servers(settings, workspace).notice() or ""
    assert str(config) in notice and "agentcli trust" in notice

    assert run_app(["trust", str(workspace)]) == 0
    assert started(workspace) == {"notes": "notes-mcp"}
    config_servers(workspace, notes="notes-mcp --debug")
    assert started(workspace) == {}
    assert load_settings(workspace).provenance.held[0].changed


def test_other_config_changes_keep_the_approval(workspace: Path) -> None:
    config = config_servers(workspace, notes="notes-mcp")
    set_trusted(workspace, True)
    assert run_app(["trust", str(workspace)]) == 0
    config.write_text('model = "sonnet"\n\n[mcp_servers.notes]\ncommand = "notes-mcp"\n')
    assert started(workspace) == {"notes": "notes-mcp"}
    assert load_settings(workspace).model == "sonnet"


def test_an_untrusted_workspace_is_unchanged_by_approvals(workspace: Path) -> None:
    mcp_json(workspace, docs="docs-server")
    approvals.approve(workspace, [Content.of(MCP, {"anything": 1})])
    found = configured_servers(load_settings(workspace), workspace)
    assert found.servers == {} and found.ignored == ["docs"]


# -- agentcli trust -------------------------------------------------------------------------


def test_trust_shows_what_the_files_start_and_marks_what_changed(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mcp_json(workspace, docs="docs-server", gone="old-server")
    config_servers(workspace, notes="notes-mcp")
    write(workspace / ".agentcli" / "config.local.toml", '[acceptance]\ncommands = ["pytest -q"]\n')
    assert run_app(["trust", str(workspace)]) == 0
    out = capsys.readouterr().out
    assert f"trusted: {workspace}" in out
    assert ".mcp.json: MCP servers, run unconfined (new to you)" in out
    assert "docs: docs-server --stdio" in out and "gone: old-server --stdio" in out
    assert ".agentcli/config.toml: MCP servers, run unconfined (new to you)" in out
    assert "notes: notes-mcp" in out
    assert ".agentcli/config.local.toml: acceptance checks, run in the sandbox" in out
    assert "pytest -q" in out

    mcp_json(workspace, docs="docs-server-2", added="new-server")
    assert run_app(["trust", str(workspace)]) == 0
    out = capsys.readouterr().out
    assert f"already trusted: {workspace}" in out
    assert ".mcp.json: MCP servers, run unconfined (changed since you approved it)" in out
    assert "~ docs: docs-server-2 --stdio  (was: docs-server --stdio)" in out
    assert "+ added: new-server --stdio" in out
    assert "- gone: old-server --stdio  (no longer there)" in out
    assert "config.toml: MCP servers, run unconfined\n" in out  # unchanged: no mark
    assert started(workspace) == {
        "notes": "notes-mcp",
        "docs": "docs-server-2 --stdio",
        "added": "new-server --stdio",
    }


def test_trust_refuses_a_broken_mcp_json_and_trusts_nothing(workspace: Path) -> None:
    write(workspace / ".mcp.json", "{ not json")
    assert run_app(["trust", str(workspace)]) == 2
    assert approvals.approvals(workspace) == {}
    from agentcli.trust import is_trusted

    assert not is_trusted(workspace)


def test_revoking_trust_withdraws_the_approvals(workspace: Path) -> None:
    mcp_json(workspace, docs="docs-server")
    assert run_app(["trust", str(workspace)]) == 0
    assert approvals.approvals(workspace)
    assert run_app(["trust", "--revoke", str(workspace)]) == 0
    assert approvals.approvals(workspace) == {}
    set_trusted(workspace, True)
    assert started(workspace) == {}  # trusted again: approved again first


def test_doctor_names_the_held_servers(workspace: Path) -> None:
    from agentcli.ui.doctor import doctor_lines

    mcp_json(workspace, docs="docs-server")
    set_trusted(workspace, True)
    report = "\n".join(doctor_lines(workspace))
    assert "docs (not started: not approved" in report and "agentcli trust" in report
