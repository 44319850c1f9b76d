"""The model client of a session on an OpenAI-compatible server (`provider = "openai"`).

Checked before a session exists: the model must be named (agentcli's default model is
Anthropic's), and the key must be there unless the server is on this machine (a ConfigError,
exit 2, as a missing `ANTHROPIC_API_KEY` is). The HTTP client itself is made when the first
request goes out, like the Anthropic one (`model.deferred`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from agentcli.catalogue import Effort, ModelSpec
from agentcli.environment import claim_credential
from agentcli.errors import UsageError
from agentcli.model import ModelClient
from agentcli.model.deferred import DeferredModel
from agentcli.provider import OPENAI_DEFAULT_BASE_URL, Provider, openai_endpoint, recordable_url
from agentcli.settings import Settings


def openai_factory(settings: Settings, *, resumed: bool) -> Callable[[str], ModelClient]:
    """What makes the client for a model name; UsageError when no model was named (a resumed
    session names its own)."""
    if settings.origin("model") is None and not resumed:
        raise UsageError(
            "--provider openai needs a model: agentcli's default model is Anthropic's",
            hint="name the server's model with -m (e.g. -m qwen2.5-coder), AGENTCLI_MODEL or "
            "`model = …` in a config file",
        )

    # The key goes to the model server from now on: no program agentcli starts may see it,
    # confined or not, as with ANTHROPIC_API_KEY.
    claim_credential("OPENAI_API_KEY")

    def make(name: str) -> ModelClient:
        endpoint = openai_endpoint(settings.base_url)

        def build() -> ModelClient:
            from agentcli.model.openai_chat import OpenAIChatModel

            return OpenAIChatModel(name, endpoint)

        return DeferredModel(name, build)

    return make


def recorded_base_url(settings: Settings) -> dict[str, object]:
    """What a session on an OpenAI-compatible server records of where it is: the base URL,
    without any user name or password in it (and never the key)."""
    if settings.provider is not Provider.OPENAI:
        return {}
    return {"base_url": recordable_url(settings.base_url or OPENAI_DEFAULT_BASE_URL)}


def session_base_url(
    settings: Settings, recorded: Mapping[str, object] | None
) -> tuple[Settings, str | None]:
    """A resumed session goes back to the server it recorded (`recorded`: its settings) unless
    a flag or the environment (`OPENAI_BASE_URL`) names one now, as it keeps its provider and
    model; a config file's `base_url` does not move it. Returns the settings to use and, when
    they send the conversation somewhere other than where it was, what to tell the user."""
    url = recorded.get("base_url") if recorded is not None else None
    if settings.provider is not Provider.OPENAI or not isinstance(url, str):
        return settings, None
    current = settings.base_url or OPENAI_DEFAULT_BASE_URL
    if recordable_url(current) == url:
        return settings, None  # the same server (with the user:password its URL may hold)
    origin = settings.origin("base_url")
    if origin is None or origin.path is not None:
        return settings.model_copy(update={"base_url": url}), None
    return settings, (
        f"this session ran at {url}; it continues at {recordable_url(current)} ({origin}), "
        "which is sent the whole conversation"
    )


def openai_notices(spec: ModelSpec, effort: Effort | None) -> list[str]:
    """What the user should hear about running `spec` on an OpenAI-compatible server: a model
    the config does not describe (its cost is unknown), and an effort it cannot take."""
    notices: list[str] = []
    if not spec.known:
        notices.append(
            f"model {spec.id!r} is not described in your config: its cost is reported as "
            f"unknown and a {spec.context_window:,}-token context window is assumed; give its "
            f'`context_window`, `input` and `output` prices under [models."{spec.id}"] to '
            "change that"
        )
    if effort is not None and spec.effort_for(effort) is None:
        notices.append(
            f"effort {effort} is ignored: list the levels {spec.id} takes as `efforts` under "
            f'[models."{spec.id}"] to send it as reasoning_effort'
        )
    return notices
