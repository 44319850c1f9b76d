"""What a compaction re-sends of the skills used so far: each skill's text as the model last
got it (from `/name` or the `skill` tool), the most recently used first, at most 5,000 tokens
each and 25,000 in all (Claude Code's caps), counted at 4 characters a token. A skill's text
is found in the history by the `<skill name="…">` wrapper it was sent in, so this works on a
resumed session too.

Compaction (`agentcli.context`) keeps a list of pinned items; `resend_after_compaction` is the
skills' entry in it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from agentcli.compaction_record import PinnedItem
from agentcli.messages import Message, TextBlock, ToolResultBlock
from agentcli.skills.expand import SKILL_OPEN
from agentcli.skills.listing import CHARS_PER_TOKEN

MAX_TOKENS_EACH = 5000
MAX_TOKENS_TOTAL = 25000


@dataclass(frozen=True, slots=True)
class PinnedSkill:
    name: str
    text: str
    """What to send again (cut to the cap, saying so)."""

    @property
    def tokens(self) -> int:
        return -(-len(self.text) // CHARS_PER_TOKEN)


def invoked_skills(messages: Sequence[Message]) -> list[PinnedSkill]:
    """Every skill text in the history, newest first, one per skill (its latest)."""
    found: dict[str, PinnedSkill] = {}
    for message in reversed(messages):
        if message.role != "user":
            continue
        for block in reversed(message.content):
            text = block.text if isinstance(block, TextBlock) else None
            if isinstance(block, ToolResultBlock) and not block.is_error:
                text = block.content
            if text is None:
                continue
            match = SKILL_OPEN.search(text)
            if match is not None and match.group(1) not in found:
                found[match.group(1)] = PinnedSkill(match.group(1), _skill_part(text, match))
    return list(found.values())


def resend_after_compaction(messages: Sequence[Message]) -> list[PinnedSkill]:
    """The skill texts to send again after older history was summarized, within the caps."""
    kept: list[PinnedSkill] = []
    total = 0
    for skill in invoked_skills(messages):
        capped = _capped(skill)
        if total + capped.tokens > MAX_TOKENS_TOTAL:
            break
        kept.append(capped)
        total += capped.tokens
    return kept


def _skill_part(text: str, opening: re.Match[str]) -> str:
    """The wrapper and what is inside it (not what was said before or after it)."""
    end = text.find("\n</skill>", opening.start())
    return text[opening.start() :] if end < 0 else text[opening.start() : end + len("\n</skill>")]


def _capped(skill: PinnedSkill) -> PinnedSkill:
    limit = MAX_TOKENS_EACH * CHARS_PER_TOKEN
    if len(skill.text) <= limit:
        return skill
    note = f"\n[skill {skill.name} cut at {MAX_TOKENS_EACH} tokens: load it again for the rest]"
    return PinnedSkill(skill.name, skill.text[: limit - len(note)] + note)


def skill_pins(messages: Sequence[Message]) -> list[PinnedItem]:
    """The skills to re-send after a compaction, as compaction's pinned items."""
    return [
        PinnedItem(kind="skill", title=f"The skill {skill.name}, as last loaded", text=skill.text)
        for skill in resend_after_compaction(messages)
    ]
