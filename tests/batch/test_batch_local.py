"""`agentcli batch` on the local engine, end to end: real repositories and worktrees, every
task a real `agentcli run` process, one fake Messages API answering all of them."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agentcli.testing.fake_api import FakeMessagesServer
from tests.batch.helpers import (
    ACCEPT,
    HEAVY_TIMEOUT_S,
    Hold,
    check_predictions_apply,
    git,
    kill_when_held,
    make_repo,
    mixed_tasks,
    results,
    scripts,
    write_tasks,
)
from tests.inprocess import decoded, run_in_process

# Real `agentcli run` processes, many of them: slow on a loaded machine, not hung.
pytestmark = pytest.mark.timeout(HEAVY_TIMEOUT_S)


def test_five_tasks_a_killed_one_and_a_rerun_that_skips_and_resumes(tmp_path: Path) -> None:
    base_a = make_repo(tmp_path / "repo-a", {"README": "hello\n"})
    base_b = make_repo(tmp_path / "repo-b", {"README": "hello\n", "lib.py": "x = 1\n"})
    lines, expected = mixed_tasks(tmp_path / "repo-a", tmp_path / "repo-b")
    tasks = write_tasks(tmp_path / "tasks.jsonl", lines)
    out = tmp_path / "out"
    hold = Hold()
    answers = scripts(hold)
    with FakeMessagesServer(responder=answers) as server:
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test"}
        killer = kill_when_held(hold, out / "tasks" / "victim" / "run.json", "child_pid")
        first = decoded(
            run_in_process(
                "batch", str(tasks), "--out", str(out), "--workers", "2", cwd=tmp_path, env=env
            )
        )
        hold.release.set()  # (if the batch ended without reaching it: the killer gives up)
        killer.join()
        assert first.returncode == 1, first.stderr  # some tasks failed their checks
        assert server.pairing_problems() == []

        by_id = {line["instance_id"]: line for line in results(out)}
        assert sorted(by_id) == sorted(expected)  # every task once
        states = {ident: line["task_state"] for ident, line in by_id.items()}
        assert states == {**expected, "victim": "error"}
        victim = by_id["victim"]
        assert "killed by signal 9" in victim["error"]
        assert victim["session_id"]  # found in its journal: the rerun resumes it
        for line in by_id.values():
            assert line["attempt"] == 1
            assert line["worker"] in ("local:1", "local:2")
            assert Path(line["workspace"]) == out / "tasks" / line["instance_id"] / "workspace"
        assert by_id["ok-1"]["acceptance"][0]["command"] == ACCEPT
        summary = json.loads((out / "summary.json").read_text())
        assert summary["succeeded"] == 1
        assert summary["failed"] == 1
        assert summary["unverified"] == 2
        assert summary["errors"] == 1
        assert summary["ran"] == 5
        costs = [line["cost_usd"] for line in by_id.values() if line["cost_usd"] is not None]
        assert summary["cost_usd"] == round(sum(costs), 6)
        assert summary["cost_unknown"] == 1  # the killed run never reported its cost
        assert "succeeded   1" in first.stdout
        assert first.stderr.count("\n[") + first.stderr.startswith("[") == 5  # a line each

        # Rerun: the 4 finished tasks are skipped; the killed one is resumed from its
        # journal, and what it did before (writing answer.txt) is not done again.
        requests_before = len(server.requests)
        second = decoded(
            run_in_process(
                "batch", str(tasks), "--out", str(out), "--workers", "2", cwd=tmp_path, env=env
            )
        )
    assert second.returncode == 1  # the failed ones still count
    assert "4 tasks already finished" in second.stderr
    by_id = {line["instance_id"]: line for line in results(out)}
    assert len(results(out)) == 5
    victim = by_id["victim"]
    assert victim["task_state"] == "succeeded", victim
    assert victim["attempt"] == 2
    assert victim["restarted"] is False
    assert victim["tool_calls"] == []  # the resumed run wrote nothing again
    assert answers.served("victim", 0) == 1  # the model was never asked to start over
    assert hold.held == 1
    assert len(server.requests) - requests_before == 1  # one request: the resumed task's
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["succeeded"], summary["errors"], summary["ran"]) == (2, 0, 1)
    attempts = (out / "attempts.jsonl").read_text().splitlines()
    assert len(attempts) == 6
    assert summary["cost_usd"] == round(sum(json.loads(a)["cost_usd"] or 0 for a in attempts), 6)
    assert by_id["victim"]["cost_all_attempts_usd"] == victim["cost_usd"]  # killed: unknown

    # The predictions apply on fresh checkouts of the base commits.
    repos = {
        line.get("instance_id", line.get("id")): (
            Path(line["repo"]),
            base_a if line["repo"].endswith("repo-a") else base_b,
        )
        for line in lines
    }
    preds = json.loads((out / "preds.json").read_text())
    assert sorted(preds) == sorted(expected)
    assert "+42" in preds["ok-1"]["model_patch"]
    assert "new file mode" in preds["ok-1"]["model_patch"]
    assert "-hello\n+bye" in preds["edit-4"]["model_patch"]
    assert preds["plain-3"]["model_patch"] == ""
    assert check_predictions_apply(out, repos, tmp_path) == 4  # ok, bad, edit, victim
    # The user's repositories are as they were: worktrees only.
    assert git("status", "--porcelain", cwd=tmp_path / "repo-a") == ""
    assert git("rev-parse", "HEAD", cwd=tmp_path / "repo-a") == base_a


def test_bad_lines_are_reported_with_their_numbers_before_anything_starts(
    tmp_path: Path,
) -> None:
    make_repo(tmp_path / "repo", {"README": "hello\n"})
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [
            {"id": "one", "task": "[plain] hi", "repo": "repo"},
            "{not json",
            {"id": "two", "repo": "repo"},
            {"id": "one", "task": "[plain] again", "repo": "repo"},
            {"id": "three", "task": "[plain] x", "repo": "repo", "limits": {"max_turn": 2}},
            {"id": "four", "task": "[plain] x", "repo": "missing-repo"},
        ],
    )
    out = tmp_path / "out"
    with FakeMessagesServer(responder=scripts()) as server:
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test"}
        done = decoded(
            run_in_process("batch", str(tasks), "--out", str(out), cwd=tmp_path, env=env)
        )
        assert done.returncode == 2
        assert "line 2: not JSON" in done.stderr
        assert "line 3: missing field 'problem_statement' (or task)" in done.stderr
        assert "line 4: duplicate instance_id 'one' (line 1)" in done.stderr
        assert "line 5: unknown key 'limits.max_turn'" in done.stderr
        assert server.requests == []
        assert not out.exists()  # nothing started, nothing written

        # --skip-bad-lines runs the good lines, but an unreachable repository stops it all.
        done = decoded(
            run_in_process(
                "batch", str(tasks), "--out", str(out), "--skip-bad-lines", cwd=tmp_path, env=env
            )
        )
        assert done.returncode == 2
        assert "line 6: repo" in done.stderr
        assert "missing-repo is not a directory" in done.stderr
        assert server.requests == []

        write_tasks(tasks, [*tasks.read_text().splitlines()[:5]])
        done = decoded(
            run_in_process(
                "batch", str(tasks), "--out", str(out), "--skip-bad-lines", cwd=tmp_path, env=env
            )
        )
    assert done.returncode == 0, done.stderr
    assert "skipped" in done.stderr and "line 2: not JSON" in done.stderr
    assert [line["instance_id"] for line in results(out)] == ["one"]


def test_the_batch_budget_stops_new_tasks_and_limits_the_running_one(tmp_path: Path) -> None:
    make_repo(tmp_path / "repo", {"README": "hello\n"})
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"id": f"t{n}", "task": "[ok] write", "repo": "repo"} for n in range(1, 5)],
    )
    out = tmp_path / "out"
    with FakeMessagesServer(responder=scripts()) as server:
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test"}
        # A task of two requests costs $0.0016; the second gets the $0.0004 that remains,
        # which its first request spends: its own --max-cost stops it before the next.
        done = decoded(
            run_in_process(
                "batch",
                str(tasks),
                "--out",
                str(out),
                "--workers",
                "1",
                "--max-cost",
                "0.002",
                cwd=tmp_path,
                env=env,
            )
        )
    assert done.returncode == 3, done.stderr
    states = {line["instance_id"]: line["task_state"] for line in results(out)}
    assert states == {"t1": "unverified", "t2": "budget_exhausted"}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["not_started"] == 2
    assert summary["cost_usd"] == 0.0024
    assert "not started  2" in done.stdout


def test_retry_failed_runs_a_failed_task_again_from_its_base(tmp_path: Path) -> None:
    make_repo(tmp_path / "repo", {"README": "hello\n"})
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"id": "b", "task": "[bad] write", "repo": "repo", "accept": [ACCEPT]}],
    )
    out = tmp_path / "out"
    answers = scripts()
    with FakeMessagesServer(responder=answers) as server:
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test"}
        args = ("batch", str(tasks), "--out", str(out))
        assert run_in_process(*args, cwd=tmp_path, env=env).returncode == 1
        assert run_in_process(*args, cwd=tmp_path, env=env).returncode == 1
        assert answers.served("bad", 0) == 1  # a failed task is finished: not run again
        (tmp_path / "repo" / "answer.txt").write_text("unrelated\n")  # the user's checkout
        done = decoded(run_in_process(*args, "--retry-failed", cwd=tmp_path, env=env))
    assert done.returncode == 1
    assert answers.served("bad", 0) == 2
    [line] = results(out)
    assert (line["attempt"], line["task_state"], line["restarted"]) == (2, "failed", False)
    assert (
        line["session_id"]
        != json.loads((out / "attempts.jsonl").read_text().splitlines()[0])["session_id"]
    )
    # The failed run's journal is kept beside the new one.
    assert (out / "tasks" / "b" / "home-attempt-1" / "journal.sqlite3").exists()


def test_ctrl_c_aborts_the_running_tasks_which_a_rerun_resumes(tmp_path: Path) -> None:
    """The real binary: SIGINT stops scheduling, interrupts both running tasks (each ends as
    aborted), writes them, exits 130; the rerun resumes each from its journal."""
    make_repo(tmp_path / "repo", {"README": "hello\n"})
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [
            {"id": f"v{n}", "task": "[victim] write", "repo": "repo", "accept": [ACCEPT]}
            for n in (1, 2)
        ]
        + [{"id": "later", "task": "[ok] write", "repo": "repo"}],
    )
    out = tmp_path / "out"
    hold = Hold(times=2)
    with FakeMessagesServer(responder=scripts(hold)) as server:
        env = {
            **os.environ,
            "ANTHROPIC_BASE_URL": server.base_url,
            "ANTHROPIC_API_KEY": "test",
        }
        argv = [sys.executable, "-m", "agentcli", "batch", str(tasks), "--out", str(out)]
        batch = subprocess.Popen(
            [*argv, "--workers", "2"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        if not hold.reached.wait(HEAVY_TIMEOUT_S):  # both tasks are waiting on the model
            batch.kill()
            raise AssertionError(f"not held ({hold.held}): {batch.communicate()}")
        batch.send_signal(signal.SIGINT)
        stdout, stderr = batch.communicate(timeout=120)
        hold.release.set()
        assert batch.returncode == 130, stderr
        states = {line["instance_id"]: line["task_state"] for line in results(out)}
        assert states == {"v1": "aborted", "v2": "aborted"}  # `later` never started
        assert "not started" in stdout

        rerun = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    by_id = {line["instance_id"]: line for line in results(out)}
    assert {i: line["task_state"] for i, line in by_id.items()} == {
        "v1": "succeeded",
        "v2": "succeeded",
        "later": "unverified",
    }
    assert by_id["v1"]["attempt"] == 2
    assert by_id["v1"]["tool_calls"] == []  # resumed: answer.txt was written once


def test_a_task_whose_journal_is_gone_starts_again_from_its_base_and_says_so(
    tmp_path: Path,
) -> None:
    """As a Ray retry on another machine without shared storage would find it."""
    make_repo(tmp_path / "repo", {"README": "hello\n"})
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"id": "victim", "task": "[victim] write", "repo": "repo", "accept": [ACCEPT]}],
    )
    out = tmp_path / "out"
    hold = Hold()
    answers = scripts(hold)
    with FakeMessagesServer(responder=answers) as server:
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test"}
        killer = kill_when_held(hold, out / "tasks" / "victim" / "run.json", "child_pid")
        first = run_in_process("batch", str(tasks), "--out", str(out), cwd=tmp_path, env=env)
        hold.release.set()
        killer.join()
        assert first.returncode == 1
        [line] = results(out)
        assert line["task_state"] == "error" and line["session_id"]
        shutil.rmtree(out / "tasks" / "victim" / "home")  # its journal is not here
        again = run_in_process("batch", str(tasks), "--out", str(out), cwd=tmp_path, env=env)
    assert again.returncode == 0
    [line] = results(out)
    assert (line["task_state"], line["attempt"], line["restarted"]) == ("succeeded", 2, True)
    assert answers.served("victim", 0) == 2  # from the start again, in a fresh checkout
    assert [call["name"] for call in line["tool_calls"]] == ["write_file"]


def test_setup_runs_sandboxed_in_the_fresh_checkout_and_a_failing_one_is_an_error(
    tmp_path: Path,
) -> None:
    make_repo(tmp_path / "repo", {"README": "hello\n"})
    out = tmp_path / "out"
    # In the sandbox the host's /tmp is a private one holding only the checkout: a write
    # outside it lands there, and the batch's files next to the checkout are not there.
    confined = [f"touch {tmp_path / 'escaped'}", f"test ! -e {out / 'batch.json'}"]
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [
            {
                "id": "s1",
                "task": "[ok] write",
                "repo": "repo",
                "setup": [*confined, "echo ready > prepared"],
                "accept": ["test -f prepared", ACCEPT],
            },
            {
                "id": "s2",
                "task": "[ok] write",
                "repo": "repo",
                "setup": ["true", "exit 3", "touch x"],
            },
        ],
    )
    answers = scripts()
    with FakeMessagesServer(responder=answers) as server:
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test"}
        done = decoded(
            run_in_process("batch", str(tasks), "--out", str(out), cwd=tmp_path, env=env)
        )
    assert done.returncode == 1
    by_id = {line["instance_id"]: line for line in results(out)}
    assert by_id["s1"]["task_state"] == "succeeded", (by_id["s1"].get("error"), by_id["s1"])
    assert not (tmp_path / "escaped").exists()
    assert by_id["s2"]["task_state"] == "error"
    assert f"setup command exited 3 (see {out}/tasks/s2/setup.log): exit 3" in by_id["s2"]["error"]
    assert not (out / "tasks" / "s2" / "workspace" / "x").exists()  # the rest did not run
    assert answers.served("ok", 0) == 1  # s2's agent never started
    assert "+ready" in json.loads((out / "preds.json").read_text())["s1"]["model_patch"]


def test_a_succeeded_task_is_committed_on_its_own_branch_and_a_failed_one_is_not(
    tmp_path: Path,
) -> None:
    """With a git identity, each task that succeeded has its changes committed on
    `agentcli/<instance_id>` (the same commit `run --commit` makes: exactly its files, its
    evidence and ids in the message); a failed task's are left uncommitted, its diff still in
    `preds.json`. The user's own branch is untouched."""
    base = make_repo(tmp_path / "repo", {"README": "hello\n"})
    lines = [
        {
            "instance_id": "good",
            "problem_statement": "[ok] write it",
            "repo": str(tmp_path / "repo"),
        },
        {
            "instance_id": "poor",
            "problem_statement": "[bad] write it",
            "repo": str(tmp_path / "repo"),
        },
    ]
    for line in lines:
        line["accept"] = [ACCEPT]
    tasks = write_tasks(tmp_path / "tasks.jsonl", lines)
    out = tmp_path / "out"
    identity = {
        "GIT_AUTHOR_NAME": "Ada",
        "GIT_AUTHOR_EMAIL": "ada@example.com",
        "GIT_COMMITTER_NAME": "Ada",
        "GIT_COMMITTER_EMAIL": "ada@example.com",
    }
    with FakeMessagesServer(responder=scripts()) as server:
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test", **identity}
        done = decoded(
            run_in_process("batch", str(tasks), "--out", str(out), cwd=tmp_path, env=env)
        )
    assert done.returncode == 1, done.stderr  # `poor` failed its check
    by_id = {line["instance_id"]: line for line in results(out)}
    assert by_id["good"]["commit"]["branch"] == "agentcli/good"
    assert by_id["poor"]["commit"] is None and by_id["poor"]["commit_skipped"]
    repo = tmp_path / "repo"
    message = git("log", "-1", "--format=%B", "agentcli/good", cwd=repo)
    assert f"Agentcli-Task: {by_id['good']['task_id']}" in message
    assert git("diff", "--name-only", base, "agentcli/good", cwd=repo) == "answer.txt"
    assert git("rev-parse", "main", cwd=repo) == base  # nothing went on the user's branch
    branches = git("branch", "--list", "agentcli/*", "--format=%(refname:short)", cwd=repo)
    assert branches.split() == ["agentcli/good"]
    assert "+41" in json.loads((out / "preds.json").read_text())["poor"]["model_patch"]
