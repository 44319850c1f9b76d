"""What the subagent tests share: scripted models that answer the parent and each subagent by the
shape of the request (a subagent's system prompt names it), sessions opened as `run` opens them
(real journal, real tools, real workspace), and agent definition files."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from agentcli.events import Event, EventSink
from agentcli.messages import TextBlock, ToolResultBlock
from agentcli.model import ModelRequest, ModelResponse
from agentcli.permissions import Prompter
from agentcli.session.live import LiveSession
from agentcli.session.options import SessionOptions
from agentcli.testing import FunctionModel
from agentcli.ui.run import open_run_session

Answer = Callable[[ModelRequest], Awaitable[ModelResponse] | ModelResponse]

MODEL = "claude-haiku-5-5"
"""A model with a known price, so costs are numbers."""


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    # `~/.claude/agents` is read as the user's: never the real user's in a test.
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))


def agent_of(request: ModelRequest) -> str | None:
    """The subagent type a request comes from (None: the parent's)."""
    marker = "You are running as the `"
    if marker not in request.system:
        return None
    return request.system.split(marker, 1)[1].split("`", 1)[0]


def agent_of_body(body: dict[str, Any]) -> str | None:
    """The same, for a request the fake Messages API recorded."""
    system = body.get("system")
    text = system if isinstance(system, str) else " ".join(b.get("text", "") for b in system or [])
    marker = "You are running as the `"
    return text.split(marker, 1)[1].split("`", 1)[0] if marker in text else None


def results(request: ModelRequest) -> list[ToolResultBlock]:
    """The tool results of the request's last message."""
    return [b for b in request.messages[-1].content if isinstance(b, ToolResultBlock)]


def last_text(request: ModelRequest) -> str:
    """The text of every block of the request's last message (results included)."""
    parts = []
    for block in request.messages[-1].content:
        if isinstance(block, ToolResultBlock):
            parts.append(block.content if isinstance(block.content, str) else str(block.content))
        elif isinstance(block, TextBlock):
            parts.append(block.text)
    return "\n".join(parts)


def open_session(
    workspace: Path,
    answer: Answer,
    *,
    events: list[Event] | None = None,
    sink: EventSink | None = None,
    prompter: Prompter | None = None,
    model: str = MODEL,
    **options: Any,
) -> tuple[LiveSession, FunctionModel]:
    """The session `agentcli run` would open in `workspace`, its model answering with
    `answer` (for the parent and every subagent alike: `agent_of` tells them apart)."""
    function = FunctionModel(answer, model=model)
    if sink is None:
        sink = events.append if events is not None else (lambda _event: None)
    live = open_run_session(
        SessionOptions(task="x", cwd=workspace, **options),
        sink,
        model_factory=lambda _name: function,
        prompter=prompter,
    )
    return live, function


def definition(workspace: Path, name: str, front: str, body: str = "Do the job.") -> Path:
    """`.agentcli/agents/NAME.md` with frontmatter `front` (YAML lines)."""
    path = workspace / ".agentcli" / "agents" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\n{front}\n---\n{body}\n")
    return path
