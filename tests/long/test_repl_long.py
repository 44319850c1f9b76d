"""The REPL's side of long sessions, in-process with real prompt-toolkit input: `/compact`
(with instructions, twice in a row), `/context`, the todo checklist (Ctrl-T) and how full the
context is in the status line."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from agentcli.config import data_home
from agentcli.context import ContextSettings, ContextView
from agentcli.context.compaction import CompactionSettings
from agentcli.context.keeper import LongSession
from agentcli.conversation import ConversationManager
from agentcli.events import ContextFilling, EventSink, TodoUpdated
from agentcli.messages import pairing_problems
from agentcli.permissions import PermissionMode, Prompter
from agentcli.permissions.basic import ModePolicy
from agentcli.session.live import LiveSession
from agentcli.session.options import SessionOptions
from agentcli.store import MemoryJournal
from agentcli.testing import FunctionModel, respond, text, tool_use
from agentcli.todo import TodoBoard, TodoItem
from agentcli.tools.base import ToolContext
from agentcli.tools.todo_write import TodoWrite
from agentcli.ui.repl.app import Repl
from agentcli.ui.repl.status import Status
from agentcli.ui.repl.stream import TaskView
from agentcli.usage import Usage
from tests.long.harness import Dump
from tests.long.scripts import SUMMARY, is_summary_request

PLAN = [
    {"content": "Read the code", "status": "completed", "activeForm": "Reading the code"},
    {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
]


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")


class Session:
    """A REPL over a conversation whose model reads a file per turn until told `stop`."""

    def __init__(self, workspace: Path, pipe: object, todos: list[TodoItem] | None = None) -> None:
        self.todos = todos or []
        """What the session's todo list holds when it opens (a resumed session's)."""
        self.out = io.StringIO()
        self.managers: list[ConversationManager] = []
        self.work = []
        self.summaries = []
        self.model = FunctionModel(self.answer, model="claude-sonnet-4-5")
        self.repl = Repl(
            SessionOptions(cwd=workspace),
            console=Console(file=self.out, width=100, markup=False, highlight=False),
            input=pipe,  # type: ignore[arg-type]
            output=DummyOutput(),
            build=self.build,
        )

    def answer(self, request: object) -> object:
        from agentcli.model import ModelRequest

        assert isinstance(request, ModelRequest)
        if is_summary_request(request):
            self.summaries.append(request)
            return respond(text(SUMMARY), usage=Usage(input_tokens=1_000, output_tokens=100))
        self.work.append(request)
        last = request.messages[-1]
        if last.text.startswith("plan"):
            return respond(tool_use("todo_write", {"todos": PLAN}))
        turn = sum(1 for m in request.messages if m.role == "assistant")
        if last.tool_results and turn % 3 == 0:
            return respond(text(f"read {turn} files"))
        return respond(tool_use("dump", {"path": f"f{turn}.py", "size": 300}))

    def build(self, options: SessionOptions, events: EventSink, prompter: Prompter) -> LiveSession:
        def manager() -> ConversationManager:
            board = TodoBoard(self.todos)
            made = ConversationManager(
                model=self.model,
                tools=[Dump(), TodoWrite(board)],
                tool_context=ToolContext(workspace=self.repl.workspace, data_dir=data_home()),
                policy=ModePolicy(mode=PermissionMode.DEFAULT),
                prompter=prompter,
                journal=MemoryJournal(),
                system="test",
                events=events,
                context=ContextView(ContextSettings(keep_recent=2)),
                long_session=LongSession(compaction=CompactionSettings(keep_recent=2), todos=board),
            )
            self.managers.append(made)
            return made

        return LiveSession(
            manager(),
            options=options,
            models=lambda _n: self.model,
            renew=lambda: (manager(), lambda _n: self.model),
        )

    @property
    def text(self) -> str:
        return self.out.getvalue()


async def run(workspace: Path, keys: str, todos: list[TodoItem] | None = None) -> Session:
    with create_pipe_input() as pipe:
        session = Session(workspace, pipe, todos)
        pipe.send_text(keys)
        assert await asyncio.wait_for(session.repl.run(), 30) == 0
    return session


async def test_compact_then_the_next_task_is_sent_the_summary_and_recent_turns(
    workspace: Path,
) -> None:
    keys = (
        "read some files\r"
        + "read more\r"
        + "/compact keep the file names\r"
        + "go on\r"
        + "/exit\r"
    )
    session = await run(workspace, keys)
    out = session.text
    (summary,) = session.summaries
    assert summary.tools == ()
    assert summary.messages[0].text.endswith(
        "The user's instructions for this summary:\nkeep the file names"
    )
    assert "⇣ compacted (manual): " in out and "/context shows what the model is sent now" in out
    # The compaction's cost joined the session's totals.
    assert session.repl.status.usage.input_tokens >= 1_000
    after = session.work[-1]
    assert after.messages[0].text.startswith("[agentcli compacted the conversation here")
    assert f"<summary>\n{SUMMARY}\n</summary>" in after.messages[0].text
    assert after.messages[1].role == "assistant"
    assert pairing_problems(after.messages) == []
    history = session.managers[0].messages
    point = session.managers[0].context.compaction.point  # type: ignore[union-attr]
    assert list(after.messages[1:]) == list(history[point : point + len(after.messages) - 1])


async def test_compact_twice_in_a_row_is_one_clear_notice(workspace: Path) -> None:
    session = await run(workspace, "read some files\r" + "/compact\r" + "/compact\r" + "/exit\r")
    assert len(session.summaries) == 1
    assert (
        "no compaction (manual): nothing older than the most recent turns to compact"
        in session.text
    )


async def test_compact_on_an_empty_conversation_says_so(workspace: Path) -> None:
    session = await run(workspace, "/compact\r" + "/exit\r")
    assert "nothing to compact: the conversation is empty" in session.text
    assert session.summaries == []


async def test_context_shows_what_is_sent_and_what_was_compacted(workspace: Path) -> None:
    keys = (
        "read some files\r" + "/context\r" + "read more\r" + "/compact\r" + "/context\r" + "/exit\r"
    )
    session = await run(workspace, keys)
    before, after = session.text.split("what the model is sent now:")[1:]
    for shown in (before, after):
        assert "system prompt" in shown and "tools" in shown and "2 definitions" in shown
        assert "#1 user" in shown or "#" in shown
        assert "the full history: agentcli sessions show" in shown
    assert "summary" not in before.split("the full history")[0]
    assert "compacted: messages 1–" in after
    assert "pinned: task" in after
    assert "summary" in after


async def test_the_todo_list_is_above_the_prompt_and_ctrl_t_hides_it(workspace: Path) -> None:
    session = await run(workspace, "plan it\r" + "/exit\r")
    status = session.repl.status
    assert status.todos == PLAN
    assert status.checklist(idle=True) == ["☒ Read the code", "▶ Fixing the bug"]
    toolbar = session.repl._toolbar()
    assert toolbar.splitlines()[:2] == ["☒ Read the code", " ▶ Fixing the bug"]
    session.repl._toggle_todos()
    assert "Fixing the bug" not in session.repl._toolbar()


async def test_ctrl_t_at_the_prompt_toggles_the_checklist(workspace: Path) -> None:
    session = await run(workspace, "plan it\r" + "\x14" + "/exit\r")
    assert session.repl.status.show_todos is False


def test_the_live_area_shows_the_checklist_while_a_task_runs(workspace: Path) -> None:
    out = io.StringIO()
    console = Console(file=out, width=80, markup=False, highlight=False, no_color=True)
    status = Status(model="m", mode="default")
    view = TaskView(console, status, workspace)
    view(TodoUpdated(todos=PLAN))
    console.print(view._renderable())
    shown = out.getvalue()
    assert "☒ Read the code" in shown and "▶ Fixing the bug" in shown
    view.toggle_todos()
    out.truncate(0)
    out.seek(0)
    console.print(view._renderable())
    assert "Fixing the bug" not in out.getvalue()


def test_the_status_line_says_how_full_the_context_is(workspace: Path) -> None:
    out = io.StringIO()
    console = Console(file=out, width=100, markup=False, highlight=False, no_color=True)
    status = Status(model="m", mode="default")
    view = TaskView(console, status, workspace)
    view(ContextFilling(tokens=160_000, window=200_000, compact_at=170_000))
    assert "ctx 80%" in status.line(100)
    assert "the context is 80% full (160,000 of 200,000 tokens)" in out.getvalue()


async def test_a_resumed_sessions_todo_list_is_shown_when_it_opens(workspace: Path) -> None:
    left = [item for item in map(TodoItem.from_json, PLAN) if item is not None]
    session = await run(workspace, "/context\r" + "/exit\r", todos=left)
    assert session.repl.status.todos == PLAN
    assert "▶ Fixing the bug" in session.text  # /context lists it too
