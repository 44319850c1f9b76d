"""The Messages API's request rules, as the fake server enforces them in strict mode.

The rules per model are written here from Anthropic's model pages and migration guides (late
2026), on purpose apart from agentcli's own catalogue (`agentcli.catalogue`): they are the
oracle the requests agentcli builds from that catalogue are checked against, so a mistake in the
catalogue shows up as a rejected request instead of being copied into the check.

`check_request` returns why a request would be refused (a 404 for a model the API does not
serve, a 400 for a request shape the model rejects), or None. It enforces:

- `max_tokens` within the model's maximum output;
- `thinking`: only the types the model accepts (`enabled` is refused from Opus 4.7 on and by
  the 5.x models, `disabled` by Opus 5.5 and Fable 5.1, `adaptive` by models before 4.6), a
  `budget_tokens` of at least 1024 and below `max_tokens`, a valid `display`;
- `output_config.effort`: only levels the model has (none at all on models without effort);
- sampling parameters (`temperature`, `top_p`, `top_k`) where the model refuses them, forced
  tool use (`tool_choice` any/tool) where refused or with thinking on, a request ending with an
  assistant turn (prefill) where refused (a paused server-tool turn sent back to be continued,
  as the API documents for `pause_turn`, is not a prefill);
- well-formed messages: the first from the user, none empty, no empty text block, every
  tool_use answered by one tool_result in the next message (and no other tool_result), and
  no tool_use or tool_result block in a request that defines no tools;
- at most 4 `cache_control` breakpoints;
- `context_management` only with `compact_20260112` on the models that support it (a trigger
  of at least 50,000 input tokens); the fake server also wants its beta header;
- thinking blocks bound to their model and transcript (Opus 5.5, Fable 5.1 and the other 5.5
  models): the fake signs every thinking block it serves (`sign_thinking`) with the model and
  a digest of everything before the block; a block sent back to such a model must carry a
  signature of the fake's for the same model and an unchanged prefix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from agentcli.messages import pairing_problems
from agentcli.testing.strict_thinking import bound_thinking_problem

ALL_EFFORTS = frozenset({"low", "medium", "high", "xhigh", "max"})
NO_XHIGH = frozenset({"low", "medium", "high", "max"})
SAMPLING = ("temperature", "top_p", "top_k")


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRules:
    """What one model accepts."""

    max_output: int
    thinking: frozenset[str] = frozenset()
    """The `thinking.type` values it accepts (empty: no `thinking` parameter at all)."""
    efforts: frozenset[str] = frozenset()
    """The `output_config.effort` levels it accepts (empty: no effort parameter)."""
    prefill: bool = True
    """A request may end with an assistant message."""
    sampling: bool = True
    """Non-default temperature / top_p / top_k are accepted."""
    forced_tool_choice: bool = True
    """`tool_choice` any/tool is accepted (never together with thinking)."""
    binds_thinking: bool = False
    """Thinking blocks are valid only for the model and transcript that produced them."""
    compaction: bool = False
    """`context_management` may ask for the API's own compaction (`compact_20260112`)."""


_5X_ALWAYS_ON = ModelRules(
    max_output=128_000,
    thinking=frozenset({"adaptive"}),
    efforts=ALL_EFFORTS,
    prefill=False,
    sampling=False,
    forced_tool_choice=False,
    binds_thinking=True,
)
_5X_SWITCHABLE = replace(_5X_ALWAYS_ON, thinking=frozenset({"adaptive", "disabled"}))
_5X_LEGACY = ModelRules(
    max_output=128_000,
    thinking=frozenset({"adaptive", "disabled"}),
    efforts=ALL_EFFORTS,
    prefill=False,
    sampling=False,
    compaction=True,
)
_BUDGETED = frozenset({"enabled", "disabled"})

