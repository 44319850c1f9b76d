"""What the slash commands (`commands`, `features`) may use of the REPL: a Protocol, so they
depend on this small surface and not on the REPL module that dispatches to them."""

from __future__ import annotations

from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from rich.console import Console

    from agentcli.owngit import RepoDecision
    from agentcli.session.live import LiveSession
    from agentcli.session.options import SessionOptions
    from agentcli.skills.catalog import Catalog
    from agentcli.tasks import TaskResult
    from agentcli.ui.repl.status import Status
    from agentcli.ui.repl.stream import TaskView

T = TypeVar("T")


class ReplHost(Protocol):
    options: SessionOptions
    """What the REPL was started with (and /model, /mode, /effort, /accept since)."""
    console: Console
    workspace: Path
    status: Status
    exiting: bool
    last_result: TaskResult | None
    io: dict[str, Any]
    needs_anthropic_key: bool
    """Tasks go to Anthropic's API (an OpenAI-compatible server's key is checked later)."""
    """The terminal's input and output (prompt-toolkit's; None: the real terminal)."""
    shell_notes: list[str]
    """What `!command`s printed since the last message: told to the model with the next one."""

    @property
    def view(self) -> TaskView | None: ...

    async def view_now(self) -> TaskView: ...

    @property
    def data_dir(self) -> Path:
        """Where spill files go (the session's data dir once there is a session)."""
        ...

    @property
    def session_id(self) -> str | None: ...

    @property
    def git(self) -> RepoDecision | None: ...

    def say(self, message: str) -> None: ...

    def error(self, message: str) -> None: ...

    def new_session(self) -> None: ...

    def set_model(self, name: str) -> None: ...

    def set_mode(self, mode: str) -> None: ...

    async def session_or_none(self) -> LiveSession | None: ...

    async def switch_session(self, session_id: str) -> LiveSession | None: ...

    async def run_cancellable(self, work: Coroutine[Any, Any, T]) -> tuple[T | None, bool]: ...

    async def run_task(self, prompt: str, *, command: bool = False) -> None:
        """Run `prompt` as a task (`command`: it is `/name args`, a custom command)."""

    def custom_catalog(self) -> Catalog:
        """The skills and custom commands: the session's, or found for the workspace before
        there is a session."""
        ...
