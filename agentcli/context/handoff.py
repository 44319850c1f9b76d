"""The summarization request of a compaction: a handoff-summary prompt over the conversation,
rendered as a transcript.

The conversation goes as text in one user message, not as the messages themselves: a request
that carries `tool_use`/`tool_result` blocks must define tools (the Messages API refuses it
otherwise), and the request offers none, so the model cannot answer with a tool call instead of
the summary (which the API's own compaction documents as a failure mode). Thinking blocks are
left out (they are bound to their model and transcript); large tool results are cut so the
transcript fits the summarizing model's window, and when even that is not enough the oldest
messages are left out, saying so.

The prompt asks for what Codex's handoff summary and Claude Code's compaction keep (goal,
decisions, files changed and why, what was verified, what remains, exact errors and
identifiers) and says which items are re-sent verbatim anyway, so the summary does not repeat
them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from agentcli.compaction_record import PinnedItem
from agentcli.messages import Message, OpaqueBlock, TextBlock, ToolResultBlock, ToolUseBlock
from agentcli.truncation import shorten

HANDOFF_SYSTEM = (
    "You write handoff summaries of a coding agent's work in a user's repository, for another "
    "instance of the agent that continues the work from your summary alone. You have no tools."
)

HANDOFF_PROMPT = """\
CONTEXT CHECKPOINT. The transcript above is a coding agent's conversation so far. It is about \
to be replaced, in what the agent is sent, by your summary: the agent will continue the work \
with only your summary, the items listed below (which are re-sent exactly as they are), and \
the most recent turns.

Write a handoff summary with these sections:
1. Goal: what the user wants, with every constraint and preference they stated.
2. Decisions: what was decided, and why.
3. Files: each file changed (path) and why; files read that matter, and what was learned.
4. Verified: the commands and checks that ran and what they showed; what is not verified yet.
5. Remaining: what is left to do, in order, and where the agent stopped.
6. Exact details still needed: error messages, identifiers, names, commands, paths, line \
numbers and values, quoted exactly.

Be factual and concise; never invent anything that is not in the transcript. Do not call \
tools. Answer with the summary only."""

SERVER_PROMPT = """\
Write a handoff summary of this conversation for the agent that continues the work from it: \
1. the goal, with every constraint the user stated; 2. decisions made and why; 3. each file \
changed (path) and why, and files read that matter; 4. what was verified and what not; 5. what \
remains, in order; 6. exact error messages, identifiers, commands, paths and values still \
needed. Never invent anything. Do not call any tools. Put the summary in <summary></summary>."""


def server_instructions(pinned: Sequence[PinnedItem]) -> str:
    """The API's own compaction (`compact_20260112`) takes instructions in place of its prompt
    and cannot re-send anything itself: the pinned items go into the summary, quoted."""
    if not pinned:
        return SERVER_PROMPT
    quoted = "\n".join(item.block_text() for item in pinned)
    return (
        f"{SERVER_PROMPT}\n\nAt the end of the summary, quote these items exactly as they "
        f"are, tags included:\n{quoted}"
    )


_RESULT_CAPS = (4_000, 1_000, 200)
"""How long each tool result may stay in the transcript, tried in turn until it fits."""
_INPUT_CHARS = 600


def handoff_prompt(pinned: Sequence[PinnedItem], instructions: str | None) -> str:
    """The prompt after the transcript: the handoff sections, what is re-sent anyway, and the
    user's own instructions (`/compact INSTRUCTIONS`)."""
    parts = [HANDOFF_PROMPT]
    if pinned:
        kept = "\n".join(f"- {item.title}" for item in pinned)
        parts.append(f"Re-sent verbatim after your summary (do not repeat them):\n{kept}")
    if instructions and instructions.strip():
        parts.append(f"The user's instructions for this summary:\n{instructions.strip()}")
    return "\n\n".join(parts)


def summary_request(
    messages: Sequence[Message],
    pinned: Sequence[PinnedItem],
    instructions: str | None,
    *,
    budget_chars: int,
) -> Message:
    """The one user message of the summary request: the transcript of `messages` (made to fit
    `budget_chars`), then the prompt."""
    prompt = handoff_prompt(pinned, instructions)
    room = max(budget_chars - len(prompt) - 100, 1_000)
    transcript = render_transcript(messages, room)
    return Message.user(f"<transcript>\n{transcript}\n</transcript>\n\n{prompt}")


def render_transcript(messages: Sequence[Message], budget_chars: int) -> str:
    """`messages` as readable text of at most about `budget_chars` characters: tool results cut
    shorter and shorter, then the oldest messages left out (the first, the task as it began,
    is kept)."""
    text = ""
    for cap in _RESULT_CAPS:
        parts = [_render(message, cap) for message in messages]
        text = "\n\n".join(parts)
        if len(text) <= budget_chars:
            return text
    first, rest = parts[:1], parts[1:]
    used = sum(len(p) + 2 for p in first)
    kept: list[str] = []
    for part in reversed(rest):
        if used + len(part) + 2 > budget_chars:
            break
        kept.append(part)
        used += len(part) + 2
    dropped = len(rest) - len(kept)
    note = [f"[{dropped} earlier messages are left out here: the transcript was too long]"]
    return "\n\n".join([*first, *note, *reversed(kept)])


def _render(message: Message, result_cap: int) -> str:
    lines = [f"[{message.role}]"]
    for block in message.content:
        if isinstance(block, TextBlock):
            if block.text.strip():
                lines.append(block.text)
        elif isinstance(block, ToolUseBlock):
            arguments = json.dumps(block.input, ensure_ascii=False)
            lines.append(f"[tool call {block.name} {shorten(arguments, _INPUT_CHARS)}]")
        elif isinstance(block, ToolResultBlock):
            label = "tool error" if block.is_error else "tool result"
            lines.append(f"[{label}]\n{shorten(block.content, result_cap)}")
        elif isinstance(block, OpaqueBlock) and block.type == "compaction":
            content = block.raw.get("content")
            if isinstance(content, str) and content.strip():
                lines.append(f"[an earlier summary]\n{content}")
        # Thinking blocks are the model's own and bound to it; other server blocks are left
        # out (their effect is in the text around them).
    return "\n".join(lines)
