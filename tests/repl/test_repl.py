"""The whole REPL in-process: real prompt-toolkit input (a pipe), a real ConversationManager
with a scripted model and a real file-writing tool, and the rich output on a plain console."""

from __future__ import annotations

import asyncio
import io
import os
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from agentcli.catalogue import Effort
from agentcli.config import data_home
from agentcli.conversation import ConversationManager
from agentcli.events import EventSink
from agentcli.messages import pairing_problems
from agentcli.model import ModelRequest, ModelResponse
from agentcli.permissions import PermissionMode, Prompter
from agentcli.permissions.basic import ModePolicy
from agentcli.session.live import LiveSession, SessionParts
from agentcli.session.options import SessionOptions
from agentcli.settings import Transport
from agentcli.store import MemoryJournal
from agentcli.testing import FunctionModel, ScriptedModel, respond, text, tool_use
from agentcli.tools.base import PermissionTarget, Risk, Tool, ToolContext, ToolInput, ToolOutput
from agentcli.ui.repl.app import Repl


class CreateInput(ToolInput):
    path: str


class CreateFile(Tool[CreateInput]):
    """A minimal write tool: enough to make the policy ask."""

    name = "create_file"
    description = "Create an empty file."
    input_model = CreateInput
    risk = Risk.WRITE

    def permission_target(self, args: CreateInput, ctx: ToolContext) -> PermissionTarget:
        return PermissionTarget(
            rule_class="write", subject=args.path, summary=f"create {args.path}"
        )

    async def call(self, args: CreateInput, ctx: ToolContext) -> ToolOutput:
        (ctx.workspace / args.path).write_text("")
        return ToolOutput(text=f"created {args.path}")


Model = ScriptedModel | FunctionModel


class Harness:
    def __init__(self, workspace: Path, model: Model, pipe: PipeInput) -> None:
        self.out = io.StringIO()
        self.model = model
        self.managers: list[ConversationManager] = []
        self.models_asked: list[str | None] = []
        self.manager_tools: list[Tool[Any]] = [CreateFile()]
        self.repl = Repl(
            SessionOptions(cwd=workspace),
            console=Console(file=self.out, width=80, markup=False, highlight=False),
            input=pipe,
            output=DummyOutput(),
            build=self.build,
        )

    def build(self, options: SessionOptions, events: EventSink, prompter: Prompter) -> LiveSession:
        """The session the REPL opens (the model asked for is recorded), and the ones `/clear`
        starts; `/model` asks for a client by name (recorded too)."""
        self.models_asked.append(options.model)

        def manager() -> ConversationManager:
            made = ConversationManager(
                model=self.model,
                tools=list(self.manager_tools),
                tool_context=ToolContext(workspace=self.repl.workspace, data_dir=data_home()),
                policy=ModePolicy(mode=PermissionMode(options.permission_mode or "default")),
                prompter=prompter,
                journal=MemoryJournal(),
                system="test",
                events=events,
            )
            self.managers.append(made)
            return made

        def models(name: str) -> Model:
            self.models_asked.append(name)
            return self.model

        return LiveSession(
            manager(), options=options, models=models, renew=lambda: SessionParts(manager(), models)
        )

    @property
    def text(self) -> str:
        return self.out.getvalue()


async def run_repl(
    workspace: Path,
    model: Model,
    keys: str,
    during: Callable[[Harness], Awaitable[None]] | None = None,
) -> Harness:
    with create_pipe_input() as pipe:
        harness = Harness(workspace, model, pipe)
        pipe.send_text(keys)
        runner = asyncio.create_task(harness.repl.run())
        if during is not None:
            await during(harness)
        assert await asyncio.wait_for(runner, 15) == 0
    return harness


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")


async def test_task_with_permission_prompt_then_commands(workspace: Path) -> None:
    model = ScriptedModel(
        [
            respond(text("I will create it."), tool_use("create_file", {"path": "new.txt"})),
            respond(text("Created **new.txt**.")),
        ]
    )
    keys = "make new.txt\r" + "y" + "/cost\r" + "/mode auto\r" + "/nope\r" + "/exit\r"
    harness = await run_repl(workspace, model, keys)
    out = harness.text
    assert (workspace / "new.txt").exists()
    assert "create_file wants to create new.txt" in out
    assert "✓ create_file new.txt" in out
    assert "Created new.txt." in out  # rendered markdown, not **raw**
    assert "● task unverified" in out and "proposed 1 · executed 1" in out
    assert "this session: 1 task " in out
    assert "permission mode: auto" in out
    assert harness.managers[0].policy.mode is PermissionMode.AUTO  # type: ignore[attr-defined]
    assert "unknown command /nope" in out and "/help" in out
    assert pairing_problems([m.to_wire() for m in harness.managers[0].messages]) == []
    assert "Traceback" not in out


async def test_denial_with_reason_reaches_the_model(workspace: Path) -> None:
    model = ScriptedModel(
        [respond(tool_use("create_file", {"path": "x.txt"})), respond(text("ok, skipped"))]
    )
    await run_repl(workspace, model, "make x.txt\r" + "n" + "not today\r" + "\x04")
    assert not (workspace / "x.txt").exists()
    result = model.requests[1].messages[-1].content[0]
    assert result.is_error and "not today" in result.content  # type: ignore[union-attr]


