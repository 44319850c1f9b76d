"""A conversation for long-session tests: a `dump` tool whose results are as large as asked, the
todo tool, a small window, and every event kept."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentcli.acceptance import AcceptanceSettings
from agentcli.context import ContextSettings, ContextView
from agentcli.context.compaction import CompactionSettings
from agentcli.context.keeper import LongSession
from agentcli.conversation import ConversationManager
from agentcli.events import Event, Notice
from agentcli.model import ModelClient
from agentcli.permissions import NonInteractivePrompter, PermissionMode
from agentcli.permissions.basic import ModePolicy
from agentcli.store import Journal, MemoryJournal
from agentcli.todo import TodoBoard
from agentcli.tools.base import Risk, Tool, ToolContext, ToolInput, ToolOutput
from agentcli.tools.todo_write import TodoWrite

WINDOW = 20_000


class DumpInput(ToolInput):
    path: str
    size: int


class Dump(Tool[DumpInput]):
    name = "dump"
    description = "returns `size` characters"
    input_model = DumpInput
    risk = Risk.READ

    async def call(self, args: DumpInput, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(text=(args.path[:2] + " ") * (args.size // 3))


@dataclass
class Conversation:
    manager: ConversationManager
    events: list[Event] = field(default_factory=list)
    board: TodoBoard = field(default_factory=TodoBoard)

    def notices(self) -> list[str]:
        return [e.message for e in self.events if isinstance(e, Notice)]

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


def conversation(
    workspace: Path,
    model: ModelClient,
    *,
    window: int = WINDOW,
    keep_recent: int = 2,
    compaction: CompactionSettings | None = None,
    journal: Journal | None = None,
    acceptance: Sequence[str] = (),
    mode: PermissionMode = PermissionMode.DEFAULT,
    summarizer: ModelClient | None = None,
    long_session: LongSession | None = None,
) -> Conversation:
    events: list[Event] = []
    board = long_session.todos if long_session is not None else TodoBoard()
    given = long_session or LongSession(
        compaction=compaction or CompactionSettings(keep_recent=keep_recent),
        todos=board,
        summarizer=summarizer,
    )
    manager = ConversationManager(
        model=model,
        tools=[Dump(), TodoWrite(board)],
        tool_context=ToolContext(workspace=workspace, data_dir=workspace.parent / "data"),
        policy=ModePolicy(mode=mode),
        prompter=NonInteractivePrompter(),
        journal=journal or MemoryJournal(),
        system="sys",
        events=events.append,
        acceptance=AcceptanceSettings(commands=tuple(acceptance), retries=2),
        context=ContextView(
            ContextSettings(window_tokens=window, elide_at=1.0, keep_recent=keep_recent)
        ),
        long_session=given,
    )
    return Conversation(manager=manager, events=events, board=board)
