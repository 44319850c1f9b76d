"""What the model is sent of a conversation's history (`view`: elision and the compacted
summary; `thinking`: which thinking blocks may go back), when and how older turns are
compacted into a summary (`compaction`, with the summary's prompt in `handoff` and the items it
never summarizes away in `pins`), and what `/context` shows of it (`report`).

The history itself is never changed by any of it: the journal keeps every message.
"""

from agentcli.context.thinking import ThinkingBound, bound_thinking, context_key
from agentcli.context.view import ContextSettings, ContextView, Elision, stub_text, summarize_input

__all__ = [
    "ContextSettings",
    "ContextView",
    "Elision",
    "ThinkingBound",
    "bound_thinking",
    "context_key",
    "stub_text",
    "summarize_input",
]
