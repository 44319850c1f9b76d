"""One task, on whichever worker runs it: its workspace, its setup, its `agentcli run` (the
real command line, as a process of its own: the batch never runs the loop itself), and what
came of it, with its diff from the base commit.

A task's files are under `DIR/tasks/ID/`: `workspace/` (its checkout), `home/` (its own
`AGENTCLI_HOME`: journal, spill files), `run.json` (the attempt running now: worker, pids,
for whoever needs to find it), `stderr.log` and `setup.log`.

An unfinished task (interrupted, or its process killed) is resumed from its journal:
`agentcli run --resume SESSION` in its own `AGENTCLI_HOME`, so what it did is reconciled, never
done again. Where that journal is not on this machine (a Ray retry on another node without
shared storage), the task starts again from its base commit and its result says so
(`restarted`).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from agentcli.batch import workspace as checkout
from agentcli.batch.gate import RequestGate
from agentcli.batch.ledger import Admission
from agentcli.batch.records import RunConfig, Start, TaskOutcome, TaskSpec, error_result
from agentcli.batch.setup import run_setup
from agentcli.session.records import latest_session_in
from agentcli.vocabulary import PermissionMode

CHILD_PRELUDE = (
    "import ctypes, signal, sys\n"
    "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})\n"
    "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    "signal.signal(signal.SIGTERM, signal.SIG_DFL)\n"
    "try:\n"
    "    ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG: SIGKILL when the worker dies\n"
    "except (AttributeError, OSError):\n"
    "    pass  # not Linux\n"
    "from agentcli.ui.entry import main\n"
    "sys.exit(main())\n"
)
"""`agentcli` as `python -m agentcli` runs it, except that it dies with the worker that
started it (a worker lost mid-task leaves no agent running on unsupervised), and that it hears
SIGINT and SIGTERM whatever its worker did with them (a Ray worker runs its tasks with SIGINT
blocked, and a child inherits the mask: the interrupt never arrived, and after the grace period
the run was killed instead of ending as aborted)."""
RESUME_PROMPT = (
    "agentcli batch: the run of this task was interrupted before it ended. Carry on with the "
    "task (it is at the start of this conversation) from where it stopped."
)
CANCEL_GRACE_S = 30.0
"""After SIGINT, how long a run has to end as `aborted` before it is killed."""
POLL_S = 0.2


class Coordinator(Protocol):
    """The batch's shared state as a worker sees it (`ledger.Ledger`, here or in Ray)."""

    def begin(self, instance_id: str) -> Admission: ...
    def finish(self, instance_id: str, cost_usd: float | None) -> float: ...
    def cancelled(self) -> bool: ...
    def try_acquire(self, holder: str) -> int | None: ...
    def renew(self, holder: str) -> None: ...
    def release(self, holder: str, token: int) -> None: ...


@dataclass(frozen=True, slots=True)
class TaskPaths:
    root: Path

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def run_file(self) -> Path:
        return self.root / "run.json"


def task_paths(out: Path, instance_id: str) -> TaskPaths:
    return TaskPaths(out / "tasks" / instance_id)


def run_task(
    spec: TaskSpec, config: RunConfig, coordinator: Coordinator, *, worker: str
) -> TaskOutcome:
    """Run `spec` to its end (or not at all, when the coordinator says no)."""
    task = spec.task
    paths = task_paths(config.out, task.instance_id)
    admission = coordinator.begin(task.instance_id)
    attempt = spec.attempts_before + admission.starts
    if not admission.allowed:
        return TaskOutcome(
            instance_id=task.instance_id,
            result=error_result(admission.why_not),
            attempt=attempt,
            worker=worker,
            wall_s=0.0,
            workspace=str(paths.workspace),
            started=False,
        )
    started = time.monotonic()
    paths.root.mkdir(parents=True, exist_ok=True)
    session, restarted = _where_to_start(spec, paths, retried=admission.starts > 1)
    run = _Run(spec, config, coordinator, paths, worker, attempt, admission.budget_usd)
    result, patch = run.prepare_and_run(session)
    outcome = TaskOutcome(
        instance_id=task.instance_id,
        result=result,
        attempt=attempt,
        worker=worker,
        wall_s=time.monotonic() - started,
        workspace=str(paths.workspace),
        restarted=restarted,
        model_patch=patch,
        model=str(result.get("model") or _model_of(spec, config) or ""),
    )
    # Counted before this worker takes its next task, so that task sees what this one cost.
    coordinator.finish(task.instance_id, outcome.cost_usd)
    return outcome


