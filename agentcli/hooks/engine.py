"""A session's hooks at work: for an event, run the hooks that match it (in parallel, each
identical command once), record each run in the journal, tell the user and the event stream,
and hand back what each hook said.

The engine is made by the session core with the session's `Catalog` and bound to the session
(`bind`: its id, workspace, mode, model, sandbox and journal as they are at each event, since a
resume or a mode switch changes them). It implements `hook_seams.SessionHooks`: the session's
own events here, each task's in `agentcli.hooks.task`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentcli.confinement import CommandSandbox
from agentcli.errors import JournalError
from agentcli.events import EventSink, HookFinished, HookStarted, Notice
from agentcli.hook_seams import CompactVerdict, Done, HookRun, SubagentLabel, TaskHooks
from agentcli.hooks.approval import approve as record_approval
from agentcli.hooks.catalog import Catalog, HookDef
from agentcli.hooks.matcher import matches
from agentcli.hooks.task import Said, TaskHookRun
from agentcli.private import write_private

if TYPE_CHECKING:
    from agentcli.hooks.protocol import Reply

TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
"""Events whose matcher sees a tool's name."""
UNMATCHED_EVENTS = ("UserPromptSubmit", "Stop")
"""Events that ignore the matcher."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionFacts:
    """The session as hooks see it at one event."""

    session_id: str
    workspace: Path
    data_dir: Path
    mode: str
    model: str
    sandbox: CommandSandbox | None
    record: Callable[[HookRun], None]
    """Where each hook run is journaled."""
    transcript: Callable[[], list[dict[str, Any]]]
    """The session's messages so far, as the journal has them (wire form, with `role`,
    `content` and, where known, `seq`, `task_id`, `created_at`)."""


class HookEngine:
    """The hooks of one session (see the module docstring)."""

    def __init__(self, catalog: Catalog, *, events: EventSink) -> None:
        self._catalog = catalog
        self._events = events
        self._facts: Callable[[], SessionFacts] | None = None
        self._session_context: list[str] = []
        self._background: set[asyncio.Task[Any]] = set()
        self._told: set[tuple[str, str]] = set()

    @property
    def catalog(self) -> Catalog:
        return self._catalog

    def bind(self, facts: Callable[[], SessionFacts]) -> None:
        """Read the session from `facts` at each event (the session core binds it once)."""
        self._facts = facts

    def approve(self) -> str | None:
        """Approve the repository's current set of hooks (the REPL's /hooks approve: a person
        at the prompt); they run from the next event on. Returns the digest (None: none)."""
        digest = self._catalog.digest
        if digest is not None:
            record_approval(self._catalog.workspace, digest)
            self._catalog = self._catalog.approved_now()
        return digest

    def for_task(self, agent: SubagentLabel | None = None) -> TaskHooks:
        return TaskHookRun(self, agent)

    def take_session_context(self) -> list[str]:
        """What SessionStart hooks said for the model, once (it goes with the next prompt)."""
        taken, self._session_context = self._session_context, []
        return taken

    # -- the session's own events ----------------------------------------------------------
    async def session_started(self, source: str) -> None:
        said = await self.fire("SessionStart", source, {"source": source, "model": self._model()})
        self._session_context += [s.reply.context for s in said if s.reply.context]

    def end_session(self, reason: str) -> Awaitable[None]:
        facts = self._facts() if self._facts is not None else None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop (an exit without one): no hook can run
            return Done()
        return loop.create_task(self._ended(reason, facts))

    async def _ended(self, reason: str, facts: SessionFacts | None) -> None:
        if self._background:  # notifications still running: they finish first
            await asyncio.wait(self._background)
        await self.fire("SessionEnd", reason, {"reason": reason}, facts=facts)

    async def compacting(self, trigger: str, instructions: str = "") -> CompactVerdict:
        fields = {"trigger": trigger, "custom_instructions": instructions}
        for said in await self.fire("PreCompact", trigger, fields):
            if said.reply.blocks or said.reply.stop is not None:
                reason = said.reply.reason or said.reply.stop or "blocked by a hook"
                return CompactVerdict(block=said.block("PreCompact", reason))
        return CompactVerdict()

    def notify(self, message: str, kind: str) -> None:
        """Notification hooks, started now without waiting for them (a person is being asked
        something meanwhile); the session's end waits for them."""
        if not self._catalog.runnable("Notification"):
            return
        fields = {"message": message, "notification_type": kind, "title": "agentcli"}
        task = asyncio.get_running_loop().create_task(self.fire("Notification", kind, fields))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- running hooks ---------------------------------------------------------------------
    async def fire(
        self,
        event: str,
        subject: str | None,
        fields: dict[str, Any],
        *,
        tool_use_id: str | None = None,
        facts: SessionFacts | None = None,
    ) -> list[Said]:
        """Run the hooks of `event` that match `subject` (a tool's name, a source…), in
        parallel; what each said, in configuration order. `facts`: the session as it was
        (default: as it is now)."""
        hooks = self._matching(event, subject)
        if not hooks:
            return []
        if facts is None and self._facts is not None:
            facts = self._facts()
        if facts is None:  # not bound to a session (yet): nothing to tell a hook
            return []
        hooks = [hook for hook in hooks if self._may_run(hook, facts)]
        if not hooks:
            return []
        # Here, not at the top: a session without hooks (most) never loads the protocol and
        # the runner (~5 ms of every start).
        from agentcli.hooks.protocol import claude_code_mode

        common = {
            "session_id": facts.session_id,
            "transcript_path": "",
            "cwd": str(facts.workspace),
            "permission_mode": claude_code_mode(facts.mode),
        }
        transcripts = await asyncio.to_thread(self._transcripts, facts, hooks)
        runs = [
            self._run(
                hook,
                event,
                {**common, "transcript_path": transcripts[hook.sandboxed]},
                fields,
                facts,
                tool_use_id,
            )
            for hook in hooks
        ]
        return list(await asyncio.gather(*runs))

    def _matching(self, event: str, subject: str | None) -> list[HookDef]:
        found: list[HookDef] = []
        seen: set[str] = set()
        for hook in self._catalog.runnable(event):
            if event not in UNMATCHED_EVENTS and subject is not None:
                if not matches(hook.matcher, subject):
                    continue
            if hook.command in seen:  # an identical handler at several levels runs once
                continue
            seen.add(hook.command)
            found.append(hook)
        return found

    def _may_run(self, hook: HookDef, facts: SessionFacts) -> bool:
        if hook.sandboxed and facts.sandbox is None:
            self._tell_once(
                hook,
                "sandbox",
                f"hook {hook.describe()} ({hook.source.value}) does not run: it runs only in "
                "the OS sandbox, and this session has none now",
            )
            return False
        if hook.from_repository and not hook.unchanged(facts.workspace):
            self._tell_once(
                hook,
                "changed",
                f"hook {hook.describe()} ({hook.source.value}) does not run any more: a file it "
                "runs changed since you approved it; review it with `agentcli hooks` and approve "
                "it again with `agentcli hooks approve`",
            )
            return False
        return True

    def _tell_once(self, hook: HookDef, why: str, message: str) -> None:
        if (hook.command, why) not in self._told:
            self._told.add((hook.command, why))
            self._events(Notice(level="warning", message=message))

    async def _run(
        self,
        hook: HookDef,
        event: str,
        common: dict[str, Any],
        fields: dict[str, Any],
        facts: SessionFacts,
        tool_use_id: str | None,
    ) -> Said:
        source, command = hook.source.value, hook.command
        self._events(
            HookStarted(event=event, source=source, command=command, tool_use_id=tool_use_id)
        )
        from agentcli.hooks.protocol import payload, read_reply
        from agentcli.hooks.runner import Launch, run_hook

        started = time.monotonic()
        launch = Launch(
            workspace=facts.workspace,
            session_id=facts.session_id,
            stdin=payload(event, common, fields),
            timeout_s=hook.handler.timeout_s,
            spill_dir=facts.data_dir / "spill",
            sandbox=facts.sandbox if hook.sandboxed else None,
        )
        ran = await run_hook(command, launch)
        reply = read_reply(event, ran, facts.data_dir / "spill")
        duration = time.monotonic() - started
        blocked = reply.blocks or reply.stop is not None
        reason = reply.stop or reply.reason or reply.problem or ""
        facts.record(
            HookRun(
                event=event,
                source=source,
                command=command,
                exit_code=ran.exit_code,
                duration_s=round(duration, 3),
                decision=reply.decision,
                reason=reason,
                timed_out=ran.timed_out,
                tool_use_id=tool_use_id,
            )
        )
        self._events(
            HookFinished(
                event=event,
                source=source,
                command=command,
                tool_use_id=tool_use_id,
                exit_code=ran.exit_code,
                duration_s=round(duration, 3),
                decision=reply.decision,
                blocked=blocked,
                reason=reason,
            )
        )
        self._tell(hook, event, reply)
        return Said(hook, reply)

    def _tell(self, hook: HookDef, event: str, reply: Reply) -> None:
        where = f"{event} hook `{hook.command}` ({hook.source.value})"
        if reply.problem is not None:
            self._events(
                Notice(
                    level="warning", message=f"{where} failed: {reply.problem}; nothing was blocked"
                )
            )
        if reply.system_message:
            self._events(Notice(level="warning", message=f"{where}: {reply.system_message}"))

    def _model(self) -> str:
        return self._facts().model if self._facts is not None else ""

    @staticmethod
    def _transcripts(facts: SessionFacts, hooks: Sequence[HookDef]) -> dict[bool, str]:
        """The session so far as JSONL, in its data dir (and, for a hook in the sandbox, which
        cannot see the data dir, a copy in the sandbox's temp dir); by `sandboxed`."""
        lines = _transcript_lines(facts)
        paths: dict[bool, str] = {False: "", True: ""}
        for sandboxed in {hook.sandboxed for hook in hooks}:
            if sandboxed and facts.sandbox is not None:
                target = facts.sandbox.temp_dir / f"transcript-{facts.session_id}.jsonl"
            else:
                target = facts.data_dir / "transcript.jsonl"
            with contextlib.suppress(OSError):
                write_private(target, lines)
                paths[sandboxed] = str(target)
        return paths


def _transcript_lines(facts: SessionFacts) -> bytes:
    """Every message of the session so far, one JSON object a line (Claude Code's shape:
    `type`, `session_id`, `message` with `role` and `content`)."""
    try:
        rows = facts.transcript()
    except (OSError, sqlite3.Error, JournalError):  # a courtesy: the hook runs without it
        rows = []
    out = []
    for row in rows:
        entry = {
            "type": row["role"],
            "session_id": facts.session_id,
            "seq": row.get("seq"),
            "task_id": row.get("task_id"),
            "timestamp": row.get("created_at"),
            "message": {"role": row["role"], "content": row["content"]},
        }
        out.append(json.dumps(entry, ensure_ascii=False))
    return ("\n".join(out) + ("\n" if out else "")).encode("utf-8", errors="surrogateescape")
