"""What a batch leaves in its directory, written by the driver alone (workers only write under
`tasks/`):

- `results.jsonl`: one line per task, appended as each finishes (a task run again in a later
  run into the same directory: its newest line counts, and the file is rewritten with one line
  per task, in task-file order, when the batch ends);
- `attempts.jsonl`: every run of every task, appended, never rewritten (what each cost);
- `patches/ID.diff`: each finished task's diff from its base commit;
- `preds.json`: SWE-bench predictions, `{ID: {instance_id, model_name_or_path, model_patch}}`
  (mini-swe-agent's shape; SWE-bench's harness reads it), for every task whose run ended
  (not for aborted or errored ones, which a rerun resumes);
- `summary.json`: the summary table's numbers.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agentcli.batch.records import ERROR_STATE, FAILED_STATES, FINISHED_STATES, TaskOutcome


@dataclass(frozen=True, slots=True, kw_only=True)
class Summary:
    tasks: int
    succeeded: int
    failed: int
    unverified: int
    errors: int
    aborted: int
    not_started: int
    cost_usd: float
    cost_unknown: int
    """Runs whose cost is unknown (no price, or killed before reporting it)."""
    ran: int
    """Tasks run in this invocation."""
    wall_s: float

    @property
    def tasks_per_hour(self) -> float:
        return self.ran * 3600 / self.wall_s if self.wall_s > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "tasks_per_hour": round(self.tasks_per_hour, 1)}


def _atomic_write(path: Path, text: str) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(text)
    Path(temporary).replace(path)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of `path`'s lines; a line cut short (the batch was killed while writing
    it) or otherwise not an object is left out."""
    if not path.exists():
        return []
    found = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and isinstance(value.get("instance_id"), str):
            found.append(value)
    return found


class BatchOutput:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.results_path = out / "results.jsonl"
        self.attempts_path = out / "attempts.jsonl"
        self.patches = out / "patches"
        self.latest: dict[str, dict[str, Any]] = {
            line["instance_id"]: line for line in read_jsonl(self.results_path)
        }
        self._costs: dict[str, float] = {}
        self._attempts: dict[str, int] = {}
        for line in read_jsonl(self.attempts_path):
            self._count(line)

    def _count(self, line: dict[str, Any]) -> None:
        ident = line["instance_id"]
        cost = line.get("cost_usd")
        if isinstance(cost, int | float):
            self._costs[ident] = self._costs.get(ident, 0.0) + float(cost)
        attempt = line.get("attempt")
        if isinstance(attempt, int):
            self._attempts[ident] = max(self._attempts.get(ident, 0), attempt)

    def attempts(self, instance_id: str) -> int:
        return self._attempts.get(instance_id, 0)

    def spent_usd(self) -> float:
        return sum(self._costs.values())

    def record(self, outcome: TaskOutcome) -> dict[str, Any]:
        """Append `outcome` (a run that ended: finished, aborted or an error); its line."""
        line = outcome.line()
        with self.attempts_path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")
        self._count(line)
        line["cost_all_attempts_usd"] = self._costs.get(outcome.instance_id)
        if outcome.model_patch is not None:
            self.patches.mkdir(exist_ok=True)
            _atomic_write(self.patches / f"{outcome.instance_id}.diff", outcome.model_patch)
        with self.results_path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")
        self.latest[outcome.instance_id] = line
        return line

    def finish(self, order: Sequence[str]) -> None:
        """Rewrite `results.jsonl` with one line per task, and write `preds.json`."""
        kept = [self.latest[i] for i in order if i in self.latest]
        kept += [line for i, line in self.latest.items() if i not in set(order)]
        _atomic_write(self.results_path, "".join(json.dumps(line) + "\n" for line in kept))
        preds = {}
        for line in kept:
            ident = line["instance_id"]
            patch_file = self.patches / f"{ident}.diff"
            if line.get("task_state") in FINISHED_STATES and patch_file.exists():
                preds[ident] = {
                    "instance_id": ident,
                    "model_name_or_path": line.get("model") or "agentcli",
                    "model_patch": patch_file.read_text(encoding="utf-8"),
                }
        _atomic_write(self.out / "preds.json", json.dumps(preds, indent=1) + "\n")

    def summary(self, order: Iterable[str], *, ran: int, wall_s: float) -> Summary:
        counts = {"succeeded": 0, "failed": 0, "unverified": 0, "errors": 0, "aborted": 0}
        missing = 0
        unknown = 0
        total = 0
        for ident in order:
            total += 1
            line = self.latest.get(ident)
            if line is None:
                missing += 1
                continue
            state = line.get("task_state")
            if state in FAILED_STATES:
                counts["failed"] += 1
            elif state == ERROR_STATE or state not in (*counts, *FINISHED_STATES):
                counts["errors"] += 1
            else:
                counts[str(state)] += 1
        for line in read_jsonl(self.attempts_path):
            unknown += not isinstance(line.get("cost_usd"), int | float)
        summary = Summary(
            tasks=total,
            not_started=missing,
            cost_usd=round(self.spent_usd(), 6),
            cost_unknown=unknown,
            ran=ran,
            wall_s=round(wall_s, 3),
            **counts,
        )
        _atomic_write(self.out / "summary.json", json.dumps(summary.to_json(), indent=1) + "\n")
        return summary
