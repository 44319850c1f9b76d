"""What every request costs before the conversation starts, and how a long session grows.

- The fixed prompt: the system prompt (for a workspace without AGENTS.md) and the tool
  definitions exactly as `build_request_params` sends them, in estimated tokens, next to the
  anchors: Claude Code's fixed prompt is ~15-20k tokens, mini-swe-agent's ~1k.
- The tool-result cap (30 000 characters) in tokens, and how many full-cap results fill a
  200k-token context window.
- A long task's input cost with the prompt-cache breakpoints we send vs without caching.
- A long task of large results with old results elided (`agentcli.context`, default settings)
  vs sent in full: cost, and the largest context sent, against the 200k window.

Token estimates: Claude's tokenizer is not public and counting needs the network, so characters
are divided by 3.5 (Anthropic's rule of thumb for English text; JSON schemas, with their quotes
and braces, come out at about the same ratio in BPE tokenizers, so this errs high rather than
low), with characters / 4 as the low end. Tool use also adds a fixed system prompt of its own,
which Anthropic documents as 346 tokens for current models (tool_choice auto).
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from agentcli.catalogue import CATALOGUE
from agentcli.context import ContextSettings, ContextView
from agentcli.instructions import system_prompt
from agentcli.messages import Message, ToolResultBlock, ToolUseBlock
from agentcli.model import ModelRequest
from agentcli.tools.builtin import builtin_tools
from agentcli.tools.output import DEFAULT_OUTPUT_CAP
from agentcli.usage import Usage, cost_usd

CHARS_PER_TOKEN = 3.5
LOW_CHARS_PER_TOKEN = 4.0
TOOL_USE_SYSTEM_TOKENS = 346
CONTEXT_WINDOW = 200_000
MODEL = "claude-sonnet-4-5"


def _cost(usage: Usage) -> float:
    """USD at MODEL's flat price (so a sum of requests' usage costs the sum of their costs)."""
    cost = cost_usd(CATALOGUE.lookup(MODEL).price, usage)
    assert cost is not None
    return cost


def tokens(chars: int, per_token: float = CHARS_PER_TOKEN) -> int:
    return round(chars / per_token)


def fixed_prompt() -> tuple[int, int, dict[str, int]]:
    """(system prompt chars, tool definitions chars, chars per tool) as sent on the wire."""
    from agentcli.model.anthropic import build_request_params

    with tempfile.TemporaryDirectory(prefix="agentcli-bench-cost-") as tmp:
        system = system_prompt(Path(tmp))
    tools = [tool.spec() for tool in builtin_tools()]
    body = build_request_params(MODEL, ModelRequest(system=system, messages=[], tools=tools))
    system_chars = sum(len(block["text"]) for block in body["system"])
    per_tool = {
        tool["name"]: len(json.dumps(_without_cache_control(tool), separators=(",", ":")))
        for tool in body["tools"]
    }
    return system_chars, sum(per_tool.values()), per_tool


def _without_cache_control(tool: dict[str, object]) -> dict[str, object]:
    return {key: value for key, value in tool.items() if key != "cache_control"}


def session_cost(
    fixed_tokens: int, turns: int, result_tokens: int, output_tokens: int = 300
) -> tuple[float, float]:
    """USD of a `turns`-turn task (one tool result per turn) with our breakpoints, and
    without caching. With them, each request reads everything up to the previous request's
    latest user turn from the cache and writes what is new since (the last response and the
    results that answer it)."""
    cached, uncached = Usage(), Usage()
    history = 0  # tokens of the conversation after the fixed prompt
    for turn in range(turns):
        new = result_tokens + (output_tokens if turn else 0)
        prefix = fixed_tokens + history
        read = prefix if turn else 0
        cached = cached + Usage(
            cache_read_input_tokens=read,
            cache_creation_input_tokens=new if turn else prefix + new,
            output_tokens=output_tokens,
        )
        uncached = uncached + Usage(input_tokens=prefix + new, output_tokens=output_tokens)
        history += new
    return _cost(cached), _cost(uncached)


@dataclass(frozen=True, slots=True)
class ElisionRun:
    cost_usd: float
    peak_tokens: int
    """The largest context sent (fixed prompt, messages and the response)."""
    over_window_at: int | None
    """The first turn whose context exceeds the window: the task would stop there."""


def elided_session(
    fixed_tokens: int,
    turns: int,
    result_chars: int,
    settings: ContextSettings | None,
    output_tokens: int = 300,
) -> ElisionRun:
    """A `turns`-turn task (one `result_chars` result per turn) through a real ContextView
    (None: nothing elided), priced with the cache model of `session_cost`: a request that
    extends the previous one reads it from the cache and writes what is new; after the
    watermark moved the changed prefix is far behind the breakpoint on the last message (the
    API looks back only ~20 blocks), so only the fixed prompt is read and all else written."""
    view = ContextView(settings) if settings is not None else None
    history = [Message.user("work through the repository")]
    previous: list[Message] = []
    usage, peak, over = Usage(), 0, None
    for turn in range(turns):
        if view is not None:
            view.advance(history)
        sent = view.messages(history) if view is not None else list(history)
        sizes = [_message_tokens(m, output_tokens) for m in sent]
        extends = sent[: len(previous)] == previous
        read = fixed_tokens + sum(sizes[: len(previous)]) if extends and turn else 0
        if turn and not extends:
            read = fixed_tokens
        written = fixed_tokens + sum(sizes) - read
        response = Usage(
            cache_read_input_tokens=read,
            cache_creation_input_tokens=written,
            output_tokens=output_tokens,
        )
        usage = usage + response
        peak = max(peak, response.total_tokens)
        if over is None and response.total_tokens > CONTEXT_WINDOW:
            over = turn + 1
        call = ToolUseBlock(f"call{turn}", "read_file", {"path": f"src/module_{turn}.py"})
        history.append(Message(role="assistant", content=(call,)))
        if view is not None:
            view.observe(history, response)
        history.append(
            Message(role="user", content=(ToolResultBlock(call.id, "x" * result_chars),))
        )
        previous = sent
    return ElisionRun(_cost(usage), peak, over)


def _message_tokens(message: Message, output_tokens: int) -> int:
    if message.role == "assistant":
        return output_tokens
    return sum(tokens(len(r.content)) for r in message.tool_results) or tokens(len(message.text))


def run() -> list[tuple[str, str]]:
    system_chars, tool_chars, per_tool = fixed_prompt()
    total_chars = system_chars + tool_chars
    total = tokens(total_chars) + TOOL_USE_SYSTEM_TOKENS
    low = tokens(total_chars, LOW_CHARS_PER_TOKEN) + TOOL_USE_SYSTEM_TOKENS
    cap_tokens = tokens(DEFAULT_OUTPUT_CAP)
    rows = [
        ("fixed prompt: system prompt", f"{system_chars} chars ≈ {tokens(system_chars)} tokens"),
        (
            f"fixed prompt: {len(per_tool)} tool definitions",
            f"{tool_chars} chars ≈ {tokens(tool_chars)} tokens "
            f"(+{TOOL_USE_SYSTEM_TOKENS} tool-use system prompt); "
            + ", ".join(f"{name} {tokens(chars)}" for name, chars in per_tool.items()),
        ),
        (
            "fixed prompt: total",
            f"≈ {total / 1000:.1f}k tokens ({low / 1000:.1f}k at 4 chars/token); "
            "anchors: Claude Code ~15-20k, mini-swe-agent ~1k",
        ),
        (
            f"tool result cap ({DEFAULT_OUTPUT_CAP} chars)",
            f"≈ {cap_tokens / 1000:.1f}k tokens; {CONTEXT_WINDOW // cap_tokens} full-cap results "
            f"fill a {CONTEXT_WINDOW // 1000}k context",
        ),
    ]
    for turns, result_chars in ((50, 2_000), (50, 8_000)):
        cached, uncached = session_cost(total, turns, tokens(result_chars))
        rows.append(
            (
                f"input+output cost, {turns} turns of {result_chars}-char results ({MODEL})",
                f"${cached:.2f} with our cache breakpoints, ${uncached:.2f} without "
                f"({uncached / cached:.1f}x)",
            )
        )
    for turns, result_chars in ((50, 8_000), (50, 30_000)):
        full = elided_session(total, turns, result_chars, None)
        elided = elided_session(
            total, turns, result_chars, ContextSettings(window_tokens=CONTEXT_WINDOW)
        )
        stops = (
            f", over the {CONTEXT_WINDOW // 1000}k window from turn {full.over_window_at}"
            if full.over_window_at is not None
            else ""
        )
        rows.append(
            (
                f"elision: {turns} turns of {result_chars}-char results ({MODEL})",
                f"${elided.cost_usd:.2f} (peak context {elided.peak_tokens // 1000}k) with old "
                f"results elided, ${full.cost_usd:.2f} (peak {full.peak_tokens // 1000}k"
                f"{stops}) sent in full ({full.cost_usd / elided.cost_usd:.1f}x)",
            )
        )
    return rows


if __name__ == "__main__":
    for name, value in run():
        print(f"{name:64} {value}")