RULES: dict[str, ModelRules] = {
    "claude-opus-5-5": _5X_ALWAYS_ON,
    "claude-fable-5-1": _5X_ALWAYS_ON,
    "claude-sonnet-5-5": _5X_SWITCHABLE,
    "claude-haiku-5-5": _5X_SWITCHABLE,
    "claude-opus-5": _5X_LEGACY,
    "claude-sonnet-5": _5X_LEGACY,
    "claude-fable-5": ModelRules(
        max_output=128_000,
        thinking=frozenset({"adaptive"}),
        efforts=ALL_EFFORTS,
        prefill=False,
        sampling=False,
        compaction=True,
    ),
    "claude-opus-4-7": ModelRules(
        max_output=128_000,
        thinking=frozenset({"adaptive", "disabled"}),
        efforts=ALL_EFFORTS,
        prefill=False,
        compaction=True,
    ),
    "claude-opus-4-6": ModelRules(
        max_output=128_000,
        thinking=frozenset({"adaptive", "enabled", "disabled"}),
        efforts=NO_XHIGH,
        prefill=False,
        compaction=True,
    ),
    "claude-sonnet-4-6": ModelRules(
        max_output=64_000,
        thinking=frozenset({"adaptive", "enabled", "disabled"}),
        efforts=NO_XHIGH,
        prefill=False,
        compaction=True,
    ),
    "claude-opus-4-5": ModelRules(
        max_output=64_000, thinking=_BUDGETED, efforts=frozenset({"low", "medium", "high"})
    ),
    "claude-sonnet-4-5": ModelRules(max_output=64_000, thinking=_BUDGETED),
    "claude-haiku-4-5": ModelRules(max_output=64_000, thinking=_BUDGETED),
    "claude-opus-4-1": ModelRules(max_output=32_000, thinking=_BUDGETED),
    "claude-opus-4-0": ModelRules(max_output=32_000, thinking=_BUDGETED),
    "claude-opus-4": ModelRules(max_output=32_000, thinking=_BUDGETED),
    "claude-sonnet-4-0": ModelRules(max_output=64_000, thinking=_BUDGETED),
    "claude-sonnet-4": ModelRules(max_output=64_000, thinking=_BUDGETED),
    "claude-3-7-sonnet": ModelRules(max_output=64_000, thinking=_BUDGETED),
    "claude-3-5-haiku": ModelRules(max_output=8_192),
    "claude-3-haiku": ModelRules(max_output=4_096),
}

_DATED = re.compile(r"-(?:\d{8}|latest)$")


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why the API would refuse a request: the HTTP status, the error type and the message."""

    status: int
    type: str
    message: str


def rules_for(model: object, extra: Mapping[str, ModelRules]) -> tuple[str, ModelRules] | None:
    """The model's family id and rules: an exact id, or a dated / `-latest` one."""
    if not isinstance(model, str):
        return None
    table = {**RULES, **extra}
    for name in (model, _DATED.sub("", model)):
        if name in table:
            return name, table[name]
    return None


@dataclass(kw_only=True)
class RequestCheck:
    """One request, checked against its model's rules."""

    body: Mapping[str, Any]
    extra_models: Mapping[str, ModelRules] = field(default_factory=dict)

    def refusal(self) -> Refusal | None:
        found = rules_for(self.body.get("model"), self.extra_models)
        if found is None:
            return Refusal(404, "not_found_error", f"model: {self.body.get('model')}")
        family, rules = found
        for check in (
            self._max_tokens,
            self._messages,
            self._thinking,
            self._output_config,
            self._sampling,
            self._tool_choice,
            self._prefill,
            self._breakpoints,
            self._context_management,
        ):
            problem = check(rules)
            if problem is not None:
                return Refusal(400, "invalid_request_error", problem)
        if rules.binds_thinking:
            problem = bound_thinking_problem(self.body, family)
            if problem is not None:
                return Refusal(400, "invalid_request_error", problem)
        return None

    def _max_tokens(self, rules: ModelRules) -> str | None:
        value = self.body.get("max_tokens")
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            return "max_tokens: Field required (a positive integer)"
        if value > rules.max_output:
            return (
                f"max_tokens: {value} > {rules.max_output}, which is the maximum allowed "
                f"number of output tokens for {self.body['model']}"
            )
        return None

    def _messages(self, _rules: ModelRules) -> str | None:
        messages = self.body.get("messages")
        if not isinstance(messages, list) or not messages:
            return "messages: at least one message is required"
        if not isinstance(messages[0], Mapping) or messages[0].get("role") != "user":
            return "messages: the first message must use the `user` role"
        for index, message in enumerate(messages):
            problem = _message_problem(index, message)
            if problem is not None:
                return problem
        problems = pairing_problems(messages)
        if problems:
            return f"messages: tool_use/tool_result mismatch: {problems[0]}"
        if not self.body.get("tools") and _has_tool_blocks(messages):
            return "Requests which include `tool_use` or `tool_result` blocks must define tools."
        return None

    def _thinking(self, rules: ModelRules) -> str | None:
        thinking = self.body.get("thinking")
        if thinking is None:
            return None
        if not isinstance(thinking, Mapping):
            return "thinking: must be an object"
        kind = thinking.get("type")
        if kind not in rules.thinking:
            return f'"thinking.type.{kind}" is not supported for this model' + (
                f" (accepted: {', '.join(sorted(rules.thinking))})" if rules.thinking else ""
            )
        allowed = {"type", "display"} | ({"budget_tokens"} if kind == "enabled" else set())
        unknown = set(thinking) - allowed
        if unknown:
            return f"thinking.{sorted(unknown)[0]}: Extra inputs are not permitted"
        if "display" in thinking and thinking["display"] not in ("summarized", "omitted"):
            return f"thinking.display: unknown value {thinking['display']!r}"
        if kind == "enabled":
            budget = thinking.get("budget_tokens")
            if not isinstance(budget, int) or budget < 1024:
                return "thinking.enabled.budget_tokens: must be at least 1024"
            if budget >= self.body.get("max_tokens", 0):
                return "`max_tokens` must be greater than `thinking.budget_tokens`"
        return None

    def _output_config(self, rules: ModelRules) -> str | None:
        config = self.body.get("output_config")
        if config is None:
            return None
        if not isinstance(config, Mapping) or set(config) - {"effort"}:
            return "output_config: only `effort` is expected here"
        effort = config.get("effort")
        if not rules.efforts:
            return "output_config.effort: this model does not support the effort parameter"
        if effort not in rules.efforts:
            return (
                f"This model does not support effort level {effort!r}. Supported levels: "
                f"{', '.join(sorted(rules.efforts))}."
            )
        return None

    def _sampling(self, rules: ModelRules) -> str | None:
        given = [name for name in SAMPLING if name in self.body]
        if not given or rules.sampling:
            return None
        if given == ["temperature"] and self.body["temperature"] == 1:
            return None
        return f"{given[0]}: sampling parameters are not supported for this model"

    def _tool_choice(self, rules: ModelRules) -> str | None:
        choice = self.body.get("tool_choice")
        if not isinstance(choice, Mapping) or choice.get("type") not in ("any", "tool"):
            return None
        if not rules.forced_tool_choice:
            return "tool_choice: forced tool use is not supported for this model"
        thinking = self.body.get("thinking")
        if isinstance(thinking, Mapping) and thinking.get("type") in ("enabled", "adaptive"):
            return "Thinking may not be enabled when tool_choice forces tool use."
        return None

    def _prefill(self, rules: ModelRules) -> str | None:
        messages = self.body["messages"]
        last = messages[-1]
        if last.get("role") == "assistant" and not rules.prefill and not _paused(last):
            return (
                "This model does not support assistant message prefill. The conversation "
                "must end with a user message."
            )
        return None

    def _context_management(self, rules: ModelRules) -> str | None:
        management = self.body.get("context_management")
        if management is None:
            return None
        edits = management.get("edits") if isinstance(management, Mapping) else None
        if not isinstance(edits, list) or not edits:
            return "context_management.edits: at least one edit is required"
        for edit in edits:
            problem = _compaction_edit_problem(edit, rules)
            if problem is not None:
                return problem
        return None

    def _breakpoints(self, _rules: ModelRules) -> str | None:
        count = _count_breakpoints(self.body.get("system")) + _count_breakpoints(
            self.body.get("tools")
        )
        count += sum(_count_breakpoints(m.get("content")) for m in self.body["messages"])
        if count > 4:
            return f"A maximum of 4 blocks with cache_control may be provided. Found {count}."
        return None


