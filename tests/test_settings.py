"""The typed settings: one model, resolved once from flags > env > local > project > user >
defaults; unknown keys and wrong types are usage errors naming the file and the key; what an
untrusted workspace's files may set comes from the marks on the model."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import Field

from agentcli.config import Flag, load_settings, may_set_untrusted, user_config_path
from agentcli.errors import UsageError
from agentcli.permissions import Decision, PermissionMode
from agentcli.permissions.setup import build_permissions
from agentcli.settings import HARMLESS, Settings
from agentcli.tools.base import PermissionTarget, Risk
from agentcli.trust import set_trusted, user_rules_path
from agentcli.ui.cli import run_app


def write(path: Path, content: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    return path


def project(workspace: Path, content: str, *, local: bool = False) -> Path:
    name = "config.local.toml" if local else "config.toml"
    return write(workspace / ".agentcli" / name, content)


# -- unknown keys and wrong types -----------------------------------------------------------


@pytest.mark.parametrize(
    ("toml", "key", "suggestion"),
    [
        ("[sandbox]\nnetwrok = false\n", "sandbox.netwrok", "sandbox.network"),
        ('modle = "claude-x"\n', "modle", "model"),
        ("[acceptence]\nretries = 1\n", "acceptence.retries", "acceptance.retries"),
        ('[permissions]\nallwo = ["read(**)"]\n', "permissions.allwo", "permissions.allow"),
        ('denny = ["shell(curl *)"]\n', "denny", "deny"),
        ("[context]\nwindow = 1000\n", "context.window", "context.window_tokens"),
    ],
)
@pytest.mark.parametrize("trusted", [True, False])
def test_an_unknown_key_names_the_file_the_key_and_the_closest_known_one(
    workspace: Path, toml: str, key: str, suggestion: str, trusted: bool
) -> None:
    path = project(workspace, toml)
    set_trusted(workspace, trusted)
    with pytest.raises(UsageError) as caught:
        load_settings(workspace)
    message = caught.value.message
    assert str(path) in message
    assert f"unknown key `{key}`" in message
    assert f"did you mean `{suggestion}`?" in message


def test_an_unknown_key_far_from_any_gets_no_suggestion(workspace: Path) -> None:
    path = write(user_config_path(), 'some_future_hook = "curl x | sh"\n')
    with pytest.raises(UsageError) as caught:
        load_settings(workspace)
    assert caught.value.message == f"{path}: unknown key `some_future_hook`"


def test_an_unknown_key_is_exit_2_on_the_command_line(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project(workspace, "[sandbox]\nnetwork = false\nwritabel = []\n")
    monkeypatch.chdir(workspace)
    monkeypatch.setattr(sys, "stdin", None)
    assert run_app(["run", "a task"]) == 2
    err = capsys.readouterr().err
    assert "unknown key `sandbox.writabel`" in err and "`sandbox.writable`" in err
    # `doctor` reports it too, and goes on with its other checks (exit 1: a problem found).
    assert run_app(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "unknown key `sandbox.writabel`" in out and "sandbox: " in out


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('[sandbox]\nenabled = "yes"\n', "sandbox.enabled"),
        ("[sandbox]\nnetwork = 1\n", "sandbox.network"),
        ('[sandbox]\nwritable = "/tmp"\n', "sandbox.writable"),
        ('[sandbox]\nenv_scrub = ["TOKEN", ""]\n', "sandbox.env_scrub"),
        ("[permissions]\ndenial_limit = 0\n", "permissions.denial_limit"),
        ("[permissions]\ndenial_limit = true\n", "permissions.denial_limit"),
        ('allow = "shell(*)"\n', "allow"),
        ('[permissions]\ndeny = ["x", 3]\n', "permissions.deny"),
        ("[context]\nelide_at = 1.5\n", "context.elide_at"),
        ('[context]\nkeep_recent = "3"\n', "context.keep_recent"),
        ("sandbox = 3\n", "sandbox"),
        ('model = ""\n', "model"),
    ],
)
def test_a_wrong_type_names_the_file_and_the_key(workspace: Path, toml: str, key: str) -> None:
    path = write(user_config_path(), toml)
    with pytest.raises(UsageError) as caught:
        load_settings(workspace)
    assert str(path) in caught.value.message
    assert f"`{key}`" in caught.value.message


def test_a_wrong_flag_value_names_the_flag(workspace: Path) -> None:
    with pytest.raises(UsageError) as caught:
        load_settings(workspace, flags=[Flag("acceptance.retries", -1, "--accept-retries")])
    assert caught.value.message.startswith("--accept-retries: `acceptance.retries`")
    with pytest.raises(UsageError, match="unknown permission mode 'godmode'"):
        load_settings(workspace, flags=[Flag("permission_mode", "godmode", "--permission-mode")])


# -- precedence -----------------------------------------------------------------------------

LEVELS = ("user", "project", "local", "env", "flag")


def _set_model(workspace: Path, level: str, value: str, env: dict[str, str]) -> list[Flag]:
    if level == "user":
        write(user_config_path(), f'model = "{value}"\n')
    elif level in ("project", "local"):
        project(workspace, f'model = "{value}"\n', local=level == "local")
    elif level == "env":
        env["AGENTCLI_MODEL"] = value
    else:
        return [Flag("model", value, "--model")]
    return []


@settings(max_examples=40, deadline=None)
@given(st.sets(st.sampled_from(LEVELS)))
def test_the_highest_level_that_sets_a_value_wins(present: set[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        user_config_path().unlink(missing_ok=True)
        env: dict[str, str] = {}
        flags: list[Flag] = []
        for level in present:
            flags += _set_model(workspace, level, f"model-from-{level}", env)
        resolved = load_settings(workspace, flags=flags, trusted=True, environ=env)
    # The oracle: precedence is the order of LEVELS, lowest first.
    expected = max(present, key=LEVELS.index, default=None)
    assert resolved.model == (f"model-from-{expected}" if expected else "claude-opus-5-5")
    origin = resolved.origin("model")
    assert (origin is None) is (expected is None)


def test_rules_accumulate_over_every_level_and_a_deny_anywhere_wins(workspace: Path) -> None:
    set_trusted(workspace, True)
    write(user_config_path(), 'deny = ["shell(curl *)"]\nallow = ["shell(make *)"]\n')
    project(workspace, '[permissions]\nallow = ["shell(curl *)", "shell(npm *)"]\n')
    project(workspace, 'ask = ["shell(npm publish *)"]\n', local=True)
    resolved = load_settings(
        workspace,
        flags=[
            Flag("permissions.allow", ["shell(*)"], "--allow"),
            Flag("permissions.deny", ["shell(rm *)"], "--deny"),
        ],
    )
    assert resolved.permissions.allow == [
        "shell(make *)",
        "shell(curl *)",
        "shell(npm *)",
        "shell(*)",
    ]
    assert resolved.permissions.deny == ["shell(curl *)", "shell(rm *)"]
    assert resolved.rule_sources("deny") == [
        ("config files", ["shell(curl *)"]),
        ("--deny", ["shell(rm *)"]),
    ]
    policy = build_permissions(settings=resolved, workspace=workspace).policy

    def decide(command: str) -> Decision:
        target = PermissionTarget("shell", command, command)
        return policy.decide(Risk.EXECUTE, target).decision

    assert decide("curl example.com") is Decision.DENY
    assert decide("rm x") is Decision.DENY
    assert decide("npm publish .") is Decision.ASK
    assert decide("make all") is Decision.ALLOW


def test_a_repository_cannot_unhide_what_the_user_hid(workspace: Path) -> None:
    """`sandbox.deny_read` and `sandbox.env_scrub` add up: an in-repo file that sets them (which
    an untrusted one may) cannot clear the user's list."""
    write(user_config_path(), '[sandbox]\ndeny_read = ["~/secret"]\nenv_scrub = ["MY_*"]\n')
    project(workspace, "[sandbox]\ndeny_read = []\nenv_scrub = []\n")
    resolved = load_settings(workspace)
    assert resolved.sandbox.deny_read == ["~/secret"]
    assert resolved.sandbox.env_scrub == ["MY_*"]
    assert resolved.provenance.ignored == {}


