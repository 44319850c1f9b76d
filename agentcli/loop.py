"""QueryLoop: one task's conversation with the model, until a structured terminal reason.

Each step checks the budgets, calls the model (always streaming), keeps the complete assistant
response in the history, executes the tool calls through the ToolRuntime and appends their
results. A step returns a typed decision, `Continue()` or `Finished(reason)`; normal completion
is never an exception. Whatever stops the loop (completion, a budget, a cancel, a deadline, a
fatal error), the history it returns is valid: every `tool_use` has exactly one `tool_result`.

What is sent each turn is `context.messages(history)`: the history with old, large tool results
elided, older turns compacted into a summary once the context fills up (the `compactor`, before
a request), and thinking blocks only where the model being called may read them (see
`agentcli.context`); the history itself, and so the journal, stays complete. Each response is
recorded with its `Producer`. The model's catalogue entry (`agentcli.catalogue`) gives each
request its limits and rules, and each response its price.

The loop instance lives for one task, so turn, token and cost counters accumulate across
`run()` calls (acceptance repair rounds continue the same task).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from agentcli.call_records import ToolCallRecord
from agentcli.catalogue import CATALOGUE, Catalogue, Effort, ModelSpec
from agentcli.context import ContextView, Elision, ThinkingBound, context_key
from agentcli.context.compaction import Compactor, Turn
from agentcli.context.summary import SummaryCall
from agentcli.errors import FatalToolError, ModelError, TaskStopError
from agentcli.events import EventSink, ModelResponded, Notice, TurnStarted, UsageUpdated
from agentcli.loop_steps import Continue, Finished, Nudge, Step, Stop, TurnObserver
from agentcli.messages import Message, Producer, TextBlock, ToolResultBlock, ToolUseBlock
from agentcli.model import ModelClient, ModelRequest, ModelResponse, StopReason
from agentcli.settings import DEFAULTS
from agentcli.store import Journal
from agentcli.task_scope import TaskAccount
from agentcli.terminal_reason import TerminalReason
from agentcli.tools.runtime import ToolRuntime
from agentcli.usage import Budget, Clock, Usage, cost_usd


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopSettings:
    max_tokens_per_response: int | None = None
    """`max_tokens` of each model request; None: the model's maximum output (catalogue)."""
    effort: Effort | None = None
    """The reasoning effort to ask for; None: the model's default."""
    max_cut_continuations: int = 3
    """How often in a row the model may be asked to continue text cut at max_tokens."""
    denial_limit: int = DEFAULTS.permissions.denial_limit
    """Permission denials in one task before the loop stops with `permission_denied`."""


@dataclass(kw_only=True)
class LoopOutcome:
    messages: list[Message]
    reason: TerminalReason
    final_text: str | None
    error: str | None = None


_COST_UNKNOWN = (
    "the task's cost is unknown from now on ({why}): --max-cost is no longer enforced for it"
)