async def test_ctrl_c_cancels_the_task_not_the_repl(workspace: Path) -> None:
    started = asyncio.Event()

    async def slow(request: ModelRequest) -> ModelResponse:
        if len(model.requests) == 1:
            started.set()
            await asyncio.sleep(60)
        return respond(text("second answer"))

    model = FunctionModel(slow)

    async def interrupt(harness: Harness) -> None:
        await asyncio.wait_for(started.wait(), 10)
        os.kill(os.getpid(), signal.SIGINT)

    harness = await run_repl(
        workspace, model, "hang please\r" + "next question\r" + "/exit\r", during=interrupt
    )
    out = harness.text
    assert "cancelling…" in out and "■ task cancelled" in out
    assert "second answer" in out  # the REPL went on with the next message
    history = harness.managers[0].messages
    assert [m.role for m in history] == ["user", "user", "assistant"]
    assert pairing_problems([m.to_wire() for m in history]) == []


async def test_empty_ctrl_c_hints_and_unknown_key_is_reported(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    harness = await run_repl(workspace, ScriptedModel([]), "\x03" + "do something\r" + "\x04")
    out = harness.text
    assert "ANTHROPIC_API_KEY is not set" in out
    assert "(to exit, press Ctrl-D or type /exit)" in out
    assert "tasks need ANTHROPIC_API_KEY" in out
    assert harness.managers == []  # nothing was built, nothing was sent


async def test_clear_starts_a_new_session_and_model_switch(workspace: Path) -> None:
    model = ScriptedModel([respond(text("one")), respond(text("two"))])
    keys = "first\r" + "/clear\r" + "/model claude-haiku-4-5\r" + "second\r" + "/exit\r"
    harness = await run_repl(workspace, model, keys)
    first, second = harness.managers
    assert first.session_id != second.session_id
    assert len(model.requests[1].messages) == 1  # the new session starts empty
    assert "new session" in harness.text and "model: claude-haiku-4-5" in harness.text
    assert harness.models_asked == [None, "claude-haiku-4-5"]


async def test_effort_and_model_aliases(workspace: Path) -> None:
    model = ScriptedModel([respond(text("one")), respond(text("two"))])
    keys = (
        "/effort\r"
        + "first\r"
        + "/effort high\r"
        + "/effort extreme\r"
        + "second\r"
        + "/model sonnet\r"
        + "/model claude-opus-4-6\r"
        + "/effort xhigh\r"
        + "/exit\r"
    )
    harness = await run_repl(workspace, model, keys)
    out = harness.text
    assert "effort: medium (the model's default)" in out
    assert [r.effort for r in model.requests] == [None, Effort.HIGH]
    assert "unknown effort 'extreme'" in out
    assert "model: claude-sonnet-5-5" in out
    assert "claude-opus-4-6 has no effort level xhigh" in out and "using high" in out
    assert harness.repl.options.effort == "xhigh"


async def test_deferred_model_takes_the_warmed_client_and_closes_it() -> None:
    from agentcli.events import discard
    from agentcli.session import clients

    class Client:
        model = "claude-test"
        closed = False

        async def complete(self, request: ModelRequest, on_event: EventSink) -> ModelResponse:
            return respond(text("warm"))

        async def aclose(self) -> None:
            self.closed = True

    client = Client()
    key = clients._warm_key("claude-test", Transport.HTTP)
    clients._warm_clients[key] = client  # what warm_model leaves for the first task
    model = clients.make_model("claude-test")
    request = ModelRequest(system="s", messages=(), tools=(), max_tokens=10)
    response = await model.complete(request, discard)
    assert response.message.text == "warm"
    assert key not in clients._warm_clients  # taken, not shared
    await model.aclose()
    assert client.closed


async def test_a_warmed_client_is_never_taken_for_another_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The REPL warms a client for the server and key in the environment then; a session that
    starts later with another base URL (or key) makes its own instead of talking to the old."""
    from agentcli.model.deferred import DeferredModel
    from agentcli.session import clients

    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/a")
    clients.warm_model("claude-test")
    warmed = clients._warm_key("claude-test", Transport.HTTP)
    assert warmed in clients._warm_clients
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/b")
    model = clients.make_model("claude-test")
    assert isinstance(model, DeferredModel)
    made = await model.client()
    assert made is not clients._warm_clients[warmed]  # still there: not this session's
    await model.aclose()
    await clients._warm_clients.pop(warmed).aclose()


async def test_a_session_that_fails_to_build_is_reported_and_the_repl_goes_on(
    workspace: Path,
) -> None:
    def broken(settings: SessionOptions, events: EventSink, prompter: Prompter) -> Any:
        raise OSError("disk full")

    out = io.StringIO()
    with create_pipe_input() as pipe:
        repl = Repl(
            SessionOptions(cwd=workspace),
            console=Console(file=out, width=80, markup=False, highlight=False),
            input=pipe,
            output=DummyOutput(),
            build=broken,
        )
        pipe.send_text("do something\r/help\r/exit\r")
        assert await asyncio.wait_for(repl.run(), 15) == 0
    assert "internal error: OSError: disk full" in out.getvalue()
    assert "Show commands and keys." in out.getvalue()


def test_the_repl_runs_with_the_garbage_collector_on(tmp_path: Path) -> None:
    """The entry point parses REPL options with the collector off; the REPL turns it back on
    (an hours-long session must not keep every reference cycle)."""
    import gc

    from agentcli.ui.repl.main import main

    gc.disable()
    try:
        assert main(SessionOptions(cwd=tmp_path / "missing")) == 2  # fails before the terminal
        assert gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()


async def test_switching_to_yolo_says_that_nothing_asks_or_is_sandboxed(workspace: Path) -> None:
    harness = await run_repl(workspace, ScriptedModel([]), "/mode yolo\r/mode auto\r/exit\r")
    out = harness.text
    assert "permission mode: yolo" in out
    assert "nothing asks any more and nothing runs in the OS sandbox" in out
    assert out.count("nothing asks any more") == 1  # said for yolo only