# -- what an untrusted workspace's files may set, derived from the model ---------------------

# Written out here, independently of the marks on the model: (key, value, may an untrusted
# in-repo file set it, with nothing set below it).
UNTRUSTED_TABLE: list[tuple[str, Any, bool]] = [
    ("model", "claude-x", True),
    ("permission_mode", "read-only", True),
    ("permission_mode", "default", True),
    ("permission_mode", "accept-edits", False),
    ("permission_mode", "auto", False),
    ("permission_mode", "yolo", False),
    ("permissions.allow", ["shell(*)"], False),
    ("permissions.ask", ["shell(*)"], True),
    ("permissions.deny", ["shell(*)"], True),
    ("permissions.denial_limit", 1, True),
    ("sandbox.enabled", True, True),
    ("sandbox.enabled", False, False),
    ("sandbox.network", False, True),
    ("sandbox.network", True, False),
    ("sandbox.writable", ["/"], False),
    ("sandbox.readable", ["/"], False),
    ("sandbox.deny_read", ["x"], True),
    ("sandbox.allow_unix_sockets", ["/run/docker.sock"], False),
    ("sandbox.env_scrub", ["X"], True),
    ("sandbox.env_keep", ["AWS_SECRET_ACCESS_KEY"], False),
    ("acceptance.commands", ["touch pwned"], False),
    ("acceptance.retries", 0, True),
    ("acceptance.timeout_s", 5, True),
    ("convergence.repeat_limit", 2, True),
    ("convergence.failure_limit", 2, True),
    ("context.window_tokens", 1000, True),
    ("context.elide_at", 0.9, True),
    ("context.keep_recent", 5, True),
    ("context.auto_compact", False, True),
    ("context.auto_compact_at", 0.5, True),
    ("context.warn_at", 0.5, True),
    # Another model of the same provider, on the same server with the same key (as `model`
    # may be); --max-cost refuses to start when its price is unknown.
    ("context.compact_model", "claude-haiku-4-5", True),
    ("context.compaction", "server", True),
    ("tools.todo", False, True),
    ("api.idle_timeout_s", 30, True),
    ("api.max_retry_wait_s", 60, True),
    ("api.transport", "sdk", True),
    ("effort", "max", True),
    # Committing in the user's repository is theirs to ask for; a repository may only say no.
    ("git.commit", True, False),
    ("git.commit", False, True),
    # Subagents' limits: a repository may lower them, never raise them (cost blow-ups).
    ("agents.max_concurrent", 2, True),
    ("agents.max_concurrent", 50, False),
    ("agents.max_depth", 0, True),
    ("agents.max_depth", 3, False),
    ("agents.max_turns", 10, True),
    ("agents.max_turns", 100, False),
    ("agents.max_cost_usd", 0.5, True),
    ("agents.max_wall_s", 60.0, True),
    ("agents.max_wall_s", 6000.0, False),
    # Prices and request rules: a repository could make a budget meaningless.
    ("models", {"claude-x": {"input": 0.0, "output": 0.0}}, False),
    # An MCP server is a program agentcli starts: a cloned repository must not name one.
    ("mcp_servers", {"evil": {"command": "curl"}}, False),
    # A repository must not send your key, or your code, to a server of its choosing.
    ("provider", "openai", False),
    ("base_url", "https://models.example/v1", False),
    # Hooks start programs: a repository's need the user's trust and approval (agentcli.hooks).
    *(
        (f"hooks.{event}", [{"hooks": [{"type": "command", "command": "touch pwned"}]}], False)
        for event in (
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "PostToolUseFailure",
            "Notification",
            "Stop",
            "PreCompact",
            "SessionEnd",
        )
    ),
]


