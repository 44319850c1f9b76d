"""The REPL on an OpenAI-compatible server: `agentcli --provider openai -m MODEL`, with no
Anthropic key, runs tasks through the real session builder and adapter (the fake server)."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from agentcli.session.options import SessionOptions
from agentcli.testing.fake_openai import FakeChatServer, call, chat_stream
from agentcli.ui.repl.app import Repl
from agentcli.ui.repl.backend import open_repl_session


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeChatServer]:
    with FakeChatServer() as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        yield fake
        assert fake.pairing_problems() == []


async def repl_run(settings: SessionOptions, keys: str) -> tuple[int, str, Repl]:
    out = io.StringIO()
    with create_pipe_input() as pipe:
        repl = Repl(
            settings,
            console=Console(file=out, width=100, markup=False, highlight=False),
            input=pipe,
            output=DummyOutput(),
            build=open_repl_session,
        )
        pipe.send_text(keys)
        code = await asyncio.wait_for(repl.run(), 30)
    return code, out.getvalue(), repl


async def test_the_repl_runs_tasks_on_the_openai_provider_without_an_anthropic_key(
    server: FakeChatServer, workspace: Path
) -> None:
    (workspace / "a.py").write_text("print('a')\n")
    server.push(
        chat_stream(tool_calls=[call("read_file", {"path": "a.py"}, id="call_r")]),
        chat_stream("It prints a."),
    )
    out = io.StringIO()
    with create_pipe_input() as pipe:
        repl = Repl(
            SessionOptions(cwd=workspace, provider="openai", model="fake-model"),
            console=Console(file=out, width=100, markup=False, highlight=False),
            input=pipe,
            output=DummyOutput(),
            build=open_repl_session,
        )
        pipe.send_text("what does a.py do\r/exit\r")
        assert await asyncio.wait_for(repl.run(), 30) == 0
    shown = out.getvalue()
    assert "ANTHROPIC_API_KEY" not in shown
    assert "It prints a." in shown
    assert [r.body["model"] for r in server.requests] == ["fake-model", "fake-model"]
    assert server.requests[1].body["messages"][-1]["tool_call_id"] == "call_r"


async def test_continuing_an_openai_session_in_the_repl_goes_back_to_its_server(
    server: FakeChatServer, workspace: Path
) -> None:
    server.push(chat_stream("The codeword is noted."), chat_stream("PELICAN."))
    first = SessionOptions(cwd=workspace, provider="openai", model="fake-model")
    code, _out, repl = await repl_run(first, "the codeword is PELICAN\r/exit\r")
    assert code == 0 and repl.session_id is not None
    # No --provider, no -m, no Anthropic key: the recorded session's own.
    code, out, again = await repl_run(
        SessionOptions(cwd=workspace, continue_=True), "what was the codeword?\r/exit\r"
    )
    assert code == 0 and again.session_id == repl.session_id, out
    assert "PELICAN." in out and "tasks need ANTHROPIC_API_KEY" not in out
    sent = server.requests[1].body["messages"]
    assert [m["content"] for m in sent[1:]] == [
        "the codeword is PELICAN",
        "The codeword is noted.",
        "what was the codeword?",
    ]
