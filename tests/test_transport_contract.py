"""The thin transport (`model.http`) against the SDK transport (`model.anthropic`), side by side
on the same fake Messages API: the same headers where the API reads them, the same URL, the
same errors from the same responses, the same messages from real recordings."""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
import yaml

from agentcli import __version__
from agentcli.errors import ConfigError, ModelError, RetryableModelError
from agentcli.messages import Message
from agentcli.model import ModelClient, ModelRequest, ModelResponse, ToolSpec
from agentcli.model.anthropic import AnthropicModel
from agentcli.model.http import API_VERSION, HttpAnthropicModel, custom_headers
from agentcli.model.wire import status_error
from agentcli.testing.fake_api import (
    FakeMessagesServer,
    FakeResponse,
    RawResponse,
    error_response,
    raw_sse,
    stream_message,
    text,
)

REQUEST = ModelRequest(
    system="be brief — ünïcode",
    messages=[Message.user("hi")],
    tools=[ToolSpec(name="read_file", description="d", input_schema={"type": "object"})],
)

SDK_ONLY = ("x-stainless-", "user-agent")
"""What only the SDK sends: its own telemetry headers and its user agent."""
THIN_ONLY = ("user-agent", "x-api-key")
"""What only the thin transport sends: its user agent, and an API key also as `x-api-key`."""


@pytest.fixture
def server() -> Iterator[FakeMessagesServer]:
    with FakeMessagesServer() as fake:
        yield fake


@pytest.fixture(autouse=True)
def _env(server: FakeMessagesServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")


async def close(clients: dict[str, ModelClient]) -> None:
    for client in clients.values():
        await client.aclose()  # type: ignore[attr-defined]


def from_env() -> dict[str, ModelClient]:
    """One client per transport, made from the environment alone (as `make_model` makes them)."""
    return {
        "http": HttpAnthropicModel("claude-sonnet-4-5"),
        "sdk": AnthropicModel("claude-sonnet-4-5"),
    }


@pytest.fixture
async def both(_env: None) -> AsyncIterator[dict[str, ModelClient]]:
    clients = from_env()
    yield clients
    await close(clients)


async def one_each(
    server: FakeMessagesServer, both: dict[str, ModelClient], response: FakeResponse
) -> dict[str, ModelResponse | Exception]:
    """What each transport makes of the same served `response`."""
    outcome: dict[str, ModelResponse | Exception] = {}
    for name, client in both.items():
        server.push(response)
        try:
            outcome[name] = await client.complete(REQUEST, lambda _e: None)
        except (ModelError, RetryableModelError) as exc:
            outcome[name] = exc
    return outcome


def headers_sent(server: FakeMessagesServer, index: int) -> dict[str, str]:
    sent = dict(server.requests[index].headers)
    sent.pop("host")
    return sent


async def test_the_api_sees_the_same_request_from_both(
    server: FakeMessagesServer, both: dict[str, ModelClient]
) -> None:
    await one_each(server, both, stream_message([text("ok")]))
    thin, sdk = headers_sent(server, 0), headers_sent(server, 1)
    assert thin == {
        "accept": "application/json",
        "accept-encoding": "gzip, deflate",
        "anthropic-version": API_VERSION,
        "authorization": "Bearer sk-test",
        "x-api-key": "sk-test",
        "connection": "keep-alive",
        "content-length": thin["content-length"],
        "content-type": "application/json",
        "user-agent": f"agentcli/{__version__}",
    }
    assert {k: v for k, v in sdk.items() if not k.startswith(SDK_ONLY)} == {
        k: v for k, v in thin.items() if k not in THIN_ONLY
    }
    assert API_VERSION == anthropic._constants.ANTHROPIC_API_VERSION
    assert [r.path for r in server.requests] == ["/v1/messages", "/v1/messages"]
    assert server.requests[0].body == server.requests[1].body


async def test_the_auth_token_is_sent_as_the_sdk_sends_it(
    server: FakeMessagesServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "oauth-token")
    both = from_env()
    await one_each(server, both, stream_message([text("ok")]))
    assert [r.headers["authorization"] for r in server.requests] == ["Bearer oauth-token"] * 2
    assert all("x-api-key" not in r.headers for r in server.requests)
    await close(both)


async def test_the_api_key_wins_over_the_auth_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "oauth-token")
    thin = HttpAnthropicModel("claude-sonnet-4-5")
    sdk = anthropic.AsyncAnthropic()
    assert thin.headers["authorization"] == sdk.auth_headers["Authorization"] == "Bearer sk-test"
    assert thin.headers["x-api-key"] == "sk-test"
    await thin.aclose()
    await sdk.close()


