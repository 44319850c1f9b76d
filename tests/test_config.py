"""Config files with values of the wrong type are a clear usage error (exit 2) naming the key and
the file, never a traceback, and never a silently misread setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcli.errors import UsageError
from agentcli.events import discard
from agentcli.testing import ScriptedModel
from agentcli.trust import set_trusted
from agentcli.ui.run import RunOptions, build_manager


def write_config(workspace: Path, text: str) -> Path:
    path = workspace / ".agentcli" / "config.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    set_trusted(workspace, True)  # an untrusted workspace's file could not set these at all
    return path


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('[acceptance]\ntimeout_s = "x"\n', "acceptance.timeout_s"),
        ("[acceptance]\ntimeout_s = -1\n", "acceptance.timeout_s"),
        ('[acceptance]\nretries = "x"\n', "acceptance.retries"),
        ("[acceptance]\nretries = 1.5\n", "acceptance.retries"),
        # A string is not a list: iterating it would run one check per character.
        ('[acceptance]\ncommands = "make"\n', "acceptance.commands"),
        ('[convergence]\nrepeat_limit = "a"\n', "convergence.repeat_limit"),
        ("[convergence]\nfailure_limit = 0\n", "convergence.failure_limit"),
        ("model = 3\n", "model"),
    ],
)
def test_wrong_typed_setting_is_a_usage_error_naming_key_and_file(
    workspace: Path, toml: str, key: str
) -> None:
    path = write_config(workspace, toml)
    models: list[str] = []

    def factory(name: str) -> ScriptedModel:
        models.append(name)
        return ScriptedModel([])

    with pytest.raises(UsageError) as caught:
        build_manager(RunOptions(task="x", cwd=workspace), discard, model_factory=factory)
    assert f"`{key}`" in caught.value.message
    assert str(path) in caught.value.message
    assert models == []  # rejected before the model (and the session) was created


def test_unknown_permission_mode_in_config_names_the_value_and_file(workspace: Path) -> None:
    path = write_config(workspace, 'permission_mode = "bogus"\n')
    with pytest.raises(UsageError) as caught:
        build_manager(
            RunOptions(task="x", cwd=workspace), discard, model_factory=lambda _: ScriptedModel([])
        )
    assert "'bogus'" in caught.value.message
    assert str(path) in caught.value.message


def test_well_typed_settings_are_used(workspace: Path) -> None:
    write_config(
        workspace,
        '[acceptance]\ncommands = ["true"]\nretries = 1\ntimeout_s = 5\n'
        "[convergence]\nrepeat_limit = 4\n",
    )
    manager = build_manager(
        RunOptions(task="x", cwd=workspace), discard, model_factory=lambda _: ScriptedModel([])
    )
    assert manager.acceptance.commands == ("true",)
    assert manager.acceptance.retries == 1
    assert manager.acceptance.timeout_s == 5.0
    assert manager.convergence.repeat_limit == 4
