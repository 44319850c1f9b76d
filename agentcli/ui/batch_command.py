"""`agentcli batch TASKS.jsonl`: its options, parsed here and handed to `agentcli.batch`, which
is imported (with GitPython, and Ray for `--engine ray`) only when the command runs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer


def batch(
    tasks: Annotated[
        Path, typer.Argument(metavar="TASKS.jsonl", help="One task per line (SWE-bench fields).")
    ],
    out: Annotated[
        Path | None,
        typer.Option("--out", metavar="DIR", help="Output directory (default: batch-<time>)."),
    ] = None,
    workers: Annotated[
        int, typer.Option("--workers", metavar="N", help="Tasks at once (local engine).")
    ] = 4,
    engine: Annotated[str, typer.Option("--engine", metavar="ENGINE", help="local or ray.")] = (
        "local"
    ),
    ray_address: Annotated[
        str | None,
        typer.Option("--ray-address", metavar="ADDR", help="Ray cluster (default: RAY_ADDRESS)."),
    ] = None,
    max_cost: Annotated[
        float | None,
        typer.Option("--max-cost", metavar="USD", help="No new task once the batch cost this."),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option("-m", "--model", metavar="MODEL", help="Model of tasks that name none."),
    ] = None,
    permission_mode: Annotated[
        str | None,
        typer.Option("--permission-mode", metavar="MODE", help="Of tasks that name none (auto)."),
    ] = None,
    accept: Annotated[
        list[str],
        typer.Option(
            "--accept", metavar="CMD", help="Acceptance check for every task. Repeatable."
        ),
    ] = [],  # noqa: B006
    resume: Annotated[
        bool, typer.Option("--resume", help="Go on with the latest batch-* made from TASKS.")
    ] = False,
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="Run failed tasks again from their base.")
    ] = False,
    skip_bad_lines: Annotated[
        bool, typer.Option("--skip-bad-lines", help="Run the good lines of a file with bad ones.")
    ] = False,
    cpus_per_task: Annotated[
        float, typer.Option("--cpus-per-task", metavar="N", help="Ray: CPUs per task.")
    ] = 1.0,
    max_requests: Annotated[
        int | None,
        typer.Option("--max-requests", metavar="N", help="Model requests in flight, batch-wide."),
    ] = None,
) -> None:
    """Run many tasks, each in its own checkout: results.jsonl, preds.json, a summary."""
    from agentcli.batch.plan import BatchOptions
    from agentcli.batch.run import run_batch

    report = run_batch(
        BatchOptions(
            tasks_file=tasks,
            out=out,
            workers=workers,
            engine=engine,
            ray_address=ray_address,
            max_cost=max_cost,
            model=model,
            permission_mode=permission_mode,
            accept=list(accept),
            resume=resume,
            retry_failed=retry_failed,
            skip_bad_lines=skip_bad_lines,
            cpus_per_task=cpus_per_task,
            max_requests=max_requests,
        )
    )
    sys.stdout.write(report.table)
    sys.stdout.flush()
    raise typer.Exit(report.exit_code)


def register(app: typer.Typer) -> None:
    app.command("batch")(batch)
