"""How agentcli says a count: `1 turn`, `2 turns`. A leaf: it imports nothing of agentcli, so
every layer (UI, tools, subagents) says counts the same way."""


def plural(count: int, word: str) -> str:
    """`count` and `word`, with an `s` unless the count is one (`1 turn`, `0 tool calls`)."""
    return f"{count} {word}{'' if count == 1 else 's'}"
