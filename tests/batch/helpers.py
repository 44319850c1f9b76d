"""What the batch tests share: real git repositories, task files, and one fake Messages API
answering every task's `agentcli run` from the script its prompt names (`[KEY]`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agentcli.testing.by_prompt import ByPrompt
from agentcli.testing.fake_api import FakeResponse, stream_message, text, tool_use

ACCEPT = 'test "$(cat answer.txt)" = 42'
"""The check of the tasks that must write 42 into answer.txt."""
HEAVY_TIMEOUT_S = 480
"""The tests that run 8 (or a few) real `agentcli run` processes take 5-30 s here, and several
times that on 2 cores shared with other suites: the suite-wide 120 s is for hangs, not them."""


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


def make_repo(path: Path, files: Mapping[str, str]) -> str:
    """A git repository at `path` with `files` committed; its HEAD."""
    path.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=path)
    for name, content in files.items():
        (path / name).write_text(content)
    git("add", ".", cwd=path)
    git("commit", "-qm", "start", cwd=path)
    return git("rev-parse", "HEAD", cwd=path)


def write_tasks(path: Path, lines: Iterable[dict[str, Any] | str]) -> Path:
    path.write_text(
        "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    )
    return path


def write_answer(content: str) -> FakeResponse:
    return stream_message([tool_use("write_file", {"path": "answer.txt", "content": content})])


DONE = stream_message([text("done")])


class Hold:
    """A step that holds its first `times` clients (until `release`), then answers at once:
    tasks caught mid-run, at a known point, once. `reached` is set once all are held."""

    def __init__(self, times: int = 1) -> None:
        self.times = times
        self.reached = threading.Event()
        self.release = threading.Event()
        self.held = 0
        self._lock = threading.Lock()

    def __call__(self) -> FakeResponse:
        with self._lock:
            holding = self.held < self.times
            if holding:
                self.held += 1
                if self.held == self.times:
                    self.reached.set()
        if holding:
            self.release.wait(HEAVY_TIMEOUT_S)
        return DONE


def scripts(victim: Hold | None = None) -> ByPrompt:
    edit = [
        stream_message([tool_use("read_file", {"path": "README"})]),
        stream_message(
            [tool_use("edit_file", {"path": "README", "old_string": "hello", "new_string": "bye"})]
        ),
        DONE,
    ]
    return ByPrompt(
        {
            "ok": [write_answer("42\n"), DONE],
            "bad": [write_answer("41\n"), DONE, DONE, DONE, DONE],
            "plain": [DONE],
            "edit": edit,
            "victim": [write_answer("42\n"), victim or DONE, DONE],
        }
    )


def mixed_tasks(repo_a: Path, repo_b: Path) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """5 tasks over two repositories (more than the 2 workers: some wait their turn), one of
    each kind, and the state each must end in: 2 succeed with an --accept check (one of them,
    `victim`, is caught mid-run), 1 fails its check, 2 have no check (unverified; one edits a
    tracked file). Both spellings of a line (SWE-bench's and agentcli's own) are used."""
    lines: list[dict[str, Any]] = []
    expected: dict[str, str] = {}
    kinds = [("ok", "succeeded"), ("bad", "failed"), ("plain", "unverified")]
    for number, (kind, state) in enumerate(kinds, start=1):
        repo = repo_a if number % 2 else repo_b
        line: dict[str, Any] = {
            "instance_id": f"{kind}-{number}",
            "problem_statement": f"[{kind}] write the answer",
            "repo": str(repo),
        }
        if kind != "plain":
            line["accept"] = [ACCEPT]
        lines.append(line)
        expected[line["instance_id"]] = state
    lines.append({"id": "edit-4", "task": "[edit] say bye", "repo": str(repo_b)})
    expected["edit-4"] = "unverified"
    lines.append(
        {
            "instance_id": "victim",
            "problem_statement": "[victim] write it",
            "repo": str(repo_a),
            "accept": [ACCEPT],
        }
    )
    expected["victim"] = "succeeded"
    return lines, expected


def kill_when_held(hold: Hold, run_file: Path, which: str) -> threading.Thread:
    """Once `hold` holds its client, SIGKILL the process `run_file` names (`child_pid`: the
    task's agentcli run; `worker_pid`: the worker running it), then let the held step go."""

    def kill() -> None:
        while not hold.reached.wait(0.1):
            if hold.release.is_set():  # the test is over: nothing was caught
                return
        os.kill(json.loads(run_file.read_text())[which], signal.SIGKILL)
        hold.release.set()

    thread = threading.Thread(target=kill, daemon=True)
    thread.start()
    return thread


def results(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def check_predictions_apply(out: Path, repos: Mapping[str, tuple[Path, str]], tmp: Path) -> int:
    """Apply every prediction with `git apply` on a fresh checkout of its repository's base;
    how many non-empty patches applied."""
    preds = json.loads((out / "preds.json").read_text())
    applied = 0
    for ident, pred in preds.items():
        assert pred["instance_id"] == ident
        assert pred["model_name_or_path"]
        if not pred["model_patch"]:
            continue
        source, base = repos[ident]
        fresh = tmp / f"fresh-{ident}"
        subprocess.run(["git", "clone", "-q", str(source), str(fresh)], check=True)
        git("checkout", "-q", base, cwd=fresh)
        patch = tmp / f"{ident}.diff"
        patch.write_text(pred["model_patch"])
        git("apply", "--check", str(patch), cwd=fresh)
        git("apply", str(patch), cwd=fresh)
        applied += 1
    return applied
