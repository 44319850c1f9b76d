"""Fixtures for journal tests: a session journal in the isolated data home, and a
ConversationManager wired to it with scripted models and real tools."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from agentcli.conversation import ConversationManager
from agentcli.events import Event
from agentcli.model import ModelClient
from agentcli.permissions import NonInteractivePrompter, PermissionMode
from agentcli.permissions.basic import ModePolicy
from agentcli.store.db import connect
from agentcli.store.sqlite import SqliteJournal
from agentcli.tools.base import Tool, ToolContext
from agentcli.tools.read_file import ReadFile
from agentcli.tools.write_file import WriteFile


@pytest.fixture
def conn() -> sqlite3.Connection:
    return connect()


def make_manager(
    model: ModelClient,
    workspace: Path,
    journal: Any,
    *,
    tools: Sequence[Tool[Any]] | None = None,
    mode: PermissionMode = PermissionMode.ACCEPT_EDITS,
    events: list[Event] | None = None,
    messages: list[Any] | None = None,
    checkpoints: Any = None,
) -> ConversationManager:
    session_id = getattr(journal, "session_id", "MEMORY")
    return ConversationManager(
        session_id=session_id,
        model=model,
        tools=list(tools) if tools is not None else [ReadFile(), WriteFile()],
        tool_context=ToolContext(workspace=workspace, data_dir=workspace.parent / "data"),
        policy=ModePolicy(mode=mode),
        prompter=NonInteractivePrompter(),
        journal=journal,
        system="test",
        events=events.append if events is not None else (lambda _e: None),
        messages=list(messages or []),
        checkpoints=checkpoints,
    )


def new_journal(conn: sqlite3.Connection, workspace: Path, session_id: str) -> SqliteJournal:
    return SqliteJournal.create(session_id, workspace=workspace, model="scripted", conn=conn)


@pytest.fixture
def manager_factory() -> Any:
    return make_manager


@pytest.fixture
def journal_factory(conn: sqlite3.Connection) -> Any:
    return lambda workspace, session_id: new_journal(conn, workspace, session_id)