@dataclass(kw_only=True)
class QueryLoop:
    model: ModelClient
    runtime: ToolRuntime
    journal: Journal
    system: str
    events: EventSink
    budget: Budget = field(default_factory=Budget)
    settings: LoopSettings = field(default_factory=LoopSettings)
    observers: Sequence[TurnObserver] = ()
    context: ContextView = field(default_factory=ContextView)
    """Which part of the history is sent (old large tool results elided); the history itself
    is never changed."""
    clock: Clock = field(default_factory=Clock)
    catalogue: Catalogue = CATALOGUE
    """Where the model's limits, prices and request rules come from."""
    compactor: Compactor | None = None
    """Compacts older turns of what is sent when the context fills up (None: never)."""
    upstream: TaskAccount | None = None
    """The enclosing task's account, when this loop is a subagent's: what it spends is charged
    there as it happens, and that task's budget stops this loop too."""
    turns: int = 0
    usage: Usage = field(default_factory=Usage)
    api_s: float = 0.0
    """Time spent waiting on the model (retries included)."""
    stop_reason: str | None = None
    """The last response's stop reason."""
    _cost: float | None = 0.0
    """The cost so far, unrounded; None once a response came from a model with no known
    price (the total is then unknown too)."""
    started_at: float = 0.0
    stopped: Finished | None = None
    """Set when the task stopped outside `run()` (cancelled, or out of time, during the
    acceptance checks or the final snapshot)."""
    _round_start_turn: int = 0
    _task_start: int | None = None
    """Where this task's messages begin in the history (its final text is never an earlier
    task's answer)."""
    _cut_streak: int = 0
    _call_ids: set[str] = field(default_factory=set)
    """Every tool call id in the history: a response may not reuse one."""
    _bound_thinking: ThinkingBound = field(default_factory=ThinkingBound)

    def __post_init__(self) -> None:
        self.started_at = self.clock.now()

    @property
    def deadline(self) -> float | None:
        if self.budget.timeout_s is None:
            return None
        return self.started_at + self.budget.timeout_s

    def event_loop_deadline(self) -> float | None:
        """The deadline on the running event loop's clock (for `asyncio.timeout_at`)."""
        deadline = self.deadline
        if deadline is None:
            return None
        return asyncio.get_running_loop().time() + (deadline - self.clock.now())

    @property
    def cost_usd(self) -> float | None:
        """The task's cost so far: each response priced on its own (a price can depend on the
        request's prompt length, and the REPL can switch models between tasks)."""
        return None if self._cost is None else round(self._cost, 6)

    def spec(self) -> ModelSpec:
        """The catalogue entry of the model being called now."""
        return self.catalogue.lookup(self.model.model)

    async def run(self, messages: Sequence[Message]) -> LoopOutcome:
        """Run until a terminal reason. Never raises for cancel, deadline or task-ending errors."""
        history = list(messages)
        if self._task_start is None:  # the first round; repair rounds continue the same task
            self._task_start = max(len(history) - 1, 0)
        self._call_ids = {call.id for message in history for call in message.tool_uses}
        # --max-turns applies to each round; acceptance repair rounds have their own budget.
        self._round_start_turn = self.turns
        try:
            async with asyncio.timeout_at(self.event_loop_deadline()) as scope:
                while True:
                    step = await self._step(history)
                    if isinstance(step, Finished):
                        return self._outcome(history, step)
        except TimeoutError:
            if not scope.expired():
                raise
            return self._outcome(
                history,
                Finished(
                    TerminalReason.TIMEOUT,
                    f"the task's time limit of {self.budget.timeout_s}s ran out",
                ),
            )
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            return self._outcome(history, Finished(TerminalReason.ABORTED, "cancelled by the user"))
        except TaskStopError as exc:
            return self._outcome(history, Finished(exc.reason, exc.message))

    def _outcome(self, history: list[Message], finished: Finished) -> LoopOutcome:
        self._close_open_calls(history, finished.error or finished.reason.value)
        own = history[self._task_start or 0 :]
        last = next((m for m in reversed(own) if m.role == "assistant"), None)
        return LoopOutcome(
            messages=history,
            reason=finished.reason,
            final_text=last.text if last is not None else None,
            error=finished.error,
        )

    def budget_stop(self) -> Finished | None:
        """Why no model call may be made now: this task's budget, or an enclosing task's."""
        own = self._budget_stop()
        if own is None and self.upstream is not None:
            return self.upstream.budget_stop()
        return own

    def charge(self, *, usage: Usage, cost: float | None, turns: int = 1) -> None:
        """Count a subagent's model call in this task, as it happens (`agentcli.task_scope`)."""
        self.turns += turns
        self.usage = self.usage + usage
        if cost is None and self._cost is not None and self.budget.max_cost_usd is not None:
            why = "a subagent's model has no known price, or its server reported no usage"
            self.events(Notice(level="warning", message=_COST_UNKNOWN.format(why=why)))
        self._cost = None if cost is None or self._cost is None else self._cost + cost
        self.events(UsageUpdated(usage=self.usage, cost_usd=self.cost_usd))
        if self.upstream is not None:
            self.upstream.charge(usage=usage, cost=cost, turns=turns)

    def _budget_stop(self) -> Finished | None:
        budget = self.budget
        if budget.max_turns is not None and self.turns - self._round_start_turn >= budget.max_turns:
            return Finished(TerminalReason.MAX_TURNS, f"reached --max-turns {budget.max_turns}")
        if budget.max_tokens is not None and self.usage.total_tokens >= budget.max_tokens:
            return Finished(
                TerminalReason.BUDGET_EXCEEDED,
                f"used {self.usage.total_tokens} tokens of --max-tokens {budget.max_tokens}",
            )
        cost = self.cost_usd
        if budget.max_cost_usd is not None and cost is not None and cost >= budget.max_cost_usd:
            return Finished(
                TerminalReason.BUDGET_EXCEEDED,
                f"spent ${cost:.4f} of --max-cost ${budget.max_cost_usd}",
            )
        deadline = self.deadline
        if deadline is not None and self.clock.now() >= deadline:
            return Finished(
                TerminalReason.TIMEOUT, f"the task's time limit of {budget.timeout_s}s ran out"
            )
        return None

    async def _step(self, history: list[Message]) -> Step:
        stop = self.budget_stop()
        if stop is not None:
            return stop
        spec = self.spec()
        self.context.model_window = spec.context_window
        stop = await self._compact_if_due(history, spec)
        if stop is not None:
            return stop
        self.turns += 1
        self.events(TurnStarted(turn=self.turns))
        self._notice_elision(self.context.advance(history))
        asked = self.clock.now()
        try:
            response, producer = await self._complete(history, spec)
        finally:
            self.api_s += self.clock.now() - asked
        self.stop_reason = response.stop_reason
        cost = self._account(spec, response.usage, known=response.usage_known)
        if self.upstream is not None:
            self.upstream.charge(usage=response.usage, cost=cost)
        message = replace(response.message, producer=producer)
        self.events(
            ModelResponded(
                turn=self.turns,
                stop_reason=response.stop_reason,
                usage=response.usage,
                text=message.text,
                tool_calls=len(message.tool_uses),
            )
        )
        reused = _reused_call_id(message, self._call_ids)
        if reused is not None:
            # The journal records calls by id: a reused id would overwrite the earlier call's
            # record. The API never does this (and the SSE accumulator retries a response that
            # repeats an id within itself); whatever model client sent it, stop cleanly (the
            # response is not kept, so the history stays valid).
            return Finished(
                TerminalReason.MODEL_ERROR,
                f"the model's response reuses the tool call id {reused!r} of an earlier call",
            )
        self._append(history, message)
        self.context.observe(history, response.usage)
        if self.compactor is not None:
            self.compactor.server_compacted(history, response.usage)
            self.compactor.warn_if_filling(history)
        reason = response.stop_reason
        if reason == StopReason.REFUSAL:
            return Finished(TerminalReason.REFUSED, "the model declined to continue (refusal)")
        if reason == StopReason.CONTEXT_WINDOW_EXCEEDED:
            return Finished(
                TerminalReason.CONTEXT_EXHAUSTED,
                "the conversation no longer fits the model's context window",
            )
        if reason == StopReason.PAUSE_TURN:
            # The API paused a long server-tool turn: sending the content back continues it.
            return Continue()
        if message.tool_uses:
            self._cut_streak = 0
            return await self._run_tools(history, message.tool_uses)
        if reason == StopReason.MAX_TOKENS:
            return self._continue_cut_text(history)
        self._cut_streak = 0
        return Finished(TerminalReason.COMPLETED)

    def _account(self, spec: ModelSpec, usage: Usage, *, known: bool) -> float | None:
        """Count a response's usage, and its cost at `spec`'s price, in the task's; returns
        that cost (None: unknown)."""
        self.usage = self.usage + usage
        cost = cost_usd(spec.price, usage) if known else None
        if cost is None and self._cost is not None and self.budget.max_cost_usd is not None:
            why = "no price is known" if spec.price is None else "the server reported no usage"
            self.events(Notice(level="warning", message=_COST_UNKNOWN.format(why=why)))
        self._cost = None if cost is None or self._cost is None else self._cost + cost
        self.events(UsageUpdated(usage=self.usage, cost_usd=self.cost_usd))
        return cost

    async def _compact_if_due(self, history: list[Message], spec: ModelSpec) -> Finished | None:
        """Compact older turns of what is sent if the context passed its threshold (unless the
        API compacts for this model); the summary request counts in the task's usage and cost
        (and may exhaust the budget)."""
        if self.compactor is None or self.compactor.server_side(spec) is not None:
            return None
        outcome = await self.compactor.auto(
            history, lambda: Turn(model=self.model, system=self.system, tools=self.runtime.specs())
        )
        if outcome is None:
            return None
        self._account_summary(outcome.call)
        if outcome.system is not None:
            self.system = outcome.system  # the instruction files, re-read
        return self._budget_stop()

    def _account_summary(self, call: SummaryCall) -> None:
        if call.spec is not None:
            self.api_s += call.api_s
            self._account(call.spec, call.usage, known=call.usage_known)

    async def _complete(
        self, history: list[Message], spec: ModelSpec
    ) -> tuple[ModelResponse, Producer]:
        """One model call with the history as the context view sends it, and who the response
        is from. A request refused as too long (e.g. the first one after a resume) is sent
        again with more elided, while that elides anything more."""
        while True:
            tools = self.runtime.specs()
            caller = Producer(
                model=spec.id, context=context_key(self.system, tools, self.context.state)
            )
            request = ModelRequest(
                system=self.system,
                messages=self._bound_thinking(
                    self.context.messages(history), caller, binds=spec.binds_thinking
                ),
                tools=tools,
                max_tokens=self.settings.max_tokens_per_response,
                effort=self.settings.effort,
                spec=spec,
                server_compaction=self.compactor.server_side(spec) if self.compactor else None,
            )
            try:
                return await self.model.complete(request, self.events), caller
            except ModelError as exc:
                if exc.reason is not TerminalReason.CONTEXT_EXHAUSTED:
                    raise
                elision = self.context.make_room(history)
                if elision is None:
                    raise
                self._notice_elision(elision)

    def _notice_elision(self, elision: Elision | None) -> None:
        if elision is not None:
            self.events(Notice(level="info", message=elision.describe()))

    def _continue_cut_text(self, history: list[Message]) -> Step:
        self._cut_streak += 1
        if self._cut_streak > self.settings.max_cut_continuations:
            self.events(
                Notice(level="warning", message="the answer was cut at the output token limit")
            )
            return Finished(TerminalReason.COMPLETED)
        self._append(
            history,
            Message.user(
                "Your response was cut off at the output token limit. Continue exactly where you "
                "stopped, without repeating anything."
            ),
        )
        return Continue()

    async def _run_tools(self, history: list[Message], calls: Sequence[ToolUseBlock]) -> Step:
        runtime = self.runtime
        records = runtime.propose(calls)
        denials_before = len(runtime.denials)
        try:
            await runtime.execute(calls, records)
        except BaseException as exc:
            runtime.interrupt(records, self._interruption(exc))
            self._append(history, _results_message(records, []))
            if isinstance(exc, FatalToolError):
                return Finished(exc.reason, exc.message)
            raise
        extra: list[str] = []
        finished: Step = Continue()
        try:
            for observer in self.observers:
                verdict = await observer.after_tools(records)
                if isinstance(verdict, Nudge):
                    extra.append(verdict.text)
                elif isinstance(verdict, Stop):
                    finished = Finished(verdict.reason, verdict.message)
        except BaseException:
            # The calls ran: a cancel or time-out while an observer looks at them still gives
            # each its real result (not "not executed").
            self._append(history, _results_message(records, []))
            raise
        self._append(history, _results_message(records, extra))
        if len(runtime.denials) > denials_before and (
            len(runtime.denials) >= self.settings.denial_limit
        ):
            return Finished(
                TerminalReason.PERMISSION_DENIED,
                f"{len(runtime.denials)} tool calls were denied permission",
            )
        return finished

    def _interruption(self, exc: BaseException) -> str:
        deadline = self.deadline
        if deadline is not None and self.clock.now() >= deadline:
            return "the task's time limit ran out"
        if isinstance(exc, asyncio.CancelledError):
            return "the task was cancelled"
        return f"the task stopped ({exc})"

    def _append(self, history: list[Message], message: Message) -> None:
        self._call_ids.update(call.id for call in message.tool_uses)
        history.append(message)
        self.journal.message_appended(message)

    def _close_open_calls(self, history: list[Message], why: str) -> None:
        """If the history ends with unanswered tool calls, answer each as not executed."""
        if not history or history[-1].role != "assistant" or not history[-1].tool_uses:
            return
        results = tuple(
            ToolResultBlock(
                tool_use_id=call.id,
                is_error=True,
                content=f"[not_executed] not executed: the task stopped ({why})",
            )
            for call in history[-1].tool_uses
        )
        self._append(history, Message(role="user", content=results))


def _reused_call_id(message: Message, earlier: set[str]) -> str | None:
    """A tool call id of `message` that an earlier call, in the history or in `message`, has."""
    fresh: set[str] = set()
    for call in message.tool_uses:
        if call.id in earlier or call.id in fresh:
            return call.id
        fresh.add(call.id)
    return None


def _results_message(records: Sequence[ToolCallRecord], extra: Sequence[str]) -> Message:
    blocks: list[ToolResultBlock | TextBlock] = [r.to_result_block() for r in records]
    blocks.extend(TextBlock(text=text) for text in extra)
    return Message(role="user", content=tuple(blocks))
