"""Config files with values of the wrong type are a clear usage error (exit 2) naming the key and
the file, never a traceback, and never a silently misread setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcli.errors import UsageError
from agentcli.events import discard
from agentcli.session.options import SessionOptions
from agentcli.testing import ScriptedModel
from agentcli.trust import set_trusted
from agentcli.ui.run import open_run_session


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
        open_run_session(SessionOptions(task="x", cwd=workspace), discard, model_factory=factory)
    assert f"`{key}`" in caught.value.message
    assert str(path) in caught.value.message
    assert models == []  # rejected before the model (and the session) was created


def test_unknown_permission_mode_in_config_names_the_value_and_file(workspace: Path) -> None:
    path = write_config(workspace, 'permission_mode = "bogus"\n')
    with pytest.raises(UsageError) as caught:
        open_run_session(
            SessionOptions(task="x", cwd=workspace),
            discard,
            model_factory=lambda _: ScriptedModel([]),
        )
    assert "'bogus'" in caught.value.message
    assert str(path) in caught.value.message


def test_well_typed_settings_are_used(workspace: Path) -> None:
    write_config(
        workspace,
        '[acceptance]\ncommands = ["true"]\nretries = 1\ntimeout_s = 5\n'
        "[convergence]\nrepeat_limit = 4\n",
    )
    manager = open_run_session(
        SessionOptions(task="x", cwd=workspace), discard, model_factory=lambda _: ScriptedModel([])
    )
    assert manager.acceptance.commands == ("true",)
    assert manager.acceptance.retries == 1
    assert manager.acceptance.timeout_s == 5.0
    assert manager.conversation.convergence.repeat_limit == 4


def _float_settings() -> list[str]:
    from agentcli.config import leaf_fields

    return [key for key, info in leaf_fields().items() if info.annotation is float]


def test_there_are_float_settings_to_check() -> None:
    assert {"acceptance.timeout_s", "context.elide_at"} <= set(_float_settings())


@pytest.mark.parametrize("literal", ["nan", "inf", "-inf", "+nan"])
@pytest.mark.parametrize("key", _float_settings())
def test_a_non_finite_number_is_a_usage_error_for_every_float_setting(
    workspace: Path, key: str, literal: str
) -> None:
    """TOML has `nan` and `inf`: a timeout of nan would end every check at once, one of inf
    never; neither is a number anyone means."""
    section, name = key.split(".")
    path = write_config(workspace, f"[{section}]\n{name} = {literal}\n")
    with pytest.raises(UsageError) as caught:
        open_run_session(
            SessionOptions(task="x", cwd=workspace),
            discard,
            model_factory=lambda _: ScriptedModel([]),
        )
    message = caught.value.message
    assert f"`{key}`" in message and str(path) in message
    assert "must be a finite number" in message


def test_without_any_source_the_settings_are_the_validated_defaults(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No config file, variable or flag: the defaults are taken without building a validator
    (issue 35); they must be exactly what validating nothing gives (pydantic is the oracle)."""
    from agentcli.config import load_settings
    from agentcli.settings import DEFAULTS, Settings

    for variable in ("AGENTCLI_MODEL", "AGENTCLI_PROVIDER", "AGENTCLI_TRANSPORT"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.delenv("AGENTCLI_AUTO_COMPACT", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    taken = load_settings(workspace, trusted=False)
    validated = Settings.model_validate({})
    # Field by field: `==` on the whole also compares private state (provenance, a cached
    # catalogue), which differs by design.
    for name in Settings.model_fields:
        for other in (taken, DEFAULTS):
            assert getattr(other, name) == getattr(validated, name), name
            assert type(getattr(other, name)) is type(getattr(validated, name)), name
    assert taken.model_dump() == validated.model_dump()
    assert taken.origin("model") is None
    # and a source is still validated: a wrong type is refused, not taken as it is
    monkeypatch.setenv("AGENTCLI_AUTO_COMPACT", "maybe")
    with pytest.raises(UsageError):
        load_settings(workspace, trusted=False)
