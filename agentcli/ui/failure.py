"""How a command that cannot go on says so: the one place every such ending is classified.

- UsageError (the command line asks for something impossible): `usage_error`, exit 2;
- ConfigError (a config file, the data directory, the journal, the API key): `config_error`,
  exit 2; a failure of the journal that surfaced as SQLite's own error is named as the
  journal's (`session.records.journal_failure`);
- Ctrl-C before a command took over SIGINT: `aborted`, exit 130;
- anything else is a bug: `internal_error`, exit 1, its traceback appended to the error log.

The failure is one line on stderr (with a hint when there is one) in every command and mode;
`agentcli run` in json and stream-json mode also prints it as the result object (`ui.run`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TextIO

from agentcli.errors import ConfigError, UsageError
from agentcli.tasks import ExitCode, exit_code_for, task_state_for
from agentcli.terminal_reason import TerminalReason
from agentcli.ui.term.safe import visible


@dataclass(frozen=True, slots=True)
class Failure:
    """Why a command ended without finishing its work."""

    reason: TerminalReason
    message: str
    hint: str | None = None
    log: str | None = None
    """Where an internal error's traceback went (None if it could not be written)."""

    @property
    def exit_code(self) -> ExitCode:
        return exit_code_for(task_state_for(self.reason, None), self.reason)

    def text(self) -> str:
        """The lines on stderr."""
        if self.reason is TerminalReason.ABORTED:
            return "\nagentcli: aborted\n"
        if self.reason is TerminalReason.INTERNAL_ERROR:
            where = f" (details in {self.log})" if self.log is not None else ""
            return f"agentcli: internal error: {visible(self.message)}{where}\n"
        hint = f"  hint: {visible(self.hint)}\n" if self.hint else ""
        return f"agentcli: error: {visible(self.message)}\n{hint}"


def failure_of(exc: BaseException) -> Failure:
    """Classify `exc` (an internal error's traceback is logged now)."""
    exc = _journal_failure(exc)
    if isinstance(exc, KeyboardInterrupt):
        return Failure(TerminalReason.ABORTED, "aborted")
    if isinstance(exc, ConfigError):
        return Failure(TerminalReason.CONFIG_ERROR, exc.message, exc.hint)
    if isinstance(exc, UsageError):
        return Failure(TerminalReason.USAGE_ERROR, exc.message, exc.hint)
    from agentcli.ui.term.errorlog import log_internal_error

    log = log_internal_error(exc)
    return Failure(
        TerminalReason.INTERNAL_ERROR,
        f"{type(exc).__name__}: {exc}",
        log=None if log is None else str(log),
    )


def _journal_failure(exc: BaseException) -> BaseException:
    """A SQLite error is the journal's (the one database agentcli has): say so, naming it."""
    sqlite3 = sys.modules.get("sqlite3")  # not imported: the failure cannot be SQLite's
    if sqlite3 is None or not isinstance(exc, sqlite3.Error):
        return exc
    from agentcli.session.records import journal_failure

    return journal_failure(exc)


def report(failure: Failure, err: TextIO | None = None) -> int:
    """Say `failure` on stderr; return the exit code."""
    stream = err or sys.stderr
    stream.write(failure.text())
    stream.flush()
    return int(failure.exit_code)