def _where_to_start(spec: TaskSpec, paths: TaskPaths, *, retried: bool) -> tuple[str | None, bool]:
    """The session to resume (None: a new one), and whether the task starts again from its
    base commit after earlier work of it was lost."""
    if spec.start is Start.RETRY and not retried:
        checkout.discard(paths.workspace)
        if paths.home.exists():  # kept for reading, out of the way of the new run's journal
            paths.home.rename(paths.root / f"home-attempt-{spec.attempts_before}")
        return None, False
    session = None
    if paths.workspace.is_dir():
        session = latest_session_in(paths.home, paths.workspace)
    if session is not None:
        return session, False
    # Nothing recorded here to go on from: what ran before (on another machine) is lost.
    lost = bool(spec.start is Start.RESUME and spec.session_id) or retried
    checkout.discard(paths.workspace)
    return None, lost


@dataclass(frozen=True, slots=True)
class _Run:
    spec: TaskSpec
    config: RunConfig
    coordinator: Coordinator
    paths: TaskPaths
    worker: str
    attempt: int
    budget_usd: float | None
    """What remains of the batch's budget (None: no `--max-cost`)."""

    def prepare_and_run(self, session: str | None) -> tuple[dict[str, Any], str | None]:
        task, paths, config = self.spec.task, self.paths, self.config
        try:
            checkout.prepare(task.repo, self.spec.base, paths.workspace, config.out / "repos")
        except checkout.WorkspaceError as exc:
            return error_result(str(exc)), None
        mode = task.permission_mode or config.permission_mode or PermissionMode.AUTO
        if session is None:
            paths.home.mkdir(parents=True, exist_ok=True)  # to be hidden, it must exist
            failed = run_setup(
                task.setup,
                paths.workspace,
                mode=mode,
                hidden=(paths.home,),
                log=paths.root / "setup.log",
            )
            if failed is not None:
                said = f"{failed.problem}: {failed.command}" if failed.command else failed.problem
                return error_result(said), None
        branch = branch_for(task.instance_id)
        commit = committing(paths.workspace, branch)
        argv = _command_line(self.spec, config, mode, session, self.budget_usd, commit)
        result = self.run_child(argv, session)
        if commit and result.get("task_state") in ENDED_UNCOMMITTED and not result.get("commit"):
            drop_branch(paths.workspace, branch, self.spec.base)
        try:
            patch = checkout.model_patch(paths.workspace, self.spec.base)
        except Exception as exc:  # a patch that cannot be made is said in the result
            return {**result, "patch_error": str(exc)}, None
        return result, patch

    def run_child(self, argv: list[str], session: str | None) -> dict[str, Any]:
        """Run `agentcli run` to its end; its JSON result, or an error result saying why there
        is none."""
        paths = self.paths
        env = {**os.environ, **self.config.environment, "AGENTCLI_HOME": str(paths.home)}
        prompt = RESUME_PROMPT if session is not None else self.spec.task.problem_statement
        with ExitStack() as stack:
            if self.config.max_requests is not None:
                upstream = env.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"
                gate = stack.enter_context(
                    RequestGate(upstream, self.coordinator, self.spec.task.instance_id)
                )
                env["ANTHROPIC_BASE_URL"] = gate.url
            log = stack.enter_context((paths.root / "stderr.log").open("ab"))
            log.write(f"--- attempt {self.attempt} on {self.worker}\n".encode())
            log.flush()
            child = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=env,
                cwd=paths.root,
                start_new_session=True,  # Ctrl-C in the terminal reaches the batch, which
            )  # forwards it: each run then ends as `aborted`, with its result
            self._record_running(child.pid, session)
            stdout = self._wait(child, prompt.encode())
        return self._result_of(child.returncode, stdout)

    def _wait(self, child: subprocess.Popen[bytes], prompt: bytes) -> bytes:
        """Feed the prompt, then wait for the end, passing on a cancellation as SIGINT (and a
        kill if the run does not end as aborted in time)."""
        assert child.stdin is not None and child.stdout is not None
        try:
            child.stdin.write(prompt)
            child.stdin.close()
        except BrokenPipeError:
            pass
        chunks: list[bytes] = []
        reader = _Reader(child.stdout, chunks)
        reader.start()
        interrupted_at: float | None = None
        while child.poll() is None:
            time.sleep(POLL_S)
            if interrupted_at is None and self.coordinator.cancelled():
                interrupted_at = time.monotonic()
                _signal(child, signal.SIGINT)
            elif interrupted_at is not None and time.monotonic() - interrupted_at > CANCEL_GRACE_S:
                _signal(child, signal.SIGKILL)
        reader.join()
        child.stdout.close()
        return b"".join(chunks)

    def _result_of(self, code: int, stdout: bytes) -> dict[str, Any]:
        for line in reversed(stdout.decode("utf-8", "replace").splitlines()):
            try:
                found = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(found, dict) and found.get("type") == "result":
                return found
        how = f"was killed by signal {-code}" if code < 0 else f"exited {code}"
        session = latest_session_in(self.paths.home, self.paths.workspace) or ""
        return error_result(
            f"agentcli run {how} without a result (see {self.paths.root / 'stderr.log'})",
            session_id=session,
        )

    def _record_running(self, child_pid: int, session: str | None) -> None:
        record = {
            "attempt": self.attempt,
            "worker": self.worker,
            "worker_pid": os.getpid(),
            "child_pid": child_pid,
            "resumed_session": session,
            "started": time.time(),
        }
        self.paths.run_file.write_text(json.dumps(record) + "\n", encoding="utf-8")


