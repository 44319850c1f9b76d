"""`agentcli batch --engine ray` on a real local Ray (`ray.init(num_cpus=2)`, started once for
this module: it costs seconds of CPU), every task a Ray task running a real `agentcli run`."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray

from agentcli.batch import ledger
from agentcli.testing.fake_api import FakeMessagesServer
from tests.batch.helpers import (
    ACCEPT,
    HEAVY_TIMEOUT_S,
    Hold,
    check_predictions_apply,
    kill_when_held,
    make_repo,
    mixed_tasks,
    results,
    scripts,
    write_tasks,
)
from tests.conftest import CHECKOUT
from tests.inprocess import decoded, run_in_process

# Real `agentcli run` processes, many of them: slow on a loaded machine, not hung.
pytestmark = pytest.mark.timeout(HEAVY_TIMEOUT_S)


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    # Ray's session directory holds unix sockets: a short path of its own.
    temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    ray.init(
        num_cpus=2,
        _node_ip_address="127.0.0.1",
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.ERROR,
        object_store_memory=80 * 1024 * 1024,
        _temp_dir=temp,
        # The workers' own environment, as on a cluster: they import this checkout (as the
        # tests' `python -m agentcli` does) and hold the API key, which never travels with a
        # task (the base URL of the fake API does).
        runtime_env={"env_vars": {"PYTHONPATH": str(CHECKOUT), "ANTHROPIC_API_KEY": "test"}},
    )
    try:
        yield
    finally:
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)


def test_five_tasks_on_ray_with_a_worker_lost_mid_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base_a = make_repo(tmp_path / "repo-a", {"README": "hello\n"})
    base_b = make_repo(tmp_path / "repo-b", {"README": "hello\n", "lib.py": "x = 1\n"})
    lines, expected = mixed_tasks(tmp_path / "repo-a", tmp_path / "repo-b")
    # The victim first: killed holding the batch's one model-request slot while the other
    # tasks wait for it on both CPUs, so Ray cannot start it again until the slot's lease
    # runs out (the batch hung here before slots were leases). A shorter lease than the
    # default 10 s, still five renewals long (the gates renew every second).
    lines.insert(0, lines.pop())
    monkeypatch.setattr(ledger, "LEASE_S", 5.0)
    tasks = write_tasks(tmp_path / "tasks.jsonl", lines)
    out = tmp_path / "out"
    hold = Hold()
    answers = scripts(hold)
    args = ("batch", str(tasks), "--out", str(out), "--engine", "ray", "--max-requests", "1")
    with FakeMessagesServer(responder=answers) as server:
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test"}
        # The Ray worker running `victim` dies mid-task (its agentcli run with it): Ray runs
        # the task again, which resumes it from its journal (DIR is on this machine).
        killer = kill_when_held(hold, out / "tasks" / "victim" / "run.json", "worker_pid")
        first = decoded(run_in_process(*args, cwd=tmp_path, env=env))
        hold.release.set()  # (if the batch ended without reaching it: the killer gives up)
        killer.join()
        assert first.returncode == 1, first.stderr
        assert server.max_in_flight == 1  # --max-requests 1, across all the workers
        assert server.pairing_problems() == []
        by_id = {line["instance_id"]: line for line in results(out)}
        assert {ident: line["task_state"] for ident, line in by_id.items()} == expected
        victim = by_id["victim"]
        assert (victim["attempt"], victim["restarted"]) == (2, False)
        assert victim["tool_calls"] == []  # resumed: answer.txt was not written again
        assert answers.served("victim", 0) == 1
        assert all(line["worker"].count(":") == 1 for line in by_id.values())
        summary = json.loads((out / "summary.json").read_text())
        assert (summary["succeeded"], summary["failed"], summary["unverified"]) == (2, 1, 2)
        assert summary["errors"] == 0
        costs = [
            json.loads(a)["cost_usd"] or 0
            for a in (out / "attempts.jsonl").read_text().splitlines()
        ]
        assert summary["cost_usd"] == round(sum(costs), 6)

        requests = len(server.requests)
        again = decoded(run_in_process(*args, cwd=tmp_path, env=env))
        assert again.returncode == 1
        assert len(server.requests) == requests  # every task finished: none runs again
        assert "5 tasks already finished" in again.stderr
    repos = {
        line.get("instance_id", line.get("id")): (
            Path(line["repo"]),
            base_a if line["repo"].endswith("repo-a") else base_b,
        )
        for line in lines
    }
    assert check_predictions_apply(out, repos, tmp_path) == 4  # ok, bad, edit, victim


def test_ctrl_c_on_ray_aborts_the_running_tasks_which_a_rerun_resumes(tmp_path: Path) -> None:
    make_repo(tmp_path / "repo", {"README": "hello\n"})
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [
            {"id": f"v{n}", "task": "[victim] write", "repo": "repo", "accept": [ACCEPT]}
            for n in (1, 2)
        ],
    )
    out = tmp_path / "out"
    hold = Hold(times=2)
    args = ("batch", str(tasks), "--out", str(out), "--engine", "ray")

    def interrupt() -> None:  # Ctrl-C, once both tasks wait on the model
        if hold.reached.wait(HEAVY_TIMEOUT_S):
            os.kill(os.getpid(), signal.SIGINT)

    with FakeMessagesServer(responder=scripts(hold)) as server:
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test"}
        threading.Thread(target=interrupt, daemon=True).start()
        first = decoded(run_in_process(*args, cwd=tmp_path, env=env))
        hold.release.set()
        assert first.returncode == 130, first.stderr
        assert {line["instance_id"]: line["task_state"] for line in results(out)} == {
            "v1": "aborted",
            "v2": "aborted",
        }
        again = decoded(run_in_process(*args, cwd=tmp_path, env=env))
    assert again.returncode == 0, again.stderr
    for line in results(out):
        assert (line["task_state"], line["attempt"], line["tool_calls"]) == ("succeeded", 2, [])
