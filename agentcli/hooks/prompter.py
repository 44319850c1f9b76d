"""Notification hooks: a person is asked a permission question (`notification_type`
`permission_prompt`). The question is asked at once; the hooks run meanwhile (a desktop
notification, a chat message), and the session's end waits for them.

Only a prompter that asks a person is wrapped (the session core wraps the REPL's and a
terminal `run`'s): without a terminal nothing waits for anyone, and an ask is a denial.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentcli.permissions import PermissionRequest, PromptAnswer, Prompter

if TYPE_CHECKING:
    from agentcli.hooks.engine import HookEngine


class NotifyingPrompter:
    """`inner`, with the Notification hooks run whenever it asks."""

    def __init__(self, inner: Prompter, engine: HookEngine) -> None:
        self._inner = inner
        self._engine = engine

    @property
    def asks_a_person(self) -> bool:
        return self._inner.asks_a_person

    async def ask(self, request: PermissionRequest) -> PromptAnswer:
        self._engine.notify(
            f"agentcli needs your permission to use {request.tool}: {request.target.summary}",
            "permission_prompt",
        )
        return await self._inner.ask(request)
