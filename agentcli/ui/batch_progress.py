"""What the user sees while a batch runs and when it ends: on a terminal, a rich progress bar
(done/total, succeeded/failed, cost so far, ETA) on stderr; otherwise one line per finished
task on stderr; at the end, the summary table on stdout. Instance ids, errors and everything
else from the task file or a run reach the terminal through `ui.safe`. (`batch.run.BatchView`
is what the batch tells.)"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from agentcli.batch.output import Summary
from agentcli.batch.records import TaskOutcome
from agentcli.ui.term.safe import safe_console, visible


class Progress:
    """`batch.run.BatchView` on stderr."""

    def __init__(self, *, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.total = 0
        self.done = 0
        self.succeeded = 0
        self.failed = 0
        self.cost = 0.0
        self._bar: Any = None
        self._task: Any = None

    def started(self, total: int) -> None:
        if self.stream.isatty() and total:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as Bar

            self._bar = Bar(
                TextColumn("batch"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[tally]}"),
                TimeRemainingColumn(),
                console=safe_console(file=self.stream),
                transient=False,
            )
            self._task = self._bar.add_task("batch", total=total, tally=self._tally())
            self._bar.start()

    def _tally(self) -> str:
        return f"✓ {self.succeeded}  ✗ {self.failed}  ${self.cost:.4f}"

    def finished(self, outcome: TaskOutcome) -> None:
        self.done += 1
        state = outcome.state
        if state in ("succeeded", "unverified"):
            self.succeeded += 1
        else:
            self.failed += 1
        self.cost += outcome.cost_usd or 0.0
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, tally=self._tally())
            return
        cost = "cost unknown" if outcome.cost_usd is None else f"${outcome.cost_usd:.4f}"
        error = outcome.result.get("error")
        why = f": {visible(str(error))}" if error and state not in ("succeeded",) else ""
        self.stream.write(
            f"[{self.done}/{self.total}] {visible(outcome.instance_id)} {state} "
            f"({outcome.wall_s:.1f}s, {cost}){why}\n"
        )
        self.stream.flush()

    def said(self, line: str) -> None:
        if self._bar is not None:
            self._bar.console.print(line, markup=False, highlight=False)
        else:
            self.stream.write(visible(line) + "\n")
            self.stream.flush()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


def summary_table(summary: Summary, out: str) -> str:
    rows = [
        ("tasks", str(summary.tasks)),
        ("succeeded", str(summary.succeeded)),
        ("failed", str(summary.failed)),
        ("unverified", str(summary.unverified)),
        ("errors", str(summary.errors)),
    ]
    if summary.aborted:
        rows.append(("aborted", str(summary.aborted)))
    if summary.not_started:
        rows.append(("not started", str(summary.not_started)))
    unknown = f" (+ {summary.cost_unknown} runs of unknown cost)" if summary.cost_unknown else ""
    rows += [
        ("cost", f"${summary.cost_usd:.4f}{unknown}"),
        ("wall", f"{summary.wall_s:.1f}s ({summary.ran} run now)"),
        ("tasks/hour", f"{summary.tasks_per_hour:.1f}"),
        ("results", visible(out)),
    ]
    width = max(len(name) for name, _ in rows)
    return "".join(f"{name:<{width}}  {value}\n" for name, value in rows)
