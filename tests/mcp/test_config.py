"""Where MCP servers come from: `[mcp_servers.NAME]`, `.mcp.json` (trusted workspaces only),
`--mcp-config FILE`; merged by name, `${VAR}` expanded; broken files named with their key."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcli.config import load_settings
from agentcli.errors import ConfigError, UsageError
from agentcli.mcp.config import MissingVariable, configured_servers, expand
from agentcli.mcp_entry import ServerEntry
from agentcli.trust import set_trusted
from agentcli.ui.trust_command import trust_command
from tests.mcp.conftest import DEMO, stdio, user_config, write_servers


def trust(workspace: Path) -> None:
    """`agentcli trust`: the workspace trusted, and what its files start approved as it is."""
    assert trust_command(workspace) == 0


def servers_of(workspace: Path, *files: Path, trust_project: bool = False) -> dict[str, str]:
    settings = load_settings(workspace, trusted=True if trust_project else None)
    found = configured_servers(settings, workspace, files)
    return {name: config.source for name, config in found.servers.items()}


def test_no_configuration_means_no_servers(workspace: Path) -> None:
    settings = load_settings(workspace)
    found = configured_servers(settings, workspace)
    assert found.servers == {} and found.notice() is None


def test_the_user_config_tables_are_servers(workspace: Path) -> None:
    path = user_config(
        '[mcp_servers.docs]\ncommand = "docs-server"\nargs = ["--stdio"]\n'
        '[mcp_servers.remote]\nurl = "https://example.invalid/mcp"\n'
        'headers = { Authorization = "Bearer ${TOKEN}" }\ntrust_read_only = true\n'
    )
    settings = load_settings(workspace)
    found = configured_servers(settings, workspace)
    assert {n: c.source for n, c in found.servers.items()} == {
        "docs": str(path),
        "remote": str(path),
    }
    assert found.servers["docs"].entry.transport == "stdio"
    assert found.servers["remote"].entry.transport == "http"
    assert found.servers["remote"].entry.trust_read_only


def test_mcp_json_applies_only_in_a_trusted_workspace(workspace: Path) -> None:
    project = write_servers(
        workspace / ".mcp.json", {"fs": stdio(DEMO), "github": {"url": "http://127.0.0.1:1/"}}
    )
    settings = load_settings(workspace)
    found = configured_servers(settings, workspace)
    assert found.servers == {}
    notice = found.notice()
    assert notice is not None
    assert str(project) in notice and "fs, github" in notice and "agentcli trust" in notice

    assert servers_of(workspace, trust_project=True) == {"fs": str(project), "github": str(project)}
    trust(workspace)
    assert servers_of(workspace) == {"fs": str(project), "github": str(project)}


def test_a_broken_mcp_json_of_an_untrusted_workspace_breaks_nothing(workspace: Path) -> None:
    (workspace / ".mcp.json").write_text("{ not json")
    found = configured_servers(load_settings(workspace), workspace)
    assert found.servers == {}
    assert "(none readable)" in (found.notice() or "")


def test_an_untrusted_workspace_config_cannot_add_servers(workspace: Path) -> None:
    config = workspace / ".agentcli" / "config.toml"
    config.parent.mkdir()
    config.write_text('[mcp_servers.evil]\ncommand = "curl"\n')
    settings = load_settings(workspace)
    assert settings.mcp_servers == {}
    assert any("mcp_servers" in item for item in settings.provenance.ignored[config])
    trust(workspace)
    assert servers_of(workspace) == {"evil": str(config)}


def test_later_sources_replace_a_server_whole(workspace: Path, tmp_path: Path) -> None:
    user_config('[mcp_servers.one]\ncommand = "from-user"\nargs = ["a"]\n')
    write_servers(workspace / ".mcp.json", {"one": {"url": "http://127.0.0.1:1/mcp"}})
    trust(workspace)
    flag = write_servers(tmp_path / "extra.json", {"two": {"command": "from-flag"}})
    settings = load_settings(workspace)
    found = configured_servers(settings, workspace, [flag])
    # The project's `one` is an HTTP server: nothing of the user's stdio entry is mixed in.
    assert found.servers["one"].entry == ServerEntry(url="http://127.0.0.1:1/mcp")
    assert found.servers["two"].source == f"--mcp-config {flag}"
    later = write_servers(tmp_path / "later.json", {"one": {"command": "from-later-flag"}})
    found = configured_servers(settings, workspace, [flag, later])
    assert found.servers["one"].entry.command == "from-later-flag"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{ nope", "is not valid JSON"),
        ('{"servers": {}}', "unknown key `servers`"),
        ('{"mcpServers": []}', "`mcpServers` must be an object"),
        ('{"mcpServers": {"a": {"comand": "x"}}}', "unknown key `mcpServers.a.comand`"),
        (
            '{"mcpServers": {"a": {"args": ["x"]}}}',
            "`mcpServers.a`: a stdio server needs `command`",
        ),
        ('{"mcpServers": {"a": {"type": "http"}}}', "`mcpServers.a`: a `http` server needs `url`"),
        ('{"mcpServers": {"a": {"command": 3}}}', "`mcpServers.a.command`"),
        ('{"mcpServers": {"a": {"command": "x", "url": "http://h"}}}', "not both"),
        ('{"mcpServers": {"a b": {"command": "x"}}}', "`mcpServers.a b`"),
        ('{"mcpServers": {"a__b": {"command": "x"}}}', "may not contain `__`"),
        # Each of these would make `mcp__NAME__TOOL` ambiguous, or leave no room for TOOL.
        ('{"mcpServers": {"a_": {"command": "x"}}}', "may not start or end with `_`"),
        ('{"mcpServers": {"_a": {"command": "x"}}}', "may not start or end with `_`"),
        ('{"mcpServers": {"a\\n": {"command": "x"}}}', "letters, digits"),
        ('{"mcpServers": {"%s": {"command": "x"}}}' % ("s" * 41), "at most 40 characters"),
        ('{"mcpServers": {"a": {"command": "x", "startup_timeout_s": 0}}}', "startup_timeout_s"),
    ],
)
def test_a_broken_file_is_an_error_naming_it_and_the_key(
    workspace: Path, tmp_path: Path, content: str, expected: str
) -> None:
    path = tmp_path / "servers.json"
    path.write_text(content)
    with pytest.raises(ConfigError) as caught:
        configured_servers(load_settings(workspace), workspace, [path])
    assert str(path) in caught.value.message
    assert expected in caught.value.message


def test_a_missing_mcp_config_file_is_a_usage_error(workspace: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError) as caught:
        configured_servers(load_settings(workspace), workspace, [tmp_path / "nope.json"])
    assert "--mcp-config" in caught.value.message and "nope.json" in caught.value.message


def test_a_broken_user_table_names_the_file_and_the_key(workspace: Path) -> None:
    path = user_config('[mcp_servers.docs]\ncomand = "x"\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(workspace)
    assert str(path) in caught.value.message
    assert "`mcp_servers.docs.comand` (did you mean `mcp_servers.docs.command`?)" in (
        caught.value.message
    )
    user_config('[mcp_servers."a.b"]\ncommand = "x"\n')
    with pytest.raises(ConfigError, match="letters, digits"):
        load_settings(workspace)


def test_variables_are_expanded_from_the_environment() -> None:
    entry = ServerEntry(
        command="${TOOL_HOME}/bin/server",
        args=["--token", "${TOKEN}", "--mode=${MODE:-fast}", "$HOME stays"],
        env={"KEY": "${TOKEN}"},
    )
    environ = {"TOOL_HOME": "/opt/t", "TOKEN": "s3cret", "MODE": ""}
    expanded = expand(entry, environ)
    assert expanded.command == "/opt/t/bin/server"
    assert expanded.args == ["--token", "s3cret", "--mode=fast", "$HOME stays"]
    assert expanded.env == {"KEY": "s3cret"}
    http = expand(
        ServerEntry(url="http://${HOST}/mcp", headers={"A": "${TOKEN}"}),
        environ | {"HOST": "127.0.0.1:9"},
    )
    assert http.url == "http://127.0.0.1:9/mcp" and http.headers == {"A": "s3cret"}
    with pytest.raises(MissingVariable, match="GITHUB_TOKEN is not set"):
        expand(ServerEntry(command="x", env={"T": "${GITHUB_TOKEN}"}), environ)


def test_agentclis_own_keys_cannot_be_expanded_into_a_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found in review: `${ANTHROPIC_API_KEY}` in a server's env, headers or URL gave it the
    key that the server's inherited environment is kept without."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "tok-secret")
    for entry in (
        ServerEntry(command="x", env={"K": "${ANTHROPIC_API_KEY}"}),
        ServerEntry(url="https://evil.example/${ANTHROPIC_AUTH_TOKEN}"),
        ServerEntry(url="https://h/mcp", headers={"X": "${ANTHROPIC_API_KEY}"}),
    ):
        with pytest.raises(MissingVariable):
            expand(entry)
    assert expand(ServerEntry(command="x", env={"K": "${ANTHROPIC_API_KEY:-none}"})).env == {
        "K": "none"
    }


def test_doctor_names_the_mcp_servers_without_starting_them(workspace: Path) -> None:
    from agentcli.ui.doctor import doctor_lines

    def mcp_line() -> str:
        return next(line for line in doctor_lines(workspace) if line.startswith("MCP servers:"))

    assert mcp_line() == "MCP servers: none"
    path = user_config('[mcp_servers.docs]\ncommand = "docs-server"\n')
    (workspace / ".mcp.json").write_text('{"mcpServers": {"planted": {"command": "evil"}}}')
    line = mcp_line()
    assert f"docs ({path})" in line
    assert f"planted (ignored: untrusted {workspace / '.mcp.json'})" in line
    (workspace / ".mcp.json").write_text("{not json")
    assert f"none readable in {workspace / '.mcp.json'} (ignored: untrusted)" in mcp_line()
    set_trusted(workspace, True)  # now it would be started: broken, it is an error to fix
    assert "cannot be read" in mcp_line() and ".mcp.json" in mcp_line()