class _Reader(threading.Thread):
    """Reads a child's stdout to its end (a full pipe would stall the child)."""

    def __init__(self, stream: Any, into: list[bytes]) -> None:
        super().__init__(daemon=True)
        self._stream = stream
        self._into = into

    def run(self) -> None:
        while chunk := self._stream.read(65536):
            self._into.append(chunk)


def _signal(child: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    try:
        os.killpg(child.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _model_of(spec: TaskSpec, config: RunConfig) -> str | None:
    return spec.task.model or config.model or config.environment.get("AGENTCLI_MODEL")


ENDED_UNCOMMITTED = frozenset({"failed", "unverified", "budget_exhausted"})
"""A task that ended in one of these states is over (a rerun does not resume it) and its
changes are not committed: the branch it was given goes, so only tasks that succeeded leave
one behind."""


def drop_branch(workspace: Path, branch: str, base: str) -> None:
    """Take the task's checkout off `branch` (back to `base`, its changes kept in the work
    tree for `preds.json`) and delete the branch, when it holds nothing but `base`: a branch
    with a commit on it is never deleted."""
    from agentcli.errors import GitRefusal
    from agentcli.usergit.repository import open_repository

    try:
        with open_repository(workspace, trusted=False) as repo:
            tip = repo.query("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}")
            if tip.stdout.decode().strip() != base or repo.head().branch != branch:
                return
            repo.query("checkout", "--quiet", "--detach")
            repo.query("branch", "-D", "--quiet", branch)
    except GitRefusal:
        return  # left as it is: a branch too many is no harm


def committing(workspace: Path, branch: str) -> list[str]:
    """What the run is asked to do with git: commit the task's changes if it succeeds
    (`--commit`: exactly its changed files, its evidence in the message), on `branch`, started
    from the base commit unless an earlier attempt started it already (`--branch`). Nothing
    when no commit could be made here (no git identity: `git config user.email`): the run
    goes on, and its diff is in `preds.json` all the same."""
    from agentcli.errors import GitRefusal
    from agentcli.usergit.commit import check_committable
    from agentcli.usergit.repository import open_repository

    try:
        check_committable(workspace, detached_ok=True)
        with open_repository(workspace, trusted=False) as repo:
            on = repo.head().branch
            exists = repo.query(
                "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", ok_codes=(0, 1)
            )
    except GitRefusal:
        return []
    if on == branch:
        return ["--commit"]  # an earlier attempt started it: go on committing there
    if exists.status == 0:
        return []  # left by an earlier batch, this checkout started afresh: never reused
    return ["--commit", "--branch", branch]


def _command_line(
    spec: TaskSpec,
    config: RunConfig,
    mode: PermissionMode,
    session: str | None,
    batch_budget: float | None,
    commit: list[str],
) -> list[str]:
    task = spec.task
    argv = [sys.executable, "-c", CHILD_PRELUDE, "run", "--output-format", "json", "-q"]
    argv += ["-C", str(task_paths(config.out, task.instance_id).workspace)]
    argv += ["--permission-mode", mode.value]
    model = task.model or config.model
    if model:
        argv += ["-m", model]
    for command in (*task.accept, *config.accept):
        argv += ["--accept", command]
    limits = task.limits
    if limits.max_turns is not None:
        argv += ["--max-turns", str(limits.max_turns)]
    costs = [c for c in (limits.max_cost_usd, batch_budget) if c is not None]
    if costs:
        argv += ["--max-cost", repr(min(costs))]
    if limits.timeout_s is not None:
        argv += ["--timeout", repr(limits.timeout_s)]
    if session is not None:
        argv += ["--resume", session]
    return [*argv, *commit, "-"]


def branch_for(instance_id: str) -> str:
    """The branch a task's commit is to go on (`taskfile.ID_PATTERN` keeps it a valid ref)."""
    return f"agentcli/{instance_id}"
