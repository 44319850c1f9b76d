"""Fault injection for crash tests: kill the process at a precise point of a call's life.

Inert unless `AGENTCLI_FAULT` is set. Its value is `POINT:TOOL` (`TOOL` may be `*`):

- `before_start`  the call is proposed, but its `started` record is not written yet;
- `after_start`   the `started` record is durable, the tool has not run yet;
- `after_effect`  the tool has run (its effect happened), its result is not recorded yet.

and, for a compaction (`TOOL` is `compaction`), `before_record` (its summary came back, it is not
journaled yet) and `after_record` (it is journaled; the next request has not gone out).

At that point the process sends itself SIGKILL, exactly as `kill -9` would: no cleanup, no
flushing, no exception handlers. Tests use it to prove that recovery finds a consistent journal.
"""

from __future__ import annotations

import os
import signal

FAULT_ENV = "AGENTCLI_FAULT"
POINTS = ("before_start", "after_start", "after_effect", "before_record", "after_record")


def crash_point(point: str, tool: str) -> None:
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return
    if spec in (f"{point}:{tool}", f"{point}:*"):
        os.kill(os.getpid(), signal.SIGKILL)
