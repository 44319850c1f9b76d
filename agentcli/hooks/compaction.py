"""The PreCompact hooks, and SessionStart with source `compact`, heard from compaction
(`agentcli.context.compaction`): a compaction asks the PreCompact hooks first (a hook that blocks
keeps it from happening, and its reason is what the user hears), and once the summary stands
for the older turns the SessionStart hooks of source `compact` run (what they add reaches the
model with the next prompt, as after a session's start)."""

from __future__ import annotations

from agentcli.compaction_record import CompactionRecord, Trigger
from agentcli.hook_seams import SessionHooks


class CompactionHooks:
    """A compaction observer (`context.compaction.CompactionObserver`) over a session's
    hooks."""

    def __init__(self, hooks: SessionHooks) -> None:
        self._hooks = hooks

    async def before_compaction(self, trigger: Trigger, instructions: str | None) -> str | None:
        verdict = await self._hooks.compacting(trigger.value, instructions or "")
        return None if verdict.block is None else verdict.block.reason

    async def after_compaction(self, record: CompactionRecord) -> None:
        await self._hooks.session_started("compact")
