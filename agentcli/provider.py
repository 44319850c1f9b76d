"""Which model API a session talks to (`--provider`), and for an OpenAI-compatible server where
it is and with which key.

`anthropic` is the Messages API (the default). `openai` is any server that speaks OpenAI's Chat
Completions API: OpenAI itself, OpenRouter, vLLM, llama.cpp's server, Ollama, LM Studio. Its
endpoint is `base_url` (config) or `OPENAI_BASE_URL`, its key `OPENAI_API_KEY`: any string for a
local server, and not needed at all when the server is on this machine (a loopback address).
Checked before a session exists, so a missing key is a configuration error (exit 2) that costs
no import of an HTTP stack. A leaf module: it imports only the error types.
"""

from __future__ import annotations

import enum
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from agentcli.errors import ConfigError

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"


class Provider(enum.StrEnum):
    """The model APIs agentcli speaks."""

    ANTHROPIC = "anthropic"
    OPENAI = "openai"


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenAIEndpoint:
    """Where an OpenAI-compatible Chat Completions server is, and the key it gets."""

    base_url: str
    """Up to and including the API version (`http://localhost:11434/v1`); requests go to
    `{base_url}/chat/completions`."""
    api_key: str | None
    """None: no `Authorization` header (allowed only for a server on this machine)."""

    @property
    def chat_url(self) -> str:
        return f"{self.base_url.rstrip('/')}/chat/completions"


def url_problem(url: str) -> str | None:
    """Why `url` cannot be a server's base URL, or None when it can."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"{url!r} is not an http:// or https:// URL"
    return None


def is_loopback(url: str) -> bool:
    """Whether `url` names a server on this machine (localhost, 127.0.0.0/8, ::1)."""
    host = (urlsplit(url).hostname or "").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def recordable_url(url: str) -> str:
    """`url` as a session may record it: without a user name or password in it (the journal
    never holds a credential) and without a trailing slash."""
    parts = urlsplit(url.rstrip("/"))
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def openai_endpoint(
    base_url: str | None, environ: Mapping[str, str] | None = None
) -> OpenAIEndpoint:
    """The endpoint from the resolved `base_url` setting (which `OPENAI_BASE_URL` also sets)
    and `OPENAI_API_KEY`; ConfigError when there is no key and the server is not local."""
    environ = os.environ if environ is None else environ
    url = base_url or environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_BASE_URL
    problem = url_problem(url)
    if problem is not None:
        raise ConfigError(
            f"the OpenAI-compatible base URL {problem}",
            hint="fix OPENAI_BASE_URL or `base_url` in your config",
        )
    key = environ.get("OPENAI_API_KEY") or None
    if key is None and not is_loopback(url):
        raise ConfigError(
            f"OPENAI_API_KEY is not set (needed for {url})",
            hint="export OPENAI_API_KEY=… (any value for a local server), or point "
            "OPENAI_BASE_URL at a server on this machine (http://localhost:PORT/v1)",
        )
    return OpenAIEndpoint(base_url=url, api_key=key)
