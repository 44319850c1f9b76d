"""Session locks (`agentcli.store.lock`): one holder at a time, refused at once with the holder's
pid, and gone as soon as the holder closes it or dies — kill -9 included."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from agentcli.errors import SessionBusyError, UsageError
from agentcli.store.lock import SessionLock, lock_path

HOLD = """
import sys, time
from agentcli.store.lock import SessionLock
lock = SessionLock.acquire(sys.argv[1])
print("locked", flush=True)
time.sleep(120)
"""


@contextmanager
def held_elsewhere(session_id: str) -> Iterator[subprocess.Popen[str]]:
    """A separate process holding the lock of `session_id` until the block ends."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, session_id],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "locked\n", holder.stderr
        yield holder
    finally:
        holder.kill()
        holder.communicate(timeout=30)  # also closes the pipes


def test_a_second_acquire_fails_at_once_while_the_first_is_held() -> None:
    first = SessionLock.acquire("S1")
    with pytest.raises(SessionBusyError) as refused:
        SessionLock.acquire("S1")
    assert refused.value.session_id == "S1"
    assert refused.value.pid == os.getpid()
    assert f"session S1 is in use by another agentcli process (pid {os.getpid()})" in str(
        refused.value
    )
    other = SessionLock.acquire("S2")  # a lock is per session
    other.release()
    first.release()


def test_release_lets_the_next_one_in_and_is_harmless_twice() -> None:
    first = SessionLock.acquire("S1")
    assert first.holds("S1") and not first.holds("S2")
    first.release()
    assert not first.holds("S1")
    first.release()
    with SessionLock.acquire("S1") as second:
        assert second.holds("S1")
    assert not second.holds("S1")
    SessionLock.acquire("S1").release()


def test_the_lock_dies_with_a_killed_holder() -> None:
    with held_elsewhere("S-KILLED") as holder:
        with pytest.raises(SessionBusyError) as refused:
            SessionLock.acquire("S-KILLED")
        assert refused.value.pid == holder.pid
        holder.send_signal(signal.SIGKILL)
        holder.communicate(timeout=30)
        assert holder.returncode == -signal.SIGKILL
        lock = SessionLock.acquire("S-KILLED")  # no stale lock: the kernel dropped it
    assert lock_path("S-KILLED").exists()
    lock.release()


def test_a_child_process_does_not_inherit_the_lock() -> None:
    """A command the agent started that outlives agentcli must not keep its session locked."""
    lock = SessionLock.acquire("S-CHILD")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        lock.release()
        SessionLock.acquire("S-CHILD").release()
    finally:
        child.kill()
        child.wait(timeout=30)


def test_the_holder_pid_is_cleared_on_release() -> None:
    SessionLock.acquire("S-PID").release()
    assert lock_path("S-PID").read_text() == ""


def test_only_acquire_makes_a_lock_and_ids_are_checked(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        SessionLock("S1", 0, object())
    for bad in ("../x", "", "a/b", "a b"):
        with pytest.raises(ValueError):
            SessionLock.acquire(bad)


def test_an_unusable_data_home_is_a_usage_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(UsageError, match="cannot lock session S1"):
        SessionLock.acquire("S1", home=blocker)
