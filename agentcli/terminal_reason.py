"""Why a query loop stopped: the terminal reasons every layer shares.

A leaf at the bottom (it imports nothing of agentcli): the loop returns one, errors that end a
task carry one, the task result maps it to a state and an exit code, and the UI renders it.
"""

from __future__ import annotations

import enum


class TerminalReason(enum.StrEnum):
    """Why a query loop stopped. Every stop has exactly one of these."""

    COMPLETED = "completed"
    MAX_TURNS = "max_turns"
    ABORTED = "aborted"
    TIMEOUT = "timeout"
    PERMISSION_DENIED = "permission_denied"
    BUDGET_EXCEEDED = "budget_exceeded"
    FATAL_TOOL_ERROR = "fatal_tool_error"
    MODEL_ERROR = "model_error"
    REFUSED = "refused"
    CONTEXT_EXHAUSTED = "context_exhausted"
    NO_PROGRESS = "no_progress"
    HOOK_STOPPED = "hook_stopped"
    """A hook ended the task: it blocked the prompt, or said `continue: false` (exit 1)."""
    # Endings of a run the loop never reached or could not finish (`agentcli run` reports them
    # in the same result object): the error subtypes of README's "Output".
    USAGE_ERROR = "usage_error"
    """The command line asks for something impossible (exit 2)."""
    CONFIG_ERROR = "config_error"
    """A config file, the data directory, the journal or the API key is unusable, or an
    acceptance check cannot start at all (a setup error, not the model's to fix) (exit 2)."""
    INTERNAL_ERROR = "internal_error"
    """A bug in agentcli (exit 1; the traceback is in the error log)."""