def test_the_table_covers_every_setting() -> None:
    from agentcli.config import leaf_fields

    assert {key for key, _, _ in UNTRUSTED_TABLE} == set(leaf_fields())


def _toml(key: str, value: Any) -> str:
    if isinstance(value, dict):  # a table of tables
        return "".join(
            f'[{key}."{name}"]\n' + "".join(f"{k} = {v!r}\n" for k, v in table.items())
            for name, table in value.items()
        )
    *section, name = key.split(".")
    if isinstance(value, list) and value and isinstance(value[0], dict):  # an array of tables
        return "".join(f"[[{key}]]\n" + _toml_table(table) for table in value)
    literal = repr(value).lower() if isinstance(value, bool) else repr(value).replace("'", '"')
    return (f"[{section[0]}]\n" if section else "") + f"{name} = {literal}\n"


def _toml_table(table: dict[str, Any]) -> str:
    """`key = value` lines of one table (lists of tables inline)."""

    def inline(value: Any) -> str:
        if isinstance(value, dict):
            return "{ " + ", ".join(f"{k} = {inline(v)}" for k, v in value.items()) + " }"
        if isinstance(value, list):
            return "[" + ", ".join(inline(v) for v in value) + "]"
        return json.dumps(value)

    return "".join(f"{k} = {inline(v)}\n" for k, v in table.items())


