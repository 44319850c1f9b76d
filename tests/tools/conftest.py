"""Fixtures for the tool tests: a real workspace, a ToolContext, and a runtime harness that
drives calls through the full ToolRuntime path (validation, permission, call, format)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from agentcli.call_records import ToolCallRecord
from agentcli.events import Event
from agentcli.messages import ToolUseBlock
from agentcli.permissions import Answer, PermissionMode, PermissionRequest, PromptAnswer
from agentcli.permissions.basic import ModePolicy
from agentcli.store import MemoryJournal
from agentcli.tools.base import Tool, ToolContext
from agentcli.tools.builtin import builtin_tools
from agentcli.tools.runtime import ToolRuntime

_ids = itertools.count(1)


class RecordingPrompter:
    """Answers every question with a fixed answer and remembers what was asked."""

    asks_a_person = True

    def __init__(self, answer: Answer = Answer.YES) -> None:
        self.answer = answer
        self.requests: list[PermissionRequest] = []

    async def ask(self, request: PermissionRequest) -> PromptAnswer:
        self.requests.append(request)
        return PromptAnswer(self.answer)


class Harness:
    """A ToolRuntime over real tools, with helpers to run one call or a batch."""

    def __init__(
        self,
        ctx: ToolContext,
        tools: Sequence[Tool[Any]] | None = None,
        *,
        mode: PermissionMode = PermissionMode.YOLO,
        max_parallel: int = 8,
    ) -> None:
        self.ctx = ctx
        self.events: list[Event] = []
        self.journal = MemoryJournal()
        self.prompter = RecordingPrompter()
        self.runtime = ToolRuntime(
            list(tools) if tools is not None else builtin_tools(),
            ctx=ctx,
            policy=ModePolicy(mode=mode),
            prompter=self.prompter,
            journal=self.journal,
            events=self.events.append,
            max_parallel=max_parallel,
        )

    async def batch(self, *calls: tuple[str, dict[str, Any]]) -> list[ToolCallRecord]:
        blocks = [
            ToolUseBlock(id=f"toolu_{next(_ids)}", name=name, input=input) for name, input in calls
        ]
        records = self.runtime.propose(blocks)
        await self.runtime.execute(blocks, records)
        return records

    async def call(self, name: str, **input: Any) -> ToolCallRecord:
        (record,) = await self.batch((name, input))
        return record


@pytest.fixture
def ctx(workspace: Path, tmp_path: Path) -> ToolContext:
    return ToolContext(workspace=workspace, data_dir=tmp_path / "session-data")


@pytest.fixture
def harness(ctx: ToolContext) -> Harness:
    return Harness(ctx)


@pytest.fixture
def make_harness(ctx: ToolContext) -> Any:
    """`make_harness(tools=..., mode=..., max_parallel=...)` for runtimes over other tools."""

    def make(
        tools: Sequence[Tool[Any]] | None = None,
        *,
        mode: PermissionMode = PermissionMode.YOLO,
        max_parallel: int = 8,
    ) -> Harness:
        return Harness(ctx, tools, mode=mode, max_parallel=max_parallel)

    return make