def _compaction_edit_problem(edit: Any, rules: ModelRules) -> str | None:
    if not isinstance(edit, Mapping) or edit.get("type") != "compact_20260112":
        return "context_management.edits: only compact_20260112 is known here"
    if not rules.compaction:
        return "context_management: compact_20260112 is not supported for this model"
    trigger = edit.get("trigger")
    if trigger is not None:
        value = trigger.get("value") if isinstance(trigger, Mapping) else None
        if not isinstance(trigger, Mapping) or trigger.get("type") != "input_tokens":
            return "context_management.edits.0.trigger: type must be input_tokens"
        if not isinstance(value, int) or value < 50_000:
            return "context_management.edits.0.trigger.value: must be at least 50000"
    return None


def _message_problem(index: int, message: Any) -> str | None:
    if not isinstance(message, Mapping) or message.get("role") not in ("user", "assistant"):
        return f"messages.{index}: a message needs the role `user` or `assistant`"
    content = message.get("content")
    if isinstance(content, str):
        return None if content else f"messages.{index}: content must be non-empty"
    if not isinstance(content, list) or not content:
        return f"messages.{index}: all messages must have non-empty content"
    for position, block in enumerate(content):
        if not isinstance(block, Mapping) or "type" not in block:
            return f"messages.{index}.content.{position}: a block needs a type"
        if block["type"] == "text" and not block.get("text"):
            return f"messages.{index}.content.{position}: text content blocks must be non-empty"
    return None


def _has_tool_blocks(messages: list[Any]) -> bool:
    return any(
        isinstance(block, Mapping) and block.get("type") in ("tool_use", "tool_result")
        for message in messages
        if isinstance(message.get("content"), list)
        for block in message["content"]
    )


def _paused(message: Mapping[str, Any]) -> bool:
    """A server-tool turn the API paused (`pause_turn`), sent back as the API asks so it can
    continue: the API's own continuation, not a prefill. Its content holds server tool
    blocks, which no client writes."""
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(b, Mapping) and b.get("type") == "server_tool_use" for b in content
    )


def _count_breakpoints(blocks: Any) -> int:
    if not isinstance(blocks, list):
        return 0
    return sum(1 for block in blocks if isinstance(block, Mapping) and "cache_control" in block)


# -- thinking blocks bound to their model and transcript ------------------------------------------
def check_request(
    body: Mapping[str, Any], extra_models: Mapping[str, ModelRules] | None = None
) -> Refusal | None:
    """Why the API would refuse `body`, or None."""
    return RequestCheck(body=body, extra_models=extra_models or {}).refusal()
