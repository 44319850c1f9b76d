"""`agentcli batch TASKS.jsonl`: its options (parsed in `ui/cli.py`) handed to
`agentcli.batch`, which is imported (with GitPython, and Ray for `--engine ray`) only now, and
the summary table printed."""

from __future__ import annotations

import sys
from typing import Any


def batch_command(options: dict[str, Any]) -> int:
    """Run the batch; the exit code (UsageError, exit 2, when it cannot start)."""
    from agentcli.batch.plan import BatchOptions
    from agentcli.batch.run import run_batch
    from agentcli.ui.batch_progress import Progress, summary_table

    report = run_batch(BatchOptions(**{**options, "accept": list(options["accept"])}), Progress())
    sys.stdout.write(summary_table(report.summary, str(report.out)))
    sys.stdout.flush()
    return report.exit_code
