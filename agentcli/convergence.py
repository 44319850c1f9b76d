"""The convergence guard: every turn should bring new evidence, change the artifact, or resolve
an error. It watches each batch of tool results and detects three kinds of non-progress:

- the same call (tool + canonical input) returning the same result, again and again;
- the same call failing again while the workspace (artifact version) has not changed;
- A/B alternation: two batches of calls taking turns, each returning what it returned before.

Polling that returns changing output is progress (the result differs), and so is a failing check
re-run after an edit (the artifact version differs). The first detection of a pattern nudges the
model with exactly what repeated; the same pattern again stops the task with `no_progress`.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from agentcli.call_records import ToolCallRecord
from agentcli.loop_steps import Nudge, Stop
from agentcli.messages import canonical_json
from agentcli.settings import DEFAULTS
from agentcli.terminal_reason import TerminalReason
from agentcli.truncation import shorten

_SHOWN_CHARS = 160
"""How much of a repeated call's signature a nudge or stop message quotes."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConvergenceSettings:
    repeat_limit: int = DEFAULTS.convergence.repeat_limit
    """Identical (call, result) pairs before the model is nudged."""
    failure_limit: int = DEFAULTS.convergence.failure_limit
    """Failures of the same call on an unchanged artifact before the model is nudged."""
    alternation_cycles: int = 2
    """A/B cycles (A,B,A,B = 2) before the model is nudged."""


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def call_signature(record: ToolCallRecord) -> str:
    return f"{record.name} {canonical_json(record.input)}"


@dataclass
class ConvergenceGuard:
    """A TurnObserver for the QueryLoop. `artifact_version` is awaited only after a failure;
    it is slow (git, hashing), so the conversation takes it in a worker thread."""

    artifact_version: Callable[[], Awaitable[str | None]]
    settings: ConvergenceSettings = field(default_factory=ConvergenceSettings)
    _results: Counter[tuple[str, str]] = field(default_factory=Counter)
    _failures: Counter[tuple[str, str | None]] = field(default_factory=Counter)
    _batches: list[str] = field(default_factory=list)
    _nudged: set[str] = field(default_factory=set)

    async def after_tools(self, records: Sequence[ToolCallRecord]) -> Nudge | Stop | None:
        findings = [*await self._repeats(records), *self._alternation(records)]
        if not findings:
            return None
        pattern, message = findings[0]
        if pattern in self._nudged:
            return Stop(TerminalReason.NO_PROGRESS, f"no progress after a warning: {message}")
        self._nudged.add(pattern)
        return Nudge(
            f"agentcli convergence guard: {message} Repeating it will not produce new "
            "information. Change your approach: look at the problem from another angle, read "
            "different code, or stop and explain what is blocking you. If this repeats, the "
            "task will be stopped."
        )

    async def _repeats(self, records: Sequence[ToolCallRecord]) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        version: str | None = None
        version_known = False
        for record in records:
            signature = call_signature(record)
            result_key = (signature, _digest(f"{record.status}\0{record.result_text}"))
            self._results[result_key] += 1
            count = self._results[result_key]
            shown = shorten(signature, _SHOWN_CHARS)
            if count >= self.settings.repeat_limit:
                found.append(
                    (
                        f"same:{result_key}",
                        f"the call {shown} has returned the same result {count} times.",
                    )
                )
                continue
            if record.is_error:
                if not version_known:
                    version, version_known = await self.artifact_version(), True
                failure_key = (signature, version)
                self._failures[failure_key] += 1
                failures = self._failures[failure_key]
                if failures >= self.settings.failure_limit:
                    found.append(
                        (
                            f"fail:{failure_key}",
                            f"the call {shown} has failed {failures} times while the "
                            "workspace did not change.",
                        )
                    )
        return found

    def _alternation(self, records: Sequence[ToolCallRecord]) -> list[tuple[str, str]]:
        batch = json.dumps([[call_signature(r), r.status, _digest(r.result_text)] for r in records])
        self._batches.append(batch)
        window = 2 * self.settings.alternation_cycles
        recent = self._batches[-window:]
        if len(recent) < window or recent[0] == recent[1]:
            return []
        if all(recent[i] == recent[i % 2] for i in range(window)):
            first = shorten(", ".join(call_signature(r) for r in records), _SHOWN_CHARS)
            key = "alt:" + _digest("".join(sorted(recent[:2])))
            return [
                (
                    key,
                    f"you are alternating between the same two steps ({first} and "
                    f"back) with the same results, {self.settings.alternation_cycles} "
                    "times.",
                )
            ]
        return []