@pytest.mark.parametrize("suffix", ["/proxy/anthropic", "/proxy/anthropic/"])
async def test_a_base_url_with_a_path_keeps_its_path(
    server: FakeMessagesServer, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url + suffix)
    both = from_env()
    await one_each(server, both, stream_message([text("ok")]))
    assert [r.path for r in server.requests] == ["/proxy/anthropic/v1/messages"] * 2
    await close(both)


async def test_custom_headers_from_the_environment_are_sent_by_both(
    server: FakeMessagesServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ANTHROPIC_CUSTOM_HEADERS` adds headers (e.g. `anthropic-beta`) and replaces ours."""
    monkeypatch.setenv(
        "ANTHROPIC_CUSTOM_HEADERS",
        "X-Team: core\nx-trace:  abc \nnot a header\n"
        "anthropic-beta: feature-1,feature-2\nanthropic-version: 2023-06-01",
    )
    both = from_env()
    await one_each(server, both, stream_message([text("ok")]))
    thin, sdk = headers_sent(server, 0), headers_sent(server, 1)
    assert (thin["x-team"], thin["x-trace"]) == ("core", "abc")
    assert thin["anthropic-beta"] == "feature-1,feature-2"
    assert thin["anthropic-version"] == "2023-06-01"
    assert {k: v for k, v in sdk.items() if not k.startswith(SDK_ONLY)} == {
        k: v for k, v in thin.items() if k not in THIN_ONLY
    }
    await close(both)


def _recorded(path: Path) -> RawResponse:
    data = yaml.safe_load(path.read_text())
    response = data["interactions"][0]["response"]
    body = response.get("parsed_body") or json.loads(response["body"]["string"])
    return RawResponse(status=int(response["status"]["code"]), body=json.dumps(body).encode())


ERRORS: dict[str, FakeResponse | str] = {
    "401 recorded": "20_dd_401_authentication_error.yaml",
    "404 recorded": "14_pai_404_not_found_model.yaml",
    "400 recorded": "19_dd_400_invalid_request.yaml",
    "prompt too long": error_response(
        400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"
    ),
    "403": error_response(403, "permission_error", "no"),
    "413": error_response(413, "request_too_large", "too big"),
    "408": error_response(408, "timeout_error", "slow"),
    "409": error_response(409, "conflict", "again"),
    "429 retry-after": error_response(429, "rate_limit_error", "slow down", retry_after="7"),
    "529": error_response(529, "overloaded_error", "Overloaded"),
    "500 html": RawResponse(status=500, body=b"<html>oops</html>", content_type="text/html"),
    "502 empty": RawResponse(status=502, body=b"", content_type="text/plain"),
    "418 json, not an error": RawResponse(status=418, body=b'{"teapot": true}'),
    "503 retry-after-ms": RawResponse(
        status=503, body=b"{}", headers={"retry-after-ms": "1500", "retry-after": "9"}
    ),
    "429 retry-after nan": error_response(429, "rate_limit_error", "x", retry_after="nan"),
}


def _fields(exc: ModelResponse | Exception) -> dict[str, Any]:
    assert isinstance(exc, ModelError | RetryableModelError), exc
    found = {
        key: getattr(exc, key, None)
        for key in ("message", "status_code", "error_type", "reason", "retry_after")
    }
    request_id = getattr(exc, "request_id", None)
    found["request_id"] = request_id.startswith("req_fake") if request_id else request_id
    return {"class": type(exc).__name__, **found}


@pytest.mark.parametrize("served", ERRORS.values(), ids=ERRORS.keys())
async def test_an_error_response_is_the_same_error_from_both(
    server: FakeMessagesServer,
    both: dict[str, ModelClient],
    recordings: Path,
    served: FakeResponse | str,
) -> None:
    response = _recorded(recordings / served) if isinstance(served, str) else served
    outcome = await one_each(server, both, response)
    thin, sdk = _fields(outcome["http"]), _fields(outcome["sdk"])
    assert thin == sdk
    assert thin["message"].startswith(str(thin["status_code"]))


def test_what_an_error_response_becomes() -> None:
    """The mapping itself, on the values the table above serves (so the table cannot pass with
    both transports wrong alike)."""
    html = status_error(500, {}, "<html>oops</html>\n")
    assert isinstance(html, RetryableModelError) and html.message == "500 error: <html>oops</html>"
    empty = status_error(502, {}, "")
    assert isinstance(empty, RetryableModelError) and empty.message == "502 error: Error code: 502"
    teapot = status_error(418, {"request-id": "req_1"}, '{"teapot": true}')
    assert isinstance(teapot, ModelError) and not isinstance(teapot, RetryableModelError)
    assert teapot.message == "418 error: Error code: 418 - {'teapot': True}"
    assert teapot.request_id == "req_1"
    unread = status_error(429, {"retry-after-ms": "1500", "retry-after": "9"}, None)
    assert isinstance(unread, RetryableModelError) and unread.retry_after == 1.5
    assert unread.message == "429 error: Error code: 429"
    for bad in ("nan", "inf", "-3", "soon"):
        odd = status_error(529, {"retry-after": bad}, "{}")
        assert isinstance(odd, RetryableModelError) and odd.retry_after is None


@pytest.mark.parametrize(
    ("recording", "check"),
    [
        ("01_sdk_stream_tool_use.sse", "tool call"),
        ("02_sdk_stream_tool_use_truncated_max_tokens.sse", "truncated tool input"),
    ],
)
async def test_recorded_streams_make_the_same_message_on_both(
    server: FakeMessagesServer,
    both: dict[str, ModelClient],
    recordings: Path,
    recording: str,
    check: str,
) -> None:
    outcome = await one_each(server, both, raw_sse((recordings / recording).read_text()))
    thin, sdk = outcome["http"], outcome["sdk"]
    assert isinstance(thin, ModelResponse) and isinstance(sdk, ModelResponse)
    assert thin.message == sdk.message and thin.usage == sdk.usage
    assert thin.stop_reason == sdk.stop_reason
    (call,) = thin.message.tool_uses
    if check == "truncated tool input":
        assert thin.stop_reason == "max_tokens" and not call.complete
    else:
        assert call.complete and call.input == {"location": "Paris"}


async def test_thinking_goes_back_byte_for_byte_on_both(
    server: FakeMessagesServer, both: dict[str, ModelClient], recordings: Path
) -> None:
    cassette = yaml.safe_load(
        (recordings / "08_pai_stream_thinking_signature_delta.yaml").read_text()
    )
    body = cassette["interactions"][0]["response"]["body"]["string"]
    for client in both.values():
        server.push(raw_sse(body), stream_message([text("next")]))
        first = await client.complete(REQUEST, lambda _e: None)
        history = [Message.user("hi"), first.message, Message.user("more")]
        await client.complete(ModelRequest(system="s", messages=history), lambda _e: None)
    thin_sent, sdk_sent = server.requests[1].body, server.requests[3].body
    assert thin_sent == sdk_sent
    assert thin_sent["messages"][1]["content"][0]["type"] == "thinking"
    assert thin_sent["messages"][1]["content"][0]["signature"]


def test_a_base_url_that_is_not_http_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for bad in ("api.anthropic.com", "ftp://example.com", "https://"):
        monkeypatch.setenv("ANTHROPIC_BASE_URL", bad)
        with pytest.raises(ConfigError, match="ANTHROPIC_BASE_URL is not an http"):
            HttpAnthropicModel("claude-sonnet-4-5")


def test_no_credential_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY is not set"):
        HttpAnthropicModel("claude-sonnet-4-5")


async def test_certificates_are_loaded_for_https_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain-http base URL never uses TLS: no CA bundle is read for it. An https one is
    verified as the SDK verifies it."""
    made: list[tuple[object, ssl.SSLContext]] = []
    original = httpx2._transports.default.create_ssl_context

    def recording(verify: Any = True, **kwargs: Any) -> ssl.SSLContext:
        context = original(verify=verify, **kwargs)
        made.append((verify, context))
        return context

    loads: list[object] = []
    monkeypatch.setattr(httpx2._transports.default, "create_ssl_context", recording)
    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", lambda *a, **k: loads.append(a))
    monkeypatch.setattr(ssl.SSLContext, "load_default_certs", lambda *a, **k: loads.append(a))
    plain = HttpAnthropicModel("claude-sonnet-4-5", base_url="http://127.0.0.1:9")
    assert loads == [] and [verify for verify, _ in made] == [False]
    made.clear()
    secure = HttpAnthropicModel("claude-sonnet-4-5", base_url="https://api.example.com")
    ((verify, context),) = made
    assert verify is True
    assert context.verify_mode is ssl.CERT_REQUIRED and context.check_hostname
    # Redirects are never followed (a hop elsewhere would carry the key; see below).
    assert [m._client.follow_redirects for m in (plain, secure)] == [False, False]
    await plain.aclose()
    await secure.aclose()


async def test_the_transport_setting_picks_the_client(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentcli.session.clients import anthropic_client, make_model
    from agentcli.settings import DEFAULTS, Transport

    assert DEFAULTS.api.transport is Transport.HTTP
    thin, sdk = anthropic_client("m"), anthropic_client("m", Transport.SDK)
    assert type(thin) is HttpAnthropicModel and type(sdk) is AnthropicModel
    await close({"http": thin, "sdk": sdk})
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "localhost:8080")
    with pytest.raises(ConfigError, match="not an http:// or https:// URL: 'localhost:8080'"):
        make_model("m")  # up front, before a session is opened


async def test_text_beyond_ascii_arrives_intact_on_both(
    server: FakeMessagesServer, both: dict[str, ModelClient]
) -> None:
    """The stream carries no charset: both read it as UTF-8 (the API's encoding)."""
    words = "héllo — 世界 🙂"
    outcome = await one_each(server, both, stream_message([text(words)]))
    assert [r.message.text for r in outcome.values()] == [words, words]  # type: ignore[union-attr]
    assert server.requests[0].body["system"][0]["text"] == REQUEST.system


async def test_a_redirect_is_not_followed_but_named(
    server: FakeMessagesServer, both: dict[str, ModelClient]
) -> None:
    """A redirect could lead to another host, which would get the key (`x-api-key` survives a
    cross-origin hop in httpx) and the conversation: it ends the task and says where to."""
    elsewhere = "https://api.example.com/v1/messages"
    server.push(RawResponse(status=307, body=b"", headers={"location": elsewhere}))
    with pytest.raises(ModelError) as info:
        await both["http"].complete(REQUEST, lambda _e: None)
    assert info.value.status_code == 307
    assert f"redirects to {elsewhere}: set ANTHROPIC_BASE_URL" in info.value.message
    assert len(server.requests) == 1


async def test_a_redirect_from_https_to_elsewhere_sends_nothing_there() -> None:
    """Found in review: following a 307 from https to another host sent it `x-api-key`."""
    seen: list[httpx2.Request] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(307, headers={"location": "http://evil.example.net/v1/messages"})

    model = HttpAnthropicModel("claude-sonnet-4-5", base_url="https://api.example.com")
    await model._client.aclose()
    model._client = httpx2.AsyncClient(transport=httpx2.MockTransport(answer))
    with pytest.raises(ModelError) as info:
        await model.complete(REQUEST, lambda _e: None)
    assert "redirects to http://evil.example.net/v1/messages" in info.value.message
    assert [str(r.url) for r in seen] == ["https://api.example.com/v1/messages"]
    await model.aclose()


def test_custom_headers_cannot_set_the_framing() -> None:
    sent = custom_headers(
        "Content-Length: 2\nTransfer-Encoding: chunked\nHost: x\nConnection: close\nX-Team: a"
    )
    assert sent == {"x-team": "a"}


@pytest.mark.parametrize(
    ("value", "low", "high"),
    [
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0, 0.0),  # already past: at once
        ("in a while", None, None),  # not a wait: our own backoff
        ("-5", None, None),
        ("nan", None, None),
    ],
)
def test_retry_after_may_be_an_http_date(value: str, low: float | None, high: float | None) -> None:
    error = status_error(429, {"retry-after": value}, "{}")
    assert isinstance(error, RetryableModelError)
    if low is None:
        assert error.retry_after is None
    else:
        assert error.retry_after is not None and low <= error.retry_after <= (high or 0.0)


def test_retry_after_as_a_date_an_hour_ahead_is_about_an_hour() -> None:
    import email.utils
    import time

    ahead = email.utils.formatdate(time.time() + 3600, usegmt=True)
    error = status_error(503, {"retry-after": ahead}, "{}")
    assert isinstance(error, RetryableModelError)
    assert error.retry_after is not None and 3500 < error.retry_after <= 3601
