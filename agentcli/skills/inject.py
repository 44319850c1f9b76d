"""Running a command's shell lines (`` !`cmd` ``, ```` ```! ```` blocks) before its prompt is
sent, exactly as the model's own `shell` calls run: through the session's ToolRuntime, so each
is journaled, decided by the permission policy (the command's `allowed-tools` are granted by
then), asked about when the policy asks (without a terminal that is a denial), confined by the
OS sandbox and capped like any shell output.

A line that is denied stops the command: nothing is sent, and the user is told which line and
the rule that would allow it. A line that runs and fails (a non-zero exit) is not a stop: its
output, with the exit code, is what the model reads in its place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentcli.call_records import CallStatus, ToolCallRecord
from agentcli.ids import new_id
from agentcli.messages import ToolUseBlock
from agentcli.skills.substitute import Piece, ShellLine
from agentcli.tools.runtime import ToolRuntime
from agentcli.vocabulary import PermissionTarget, Risk

SHELL_TOOL = "shell"


@dataclass
class Injected:
    """What the shell lines gave: their outputs by piece index, or the line that was denied."""

    outputs: dict[int, str] = field(default_factory=dict)
    records: list[ToolCallRecord] = field(default_factory=list)
    denials: list[dict[str, Any]] = field(default_factory=list)
    denied: str | None = None
    """Why the command stopped (None: every line ran)."""


async def run_shell_lines(pieces: list[Piece], runtime: ToolRuntime, name: str) -> Injected:
    """Run each shell line of `pieces` in order (stopping at the first denied one)."""
    injected = Injected()
    for index, piece in enumerate(pieces):
        if not isinstance(piece, ShellLine):
            continue
        command = piece.command
        rule = _suggested_rule(runtime, command)
        call = ToolUseBlock(id=f"cmd_{new_id()}", name=SHELL_TOOL, input={"command": command})
        records = runtime.propose([call])
        await runtime.execute([call], records)
        record = records[0]
        injected.records.append(record)
        if record.status is CallStatus.DENIED:
            injected.denials.extend(runtime.denials[len(injected.denials) :])
            why = injected.denials[-1]["reason"] if injected.denials else "permission denied"
            allow = f"; a rule allowing it: {rule}" if rule else ""
            injected.denied = (
                f"/{name} was not run: its shell line `{command}` was denied ({why}){allow} "
                "(--allow, /permissions allow, or the file's allowed-tools)"
            )
            return injected
        injected.outputs[index] = _shown(record)
    return injected


def _suggested_rule(runtime: ToolRuntime, command: str) -> str | None:
    """The rule the policy would suggest for `command` (for the message when it is denied)."""
    target = PermissionTarget(rule_class="shell", subject=command, summary=f"run {command}")
    return runtime.policy.decide(Risk.EXECUTE, target).suggested_rule


def _shown(record: ToolCallRecord) -> str:
    """What the model reads in place of a shell line: the output; after a failure, the
    result with its status line (exit code, timeout, why it did not run)."""
    text = (record.result_text or "").rstrip("\n")
    succeeded = record.status is CallStatus.SUCCEEDED and not record.result_is_error
    if succeeded and record.source.get("exit_code") == 0:
        # The shell tool's first line is its status (`exit code 0; 0.01 s; 3 lines of output`).
        _status, _newline, output = text.partition("\n")
        return "" if output == "(no output)" else output
    return text
