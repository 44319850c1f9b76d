"""One fake Messages API for many concurrent clients, each on its own script: the responder
that answers a request from the task it belongs to.

A task's prompt names its script as `[KEY]`; a request whose first user message holds `[KEY]`
gets that script's Nth step, N being the number of assistant messages in the request's history
(so a resumed session goes on where its history stopped, and a request repeated after a broken
stream gets the same step again). A step is a response, or a function returning one (called
when the request arrives: it may wait, to hold one client at a known point).

    scripts = ByPrompt({"fix": [stream_message([tool_use(...)]), stream_message([text("done")])]})
    with FakeMessagesServer(responder=scripts) as server:
        ...  # agentcli run "[fix] make the test pass"
    assert scripts.served("fix", 0) == 1
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentcli.testing.fake_responses import FakeResponse, RecordedRequest, error_response

Step = FakeResponse | Callable[[], FakeResponse]


class ByPrompt:
    """Answers each request from the script whose `[KEY]` its first user message holds."""

    def __init__(self, scripts: Mapping[str, Sequence[Step]]) -> None:
        self.scripts = {key: list(steps) for key, steps in scripts.items()}
        self._served: Counter[tuple[str, int]] = Counter()
        self._lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> FakeResponse:
        messages = request.body.get("messages") or []
        key = self._key_of(messages)
        if key is None:
            return error_response(400, "invalid_request_error", "fake server: no [KEY] script")
        step = sum(1 for message in messages if message.get("role") == "assistant")
        script = self.scripts[key]
        if step >= len(script):
            return error_response(
                400, "invalid_request_error", f"fake server: script {key!r} has no step {step}"
            )
        with self._lock:
            self._served[(key, step)] += 1
        answer = script[step]
        return answer() if callable(answer) else answer

    def served(self, key: str, step: int) -> int:
        """How many requests got step `step` of script `key`."""
        with self._lock:
            return self._served[(key, step)]

    def _key_of(self, messages: Sequence[dict[str, Any]]) -> str | None:
        first = next((m for m in messages if m.get("role") == "user"), None)
        if first is None:
            return None
        content = first.get("content")
        if isinstance(content, str):
            said = content
        else:
            said = "\n".join(str(b.get("text", "")) for b in content or [] if isinstance(b, dict))
        found = [key for key in self.scripts if f"[{key}]" in said]
        return max(found, key=len) if found else None
