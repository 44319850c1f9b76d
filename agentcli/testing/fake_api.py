"""A fake Anthropic Messages API on 127.0.0.1 that speaks the real wire protocol.

It serves scripted responses in order (SSE streams with real framing, JSON errors, raw recorded
bodies, streams cut mid-way), or chosen by each request's shape (`answer_by`: a subagent's
request by its system prompt, say), records every request, and checks each request for
tool_use / tool_result pairing. Point the real SDK (or the real `agentcli` binary) at
`server.base_url`.

    with FakeMessagesServer() as server:
        server.push(stream_message([text("hi")]))
        ...  # run agentcli with ANTHROPIC_BASE_URL=server.base_url
        assert server.pairing_problems() == []

Strict by default: every request is checked against the request rules of the model it names
(`agentcli.testing.strict`) and refused as the API would refuse it (400, or 404 for a model the
API does not serve), without using up a scripted response; thinking blocks it serves are signed
for the model and transcript. A server that refused anything fails the `with` block it was
used in, unless the test took the refusals (`take_refusals()`). `strict=False` serves anything.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from agentcli.messages import pairing_problems

# Re-exported: tests build their scripts from this one module.
from agentcli.testing.fake_responses import (
    FakeResponse as FakeResponse,
)
from agentcli.testing.fake_responses import (
    HangResponse as HangResponse,
)
from agentcli.testing.fake_responses import (
    RawResponse as RawResponse,
)
from agentcli.testing.fake_responses import (
    RecordedRequest as RecordedRequest,
)
from agentcli.testing.fake_responses import (
    SseResponse as SseResponse,
)
from agentcli.testing.fake_responses import (
    compaction as compaction,
)
from agentcli.testing.fake_responses import (
    error_response as error_response,
)
from agentcli.testing.fake_responses import (
    message_events as message_events,
)
from agentcli.testing.fake_responses import (
    next_id as next_id,
)
from agentcli.testing.fake_responses import (
    raw_sse as raw_sse,
)
from agentcli.testing.fake_responses import (
    stream_message as stream_message,
)
from agentcli.testing.fake_responses import (
    text as text,
)
from agentcli.testing.fake_responses import (
    thinking as thinking,
)
from agentcli.testing.fake_responses import (
    tool_use as tool_use,
)
from agentcli.testing.scripted_server import ScriptedHandler, ScriptedServer
from agentcli.testing.strict import ModelRules, Refusal, check_request, rules_for
from agentcli.testing.strict_thinking import sign_thinking


class FakeMessagesServer(ScriptedServer[FakeResponse]):
    """Serves scripted responses to POST /v1/messages in order, then `responder`'s (e.g.
    `agentcli.testing.by_prompt.ByPrompt`); records every request.

    `strict` checks each request against its model's rules first; `models` adds (or changes)
    the rules of models, e.g. one a test configures in agentcli's `[models]`."""

    def __init__(
        self,
        *,
        strict: bool = True,
        models: dict[str, ModelRules] | None = None,
        responder: Callable[[RecordedRequest], FakeResponse | None] | None = None,
    ) -> None:
        super().__init__(_make_handler(self), responder=responder)
        self.strict = strict
        self.models = dict(models or {})
        self.refusals: list[tuple[RecordedRequest, Refusal]] = []
        """Requests strict mode refused, with why."""

    def _next(self, request: RecordedRequest) -> FakeResponse:
        refusal = check_request(request.body, self.models) if self.strict else None
        betas = request.headers.get("anthropic-beta", "")
        if refusal is None and self.strict and "context_management" in request.body:
            if "compact-2026-01-12" not in betas:
                refusal = Refusal(
                    400,
                    "invalid_request_error",
                    "context_management: Extra inputs are not permitted (the compact-2026-01-12 "
                    "beta is not enabled)",
                )

        def refuse() -> FakeResponse | None:
            if refusal is None:
                return None
            self.refusals.append((request, refusal))
            return error_response(refusal.status, refusal.type, refusal.message)

        response = self._take(request, refuse)
        if response is None:
            return error_response(
                400,
                "invalid_request_error",
                "fake server: no scripted response left for this request",
            )
        return response if refusal is not None else self._signed(response, request)

    def _signed(self, response: FakeResponse, request: RecordedRequest) -> FakeResponse:
        found = rules_for(request.body.get("model"), self.models)
        if not self.strict or found is None or not isinstance(response, SseResponse):
            return response
        return replace(response, events=sign_thinking(response.events, request.body, found[0]))

    def take_refusals(self) -> list[tuple[RecordedRequest, Refusal]]:
        """The refused requests so far (a test that expects refusals takes them, so leaving
        the server does not fail)."""
        with self._lock:
            taken, self.refusals = self.refusals, []
        return taken

    def pairing_problems(self) -> list[str]:
        """tool_use/tool_result pairing problems over every recorded request."""
        return self._problems_of(pairing_problems)

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.stop()
        if exc_type is None and self.refusals:
            raise AssertionError(
                "the fake Messages API (strict) refused requests: "
                + "; ".join(f"{r.status} {r.message}" for _request, r in self.refusals)
            )


class _Handler(ScriptedHandler):
    owner: FakeMessagesServer

    def send_stream(self, response: SseResponse) -> None:
        self.start_stream(response.headers)
        for count, (kind, data) in enumerate(response.events):
            if response.stall_after is not None and count >= response.stall_after:
                return self.hold_until_closing()
            if response.cut_after is not None and count >= response.cut_after:
                return self.cut()
            self.send_frame(f"event: {kind}\ndata: {data}\n\n")
            if response.delay_s:
                time.sleep(response.delay_s)
        self.end_stream()


def _make_handler(owner: FakeMessagesServer) -> type[ScriptedHandler]:
    return type("Handler", (_Handler,), {"owner": owner})
