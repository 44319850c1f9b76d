"""Every error agentcli raises, in two families.

    AgentError
    ├── ToolError                  the model sees it: becomes an `is_error` tool_result
    │     kind: ToolErrorKind      (unknown_tool, invalid_arguments, not_found, ...)
    ├── TaskStopError              ends the task: carries a TerminalReason
    │   ├── ModelError             the model API failed for good (auth, bad request, ...)
    │   └── FatalToolError         security violation, missing credentials, ...
    ├── RetryableModelError        a model call may succeed if repeated (429, 529, 5xx, cut stream)
    ├── UsageError                 a bad command line: exit code 2, nothing was run
    │   ├── SessionBusyError       another live agentcli process is using the session
    │   ├── GitRefusal             the user's repository cannot be branched or committed as asked
    │   └── ConfigError            a config file, the data directory, the API key: exit code 2
    │       └── JournalError       the journal cannot be used (corrupt, newer, not writable)
    └── UndoError                  undo refused or impossible (exit 1), with the files why

Errors carry structured fields, not just a string, so renderers and the JSON result can
report them precisely. `TerminalReason` itself is shared vocabulary in `agentcli.terminal_reason`.
"""

from __future__ import annotations

import enum
from pathlib import Path

from agentcli.terminal_reason import TerminalReason


class ToolErrorKind(enum.StrEnum):
    """The kinds of tool failure the model can act on."""

    UNKNOWN_TOOL = "unknown_tool"
    INVALID_ARGUMENTS = "invalid_arguments"
    NOT_FOUND = "not_found"
    PERMISSION_DENIED = "permission_denied"
    CONFLICT = "conflict"
    TIMEOUT = "timeout"
    RATE_LIMITED = "rate_limited"
    OUTCOME_UNKNOWN = "outcome_unknown"
    NOT_EXECUTED = "not_executed"
    CANCELLED = "cancelled"
    OS_ERROR = "os_error"
    """The file system refused (read-only, full, I/O error): the message has its reason."""
    INTERNAL = "internal"


class AgentError(Exception):
    """Base of every error agentcli raises on purpose."""


class ToolError(AgentError):
    """A tool call failed in a way the model should hear about and can act on."""

    def __init__(self, kind: ToolErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message

    def __str__(self) -> str:
        return f"{self.kind.value}: {self.message}"


class TaskStopError(AgentError):
    """An error that ends the task with a terminal reason."""

    def __init__(self, reason: TerminalReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class ModelError(TaskStopError):
    """The model API failed and retrying will not help (or retries ran out)."""

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        error_type: str | None = None,
        request_id: str | None = None,
        reason: TerminalReason = TerminalReason.MODEL_ERROR,
    ) -> None:
        super().__init__(reason, message)
        self.status_code = status_code
        self.error_type = error_type
        self.request_id = request_id


class FatalToolError(TaskStopError):
    """A tool failure that must stop the task instead of going back to the model."""

    def __init__(self, message: str) -> None:
        super().__init__(TerminalReason.FATAL_TOOL_ERROR, message)


class RetryableModelError(AgentError):
    """A model call failed in a way that repeating the same request may fix."""

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.retry_after = retry_after


class IncompleteResponseError(RetryableModelError):
    """The response stream ended before `message_stop`: nothing of it may be used."""


class UsageError(AgentError):
    """Bad command-line input or configuration. Exit code 2; nothing was run."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class ConfigError(UsageError):
    """The setup, not the command line, is wrong: a config file, the data directory, the
    journal, a missing API key. Exit code 2; the message names what to fix."""


class JournalError(ConfigError):
    """The journal database cannot be used: corrupt, written by a newer agentcli, not an
    agentcli journal, or not writable. `path` is the file; agentcli never changes it then."""

    def __init__(self, path: Path, message: str, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.path = path


class SessionBusyError(UsageError):
    """The session is locked by another live agentcli process (see `store.lock`): it cannot be
    resumed, recovered or undone until that process lets go of it."""

    def __init__(self, session_id: str, pid: int | None) -> None:
        holder = f" (pid {pid})" if pid is not None else ""
        super().__init__(
            f"session {session_id} is in use by another agentcli process{holder}; "
            "wait for it to finish, or start a new session"
        )
        self.session_id = session_id
        self.pid = pid


class GitRefusal(UsageError):
    """The user's repository cannot be branched or committed as asked (`agentcli.usergit`): not
    a repository, a detached HEAD, a merge in progress, a locked index, no identity, a hook that
    refused. The message says which, the hint how to fix it. Before a task it is a usage error
    (exit 2); after one, the commit is skipped and the result says why."""


class UndoError(AgentError):
    """Undo refused or impossible; the message says why, and `files` lists the files that
    are the reason (changed since the task, or without a saved copy)."""

    def __init__(self, message: str, files: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.files = files or []
