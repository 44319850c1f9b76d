"""`agentcli run` in a long session, in-process against the fake Messages API: the stream-json
events of a compaction and the result's count, the one stderr line when the context passes
`warn_at`, and the summary request's cost under `--max-cost` (also with `compact_model`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentcli.testing.fake_api import FakeMessagesServer
from tests.inprocess import decoded, run_in_process
from tests.long.test_long_sessions import TASK, Script, anthropic_answer, files

WINDOW = 12_000


def prepare(workspace: Path, extra: str = "") -> None:
    files(workspace, 20)
    (workspace / ".agentcli").mkdir()
    (workspace / ".agentcli" / "config.toml").write_text(
        f"[context]\nwindow_tokens = {WINDOW}\nelide_at = 0.95\nkeep_recent = 2\n{extra}"
    )


def run(workspace: Path, turns: int, *args: str, env: dict[str, str | None] | None = None) -> Any:
    script = Script(turns, anthropic_answer)
    with FakeMessagesServer() as server:
        server.responder = script
        given: dict[str, str | None] = {
            "ANTHROPIC_BASE_URL": server.base_url,
            "ANTHROPIC_API_KEY": "test",
            **(env or {}),
        }
        done = decoded(
            run_in_process(
                *("run", "-C", str(workspace), "--permission-mode", "yolo", TASK, *args),
                cwd=workspace,
                env=given,
            )
        )
    return done, script


def test_stream_json_says_each_compaction_and_the_result_counts_them(workspace: Path) -> None:
    prepare(workspace)
    done, script = run(workspace, 20, "--output-format", "stream-json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    started = [e for e in events if e["type"] == "compaction_started"]
    finished = [e for e in events if e["type"] == "compaction_finished"]
    assert len(started) == len(finished) == len(script.summaries) >= 2
    for begin, end in zip(started, finished, strict=True):
        assert begin["trigger"] == end["trigger"] == "auto"
        assert begin["tokens_before"] == end["tokens_before"] > WINDOW * 0.85
        assert 0 < end["tokens_after"] < end["tokens_before"]
        assert end["summary_length"] == len(
            "SUMMARY: reading the files in order; the last one read is named in the recent turns."
        )
        assert end["messages_compacted"] > 0 and end["error"] is None
    filling = [e for e in events if e["type"] == "context_filling"]
    assert filling and filling[0]["window"] == WINDOW and filling[0]["compact_at"] == 10_200
    assert events[-1]["compactions"] == len(finished)
    # The summary requests are counted in the usage the result reports.
    assert events[-1]["usage"]["input_tokens"] == sum(
        len(json.dumps(r.body)) // 4 for r in script.work + script.summaries
    )


def test_text_progress_says_once_how_full_the_context_is(workspace: Path) -> None:
    prepare(workspace, "auto_compact = false\n")
    done, script = run(workspace, 7)
    assert done.returncode == 0, done.stderr
    assert script.summaries == []
    lines = [line for line in done.stderr.splitlines() if line.startswith("the context is ")]
    assert len(lines) == 1
    assert lines[0].endswith("tokens); auto-compaction is off (/compact in the REPL)"), lines


def test_agentcli_auto_compact_0_turns_it_off(workspace: Path) -> None:
    prepare(workspace)
    done, script = run(workspace, 12, "--output-format", "json", env={"AGENTCLI_AUTO_COMPACT": "0"})
    assert done.returncode == 0, done.stderr
    assert script.summaries == []
    assert json.loads(done.stdout)["compactions"] == 0


def test_the_summary_request_counts_against_max_cost(workspace: Path) -> None:
    prepare(workspace)
    # A first run says what the task had cost right before its first compaction, and right
    # after it (the `usage` event the summary request's cost brings).
    done, _script = run(workspace, 20, "--output-format", "stream-json")
    events = [json.loads(line) for line in done.stdout.splitlines()]
    first = next(n for n, e in enumerate(events) if e["type"] == "compaction_started")
    before = [e["cost_usd"] for e in events[:first] if e["type"] == "usage"][-1]
    after = next(e["cost_usd"] for e in events[first:] if e["type"] == "usage")
    assert after > before
    # With a limit between the two, the summary request is what exhausts the budget: the task
    # stops right after it, before another request goes out.
    limit = (before + after) / 2
    done, script = run(workspace, 20, "--output-format", "json", "--max-cost", f"{limit:.6f}")
    result = json.loads(done.stdout)
    assert result["terminal_reason"] == "budget_exceeded", result
    assert len(script.summaries) == 1
    assert script.order[-1][0] == "summary"
    assert result["cost_usd"] == after


def test_a_compact_model_without_a_price_cannot_run_under_max_cost(workspace: Path) -> None:
    prepare(workspace, 'compact_model = "some-unknown-model"\n')
    done, script = run(workspace, 3, "--output-format", "json", "--max-cost", "1")
    assert done.returncode == 2
    result = json.loads(done.stdout)
    assert "the price of compact_model 'some-unknown-model' is unknown" in result["error"]
    assert script.work == []


def test_a_compact_model_writes_the_summaries(workspace: Path) -> None:
    prepare(workspace, 'compact_model = "haiku"\n')
    done, script = run(workspace, 12, "--output-format", "json")
    assert done.returncode == 0, done.stderr
    assert script.summaries
    assert {r.body["model"] for r in script.summaries} == {"claude-haiku-5-5"}
    assert {r.body["model"] for r in script.work} == {"claude-opus-5-5"}
