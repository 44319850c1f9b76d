"""Journal cost: per tool call, per message, per undo checkpoint, and resuming a long session.

- per call: `call_proposed` + `call_started` + `call_finished` on the real SqliteJournal (target
  ≤ 1 ms). A call that may change something (write/execute/external) commits `started` with
  `synchronous=FULL` (an fsync: the write-ahead record survives a power loss); a read does not.
  Shown next to a bare fsync'd SQLite commit on the same disk, which is what the FULL commit
  costs by itself.
- per message: `message_appended` (one NORMAL commit).
- checkpoint: the git snapshot taken before a task's first change (once per task, not per call).
- resume: reopening a 1 000-message session — crash recovery plus loading the history (target
  ≤ 0.3 s).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from agentcli.call_records import CallStatus, FileWrite, PreState, ToolCallRecord
from agentcli.messages import Message, ToolResultBlock
from agentcli.testing import respond, text, tool_use
from bench import sized

CALLS = sized(400, 20)
RESUME_MESSAGES = sized(1000, 50)
REPEAT = sized(5, 2)
CHECKPOINT_FILES = sized(200, 20)


def _per_call(journal: object, risk: str, prefix: str) -> list[float]:
    samples = []
    for n in range(CALLS):
        record = ToolCallRecord(
            call_id=f"{prefix}{n}", name="write_file", input={"path": f"f{n}.txt"}, risk=risk
        )
        started = time.perf_counter()
        journal.call_proposed(record)  # type: ignore[attr-defined]
        record.status = CallStatus.STARTED
        written = FileWrite(path=f"/w/f{n}.txt", pre_hash=None, post_hash="x")
        journal.call_started(record, PreState(write=written))
        record.status, record.result_text = CallStatus.SUCCEEDED, "wrote 1 line"
        journal.call_finished(record)  # type: ignore[attr-defined]
        samples.append(time.perf_counter() - started)
    return samples


def _bare_fsync_commit(path: Path) -> list[float]:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE t (a TEXT)")
    samples = []
    for n in range(CALLS):
        started = time.perf_counter()
        conn.execute("INSERT INTO t VALUES (?)", (str(n),))
        samples.append(time.perf_counter() - started)
    return samples


def _fmt(samples: list[float], unit: float = 1e6, suffix: str = "µs") -> str:
    ordered = sorted(samples)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    return f"median {statistics.median(samples) * unit:.0f} {suffix}, p95 {p95 * unit:.0f} {suffix}"


def _long_session(workspace: Path) -> str:
    from agentcli.store.sqlite import SqliteJournal

    journal = SqliteJournal.create("BENCH-RESUME", workspace=workspace, model="bench")
    journal.task_started("BENCH-TASK", "a long task")
    journal.message_appended(Message.user("a long task"))
    body = "x" * 400
    for n in range((RESUME_MESSAGES - 2) // 2):
        call = tool_use("read_file", {"path": f"src/m{n}.py"}, id=f"r{n}")
        journal.message_appended(respond(text(f"step {n}: {body}"), call).message)
        record = ToolCallRecord(call_id=f"r{n}", name="read_file", input=call["input"], risk="read")
        journal.call_proposed(record)
        record.status, record.result_text = CallStatus.SUCCEEDED, body
        journal.call_finished(record)
        result = ToolResultBlock(tool_use_id=f"r{n}", content=f"1\t{body}")
        journal.message_appended(Message(role="user", content=(result,)))
    journal.message_appended(respond(text("done")).message)
    return journal.session_id


def _resume_once(workspace: Path, session_id: str) -> float:
    from agentcli.session.opening import find_resumed, open_session

    started = time.perf_counter()
    opened = open_session(
        find_resumed(session_id, False, workspace), workspace=workspace, model="b"
    )
    elapsed = time.perf_counter() - started
    opened.release()  # as the process exiting would: the next repeat resumes it again
    assert len(opened.messages) == RESUME_MESSAGES, len(opened.messages)
    return elapsed


def _checkpoint(workspace: Path) -> list[float]:
    from agentcli.checkpoints import Checkpointer
    from agentcli.owngit import decide
    from agentcli.store.db import connect

    for n in range(CHECKPOINT_FILES):
        (workspace / f"f{n}.py").write_text(f"x = {n}\n" * 20)
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    conn = connect()
    samples = []
    for n in range(REPEAT):
        checkpointer = Checkpointer(conn, decide(workspace))
        conn.execute(
            "INSERT INTO sessions (id, workspace, model, created_at, updated_at) "
            "VALUES (?, ?, 'b', 0, 0)",
            (f"CP-S{n}", str(workspace)),
        )
        conn.execute(
            "INSERT INTO tasks (id, session_id, prompt, state, started_at) "
            "VALUES (?, ?, 'p', 'running', 0)",
            (f"CP-T{n}", f"CP-S{n}"),
        )
        started = time.perf_counter()
        checkpointer.before_change(f"CP-T{n}", None)
        samples.append(time.perf_counter() - started)
    return samples


def run() -> list[tuple[str, str]]:
    home = Path(tempfile.mkdtemp(prefix="agentcli-bench-journal-"))
    saved = os.environ.get("AGENTCLI_HOME")
    os.environ["AGENTCLI_HOME"] = str(home / "data")
    try:
        return _measure(home)
    finally:
        if saved is None:
            os.environ.pop("AGENTCLI_HOME", None)
        else:
            os.environ["AGENTCLI_HOME"] = saved
        shutil.rmtree(home, ignore_errors=True)


def _measure(home: Path) -> list[tuple[str, str]]:
    from agentcli.store.sqlite import SqliteJournal

    workspace = home / "ws"
    workspace.mkdir()
    journal = SqliteJournal.create("BENCH-CALLS", workspace=workspace, model="bench")
    journal.task_started("BENCH-CALLS-TASK", "calls")
    rows = [
        ("journal per write call (fsync'd start)", _fmt(_per_call(journal, "write", "w"))),
        ("journal per read call", _fmt(_per_call(journal, "read", "r"))),
        ("bare fsync'd SQLite commit (same disk)", _fmt(_bare_fsync_commit(home / "bare.db"))),
    ]
    message = respond(text("a" * 500), tool_use("read_file", {"path": "a"})).message
    samples = []
    for _ in range(CALLS):
        started = time.perf_counter()
        journal.message_appended(message)
        samples.append(time.perf_counter() - started)
    rows.append(("journal per message", _fmt(samples)))
    rows.append(
        (f"undo checkpoint, git, {CHECKPOINT_FILES} files", _fmt(_checkpoint(workspace), 1e3, "ms"))
    )
    session_id = _long_session(workspace)
    resumes = [_resume_once(workspace, session_id) for _ in range(REPEAT)]
    rows.append(
        (
            f"resume a {RESUME_MESSAGES}-message session",
            f"median {statistics.median(resumes) * 1e3:.0f} ms (target ≤ 300 ms)",
        )
    )
    return rows


if __name__ == "__main__":
    for name, value in run():
        print(f"{name:42} {value}")
