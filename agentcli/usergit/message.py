"""The commit message of a task: what it did in one line, the evidence that it works, and the
session and task it came from.

    Fix the off-by-one in calc.add                      <- the summary, at most 72 characters

    Verified by agentcli: every acceptance check passed.
    - `pytest -q` passed (exit 0) on git:3f2a9c…          <- each passing check, its version
    The committed tree is the version the checks ran on.

    Agentcli-Session: 01J9…                             <- trailers (`git interpret-trailers`)
    Agentcli-Task: 01J9…

The summary is the model's own one-line summary (the first line of its last words, without
Markdown marks) when it fits in 72 characters, else the user's prompt, shortened. A task that
was not verified (the REPL's `/commit`, after the user confirmed) says so in the body instead of
claiming evidence it does not have. Nothing here runs git.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

from agentcli.tasks import CheckEvidence, TaskResult, TaskState

SUMMARY_MAX = 72
"""git's own convention for a subject line (`git log --oneline`, e-mail subjects)."""
_MARKDOWN_LEAD = re.compile(r"^(?:#{1,6}\s+|[-*+]\s+|>\s*|\d+[.)]\s+)+")
_MARKDOWN_EMPHASIS = re.compile(r"(\*\*|__|`)")


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageParts:
    """What a task's commit message is made of (`compose` writes it)."""

    summary: str
    """The first line (made one line, at most SUMMARY_MAX characters unless the user wrote it)."""
    session_id: str
    task_id: str
    details: Sequence[str] = ()
    """Lines the user wrote after their own first line (`/commit MESSAGE`)."""
    evidence: Sequence[str] = ()
    """One line per passing acceptance check."""
    verified: bool = True
    """False: the task's checks did not pass (or it had none); the body says so."""
    unverified_reason: str = ""
    checked_version: str | None = None
    """The artifact version the checks ran on (`git:<tree>`), compared with the commit's tree."""
    notes: Sequence[str] = field(default_factory=tuple)


def one_line(text: str) -> str:
    """`text` as one line of plain words: control characters and runs of whitespace become one
    space (a message is shown in terminals and e-mail subjects)."""
    cleaned = "".join(" " if unicodedata.category(c)[0] in "CZ" else c for c in text)
    return " ".join(cleaned.split())


def shortened(text: str, limit: int = SUMMARY_MAX) -> str:
    """`text` cut to `limit` characters at a word boundary where one is near, with `…`."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-") + "…"


def model_summary(final_text: str | None) -> str | None:
    """The model's one-line summary: the first non-empty line of its last words, without
    Markdown marks, if it fits the subject line; None otherwise."""
    if not final_text:
        return None
    for raw in final_text.splitlines():
        line = one_line(_MARKDOWN_EMPHASIS.sub("", _MARKDOWN_LEAD.sub("", raw.strip())))
        if line:
            return line if len(line) <= SUMMARY_MAX else None
    return None


def summary_line(final_text: str | None, prompt: str) -> str:
    """The subject line of a task's commit: the model's summary, else the prompt's first words."""
    found = model_summary(final_text)
    if found is not None:
        return found
    return shortened(one_line(prompt)) or "agentcli task"


def evidence_lines(acceptance: Sequence[CheckEvidence]) -> list[str]:
    """One line per check that passed in the last round the checks ran (earlier rounds were
    superseded), with the artifact version it passed on."""
    if not acceptance:
        return []
    last_round = max(check.round for check in acceptance)
    lines = []
    for check in acceptance:
        if check.round != last_round or not check.passed:
            continue
        again = ", unchanged since it last ran" if check.reused else ""
        version = check.artifact_version or "an unknown version"
        lines.append(
            f"- `{one_line(check.command)}` passed (exit {check.exit_code}{again}) on {version}"
        )
    return lines


def parts_for_task(result: TaskResult, prompt: str, message: str | None = None) -> MessageParts:
    """The message parts of `result`'s commit: `message` (the user's own, first line as the
    summary) or the task's summary, and the task's evidence."""
    details: list[str] = []
    if message and message.strip():
        first, *rest = message.strip().splitlines()
        summary = one_line(first)
        details = [line.rstrip() for line in rest]
    else:
        summary = summary_line(result.final_text, prompt)
    verified = result.state is TaskState.SUCCEEDED
    return MessageParts(
        summary=summary,
        details=details,
        session_id=result.session_id,
        task_id=result.task_id,
        evidence=evidence_lines(result.acceptance) if verified else (),
        verified=verified,
        unverified_reason=unverified_reason(result),
        checked_version=result.artifact_version if verified else None,
    )


def unverified_reason(result: TaskResult) -> str:
    """Why `result` is not verified, in words ('' when it is)."""
    if result.state is TaskState.SUCCEEDED:
        return ""
    if result.state is TaskState.UNVERIFIED:
        return "no acceptance checks were set"
    failed = [check.command for check in result.acceptance if not check.passed]
    if result.state is TaskState.FAILED and failed:
        shown = ", ".join(f"`{one_line(command)}`" for command in dict.fromkeys(failed))
        return f"the task failed: {shown} did not pass"
    why = f" ({one_line(result.error)})" if result.error else ""
    return f"the task ended {result.state.value}{why}"


def compose(parts: MessageParts, committed_tree: str | None = None) -> str:
    """The whole message: summary, blank line, body, blank line, trailers."""
    body: list[str] = [*parts.details]
    if body and body[-1].strip():
        body.append("")
    if parts.verified:
        body.append("Verified by agentcli: every acceptance check passed.")
        body.extend(parts.evidence)
        checked = (parts.checked_version or "").removeprefix("git:")
        if committed_tree is not None and checked:
            body.append(
                "The committed tree is the version the checks ran on."
                if checked == committed_tree
                else "The checks ran on the work tree with other uncommitted changes in it."
            )
    else:
        body.append(f"Not verified by agentcli: {parts.unverified_reason or 'no checks passed'}.")
    body.extend(parts.notes)
    trailers = [f"Agentcli-Session: {parts.session_id}", f"Agentcli-Task: {parts.task_id}"]
    text = "\n".join([parts.summary, "", *body, "", *trailers])
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"
