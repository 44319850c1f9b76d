"""`todo_write`: the model saves its plan of the task as a checklist, replacing the whole list.

Claude Code's `TodoWrite` input, exactly (`{"todos": [{"content", "status", "activeForm"}]}`),
so models trained on it use it as they know it. The list lives on the session's board
(`agentcli.todo.TodoBoard`): the user sees it (the REPL's checklist, `run`'s progress,
stream-json's `todo_updated`, the result's `todos`), it is re-sent after a compaction, and a
resumed session finds it again (it is this call's input, journaled with its task). It changes
nothing in the workspace, so it never asks (a `deny` rule naming it still refuses it).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agentcli.errors import ToolError, ToolErrorKind
from agentcli.todo import TODO_TOOL, TodoBoard, TodoItem, TodoStatus, list_problem, progress
from agentcli.tools.base import Resources, Risk, Tool, ToolContext, ToolInput, ToolOutput


class TodoEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    content: str = Field(min_length=1, description='The step, in the imperative: "Run the tests".')
    status: Literal["pending", "in_progress", "completed"] = Field(
        description="pending, in_progress (at most one item) or completed."
    )
    # Claude Code's field name, kept exactly (camelCase).
    activeForm: str = Field(
        min_length=1,
        description="The step in the present continuous, shown while it is in progress: "
        '"Running the tests".',
    )


class TodoWriteInput(ToolInput):
    todos: list[TodoEntry] = Field(
        description="The whole list, in order; it replaces the previous one."
    )


class TodoWrite(Tool[TodoWriteInput]):
    name = TODO_TOOL
    description = (
        "Save your plan for the current task as a checklist the user sees; each call replaces "
        "the whole list. Use it for work of several steps: write the list when you start, mark "
        "an item in_progress before you begin it (at most one at a time) and completed as soon "
        "as it is done, and add steps you discover. The list is kept when older messages are "
        "summarized to save context. It changes nothing in the workspace."
    )
    input_model = TodoWriteInput
    risk = Risk.READ

    def __init__(self, board: TodoBoard | None = None) -> None:
        self.board = board or TodoBoard()
        """Where the list is kept: the session's (a conversation built with this tool and no
        board of its own shows and journals this one)."""

    def resources(self, args: TodoWriteInput, ctx: ToolContext) -> Resources:
        # Two lists in one response replace each other in proposal order.
        return Resources(writes=frozenset({"todo:list"}))

    def validate(self, args: TodoWriteInput, ctx: ToolContext) -> None:
        problem = list_problem(_items(args))
        if problem is not None:
            raise ToolError(ToolErrorKind.INVALID_ARGUMENTS, f"the list was not saved: {problem}")

    async def call(self, args: TodoWriteInput, ctx: ToolContext) -> ToolOutput:
        items = _items(args)
        self.board.replace(items)
        if not items:
            return ToolOutput(text="The todo list was saved (it is empty now).")
        return ToolOutput(
            text=f"The todo list was saved ({progress(items)}). Keep it current as you work.",
            source={"todos": len(items)},
        )


def _items(args: TodoWriteInput) -> list[TodoItem]:
    return [
        TodoItem(content=e.content, status=TodoStatus(e.status), active_form=e.activeForm)
        for e in args.todos
    ]