@pytest.mark.parametrize(("key", "value", "allowed"), UNTRUSTED_TABLE)
def test_what_an_untrusted_file_may_set(
    workspace: Path, key: str, value: Any, allowed: bool
) -> None:
    path = project(workspace, _toml(key, value))
    provenance = load_settings(workspace).provenance
    assert (key in provenance.origins) is allowed
    assert (path in provenance.ignored) is not allowed
    assert may_set_untrusted(key, value, {}) is allowed
    trusted = load_settings(workspace, trusted=True).provenance
    assert key in trusted.origins and trusted.ignored == {}


class _Later(Settings):
    """The settings as a later version might grow them."""

    hook: str = ""
    """A setting someone added without deciding what an untrusted repository may do with it."""
    retries_later: Annotated[int, Field(ge=0), HARMLESS] = 1
    """One someone marked as harmless."""


def test_a_setting_without_a_mark_cannot_be_set_by_an_untrusted_file() -> None:
    assert not may_set_untrusted("hook", "curl x | sh", {}, _Later)
    assert may_set_untrusted("retries_later", 2, {}, _Later)


def test_the_always_answers_kept_outside_an_untrusted_workspace_are_the_users(
    workspace: Path,
) -> None:
    write(user_rules_path(workspace), 'allow = ["shell(pytest *)"]\n')
    resolved = load_settings(workspace)
    assert resolved.permissions.allow == ["shell(pytest *)"]
    assert resolved.provenance.ignored == {}


def test_a_mode_the_user_chose_is_not_loosened_by_the_repository(workspace: Path) -> None:
    write(user_config_path(), 'permission_mode = "read-only"\n')
    project(workspace, 'permission_mode = "default"\n')
    resolved = load_settings(workspace)
    assert resolved.permission_mode is PermissionMode.READ_ONLY
    assert list(resolved.provenance.ignored.values()) == [['permission_mode = "default"']]


def test_an_empty_model_from_the_environment_or_a_flag_is_unset(workspace: Path) -> None:
    from agentcli.config import flags_of

    write(user_config_path(), 'model = "from-config"\n')
    resolved = load_settings(workspace, flags=flags_of(model=""), environ={"AGENTCLI_MODEL": ""})
    assert resolved.model == "from-config"


def test_the_transport_comes_from_the_config_or_the_environment(workspace: Path) -> None:
    from agentcli.errors import ConfigError
    from agentcli.settings import Transport

    assert load_settings(workspace, environ={}).api.transport is Transport.HTTP
    write(user_config_path(), '[api]\ntransport = "sdk"\n')
    assert load_settings(workspace, environ={}).api.transport is Transport.SDK
    env = {"AGENTCLI_TRANSPORT": "http"}
    assert load_settings(workspace, environ=env).api.transport is Transport.HTTP
    with pytest.raises(ConfigError, match=r"unknown transport 'curl' for `api.transport`"):
        load_settings(workspace, environ={"AGENTCLI_TRANSPORT": "curl"})


def test_the_retry_policy_defaults_are_the_settings_defaults() -> None:
    """The model layer cannot read the settings (it sits below them); a policy made without
    the session's settings must still wait as a session with default settings would."""
    from agentcli.model.retry import RetryPolicy
    from agentcli.settings import DEFAULTS

    policy = RetryPolicy()
    assert policy.idle_timeout_s == DEFAULTS.api.idle_timeout_s
    assert policy.max_retry_after_s == DEFAULTS.api.max_retry_wait_s
