"""Scripted models for long sessions: a worker that reads files turn after turn and reports a
context that grows with what it was sent, and the summaries it writes when asked for one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from agentcli.context.handoff import HANDOFF_SYSTEM
from agentcli.messages import Message
from agentcli.model import ModelRequest, ModelResponse
from agentcli.testing import FunctionModel, respond, text, tool_use
from agentcli.usage import Usage

SUMMARY = "SUMMARY: the goal is to read every file; f0..fN were read; nothing failed."


def is_summary_request(request: ModelRequest) -> bool:
    return request.system == HANDOFF_SYSTEM


def sent_chars(request: ModelRequest) -> int:
    return len(request.system) + sum(len(str(m.to_wire())) for m in request.messages)


def sent_tokens(request: ModelRequest) -> int:
    """A stand-in tokenizer: 4 characters of what was sent make a token."""
    return sent_chars(request) // 4


@dataclass
class Worker:
    """Each turn reads one more file (`dump`); after `turns` turns it answers `done`. Each
    response reports a context as large as what it was sent (4 characters a token). A summary
    request gets `summary(request)` (a string, or a ModelResponse for a failure)."""

    turns: int
    result_chars: int = 4_000
    tool: str = "dump"
    summary: Callable[[ModelRequest], str | ModelResponse] = lambda _request: SUMMARY
    summary_usage: Usage = field(default_factory=lambda: Usage(input_tokens=500, output_tokens=50))
    done: int = 0
    requests: list[ModelRequest] = field(default_factory=list)
    summaries: list[ModelRequest] = field(default_factory=list)

    def __call__(self, request: ModelRequest) -> ModelResponse:
        if is_summary_request(request):
            self.summaries.append(request)
            answer = self.summary(request)
            if isinstance(answer, ModelResponse):
                return answer
            return respond(text(answer), usage=self.summary_usage)
        self.requests.append(request)
        usage = Usage(input_tokens=sent_tokens(request), output_tokens=10)
        if self.done + 1 >= self.turns:
            return respond(text("done"), usage=usage)
        call = tool_use(
            self.tool, {"path": f"f{self.done}.py", "size": self.result_chars}, id=f"t{self.done}"
        )
        self.done += 1
        return respond(text(f"reading f{self.done - 1}.py"), call, usage=usage)

    def model(self, name: str = "claude-sonnet-4-5") -> FunctionModel:
        return FunctionModel(self, model=name)


def summary_text(message: Message) -> str:
    return message.text
