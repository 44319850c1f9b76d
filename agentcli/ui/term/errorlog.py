"""Where internal errors (bugs, not task outcomes) go: the user sees one line, the traceback is
appended to a log file in the data directory."""

from __future__ import annotations

import traceback
from pathlib import Path

from agentcli.paths import data_home
from agentcli.private import open_private


def log_internal_error(exc: BaseException, name: str = "errors.log") -> Path | None:
    """Append `exc`'s traceback to `<data home>/<name>`; the log's path, or None if it could not
    be written."""
    try:
        log = data_home() / name
        # A message may hold a name that is not UTF-8 (a lone surrogate): logged escaped.
        with open_private(log, "ab") as handle:
            text = "".join(traceback.format_exception(exc)) + "\n"
            handle.write(text.encode("utf-8", errors="backslashreplace"))
    except OSError:
        return None
    return log
