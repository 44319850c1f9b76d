"""The hooks a session has: each one's event, matcher and command, where it is configured, and
whether it runs here (its trust state).

- A hook from the user's own config (`user`) runs: it is the user's program, unconfined like a
  `!command`, unless it says `sandbox = true`.
- A hook from the repository's `.agentcli/config.toml` (`project`) or `.agentcli/config.local.toml`
  (`local`) runs only in a workspace the user trusts (`agentcli trust`), only once the user
  approved the repository's current set of hooks (`agentcli hooks approve`: the approval is
  bound to a sha256 of every definition and of the content of the workspace files each command
  names), and only in the OS sandbox. A set that changed since it was approved runs not at all
  until approved again. Nothing is skipped silently: `notices` names every hook that does not
  run, and the command that would make it run.
"""

from __future__ import annotations

import enum
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentcli.hook_entry import Handler, MatcherGroup, named_files
from agentcli.hooks.approval import approved_digest
from agentcli.paths import project_config_paths
from agentcli.safe_read import Inside, read_bytes
from agentcli.settings import Settings


class Source(enum.StrEnum):
    USER = "user"
    PROJECT = "project"
    LOCAL = "local"


class State(enum.StrEnum):
    RUNS = "runs"
    UNTRUSTED = "not run: workspace not trusted"
    UNAPPROVED = "not run: not approved"
    CHANGED = "not run: changed since approved"
    NO_SANDBOX = "not run: no OS sandbox"


APPROVE_HINT = "review them with `agentcli hooks`, approve them with `agentcli hooks approve`"


@dataclass(frozen=True, slots=True, kw_only=True)
class HookDef:
    """One configured hook (one handler of one matcher group)."""

    event: str
    matcher: str
    handler: Handler
    source: Source
    origin: str
    """The config file it is in."""
    files: tuple[tuple[str, str], ...] = ()
    """The workspace files a repository hook's command names, with the sha256 of their content
    when the session started."""

    @property
    def command(self) -> str:
        return self.handler.command

    @property
    def from_repository(self) -> bool:
        return self.source is not Source.USER

    @property
    def sandboxed(self) -> bool:
        """It runs in the OS sandbox: a repository's hook always, a user's if it asks."""
        return self.from_repository or self.handler.sandbox is True

    def describe(self) -> str:
        matcher = f" [{self.matcher}]" if self.matcher not in ("", "*") else ""
        return f"{self.event}{matcher} `{self.command}`"

    def fingerprint(self) -> dict[str, Any]:
        """What an approval binds: the definition and the content of the files it names."""
        return {
            "source": self.source.value,
            "event": self.event,
            "matcher": self.matcher,
            "handler": self.handler.model_dump(mode="json"),
            "files": dict(self.files),
        }

    def unchanged(self, workspace: Path) -> bool:
        """The files it names still hold what they held when the session started."""
        return self.files == file_hashes(self.command, workspace)


@dataclass(frozen=True, slots=True, kw_only=True)
class Catalog:
    """Every hook of a session with its state, and the digest of the repository's set."""

    workspace: Path
    entries: tuple[tuple[HookDef, State], ...] = ()
    digest: str | None = None
    """The sha256 of the repository's hooks (None: it has none)."""
    trusted: bool = True
    sandbox_problem: str | None = None
    unreadable: tuple[str, ...] = ()
    """Hook groups an untrusted workspace's files hold that are not hooks at all (why)."""

    def runnable(self, event: str) -> list[HookDef]:
        """The hooks of `event` that run here, in configuration order."""
        return [hook for hook, state in self.entries if state is State.RUNS and hook.event == event]

    def repository(self) -> list[HookDef]:
        return [hook for hook, _state in self.entries if hook.from_repository]

    def notices(self) -> list[str]:
        """One line per reason hooks do not run, naming each and how to make it run."""
        lines = []
        for state in (State.UNTRUSTED, State.CHANGED, State.UNAPPROVED, State.NO_SANDBOX):
            hooks = [hook for hook, s in self.entries if s is state]
            if hooks:
                lines.append(_notice(state, hooks, self.sandbox_problem))
        lines += [f"not a hook, so it cannot run: {why}" for why in self.unreadable]
        opting_out = [
            h for h, _s in self.entries if h.from_repository and h.handler.sandbox is False
        ]
        lines += [
            f"hook {hook.describe()} ({hook.source.value}) says `sandbox = false`: a "
            "repository's hooks always run in the sandbox"
            for hook in opting_out
        ]
        return lines

    def approved_now(self) -> Catalog:
        """This catalog after the user approved the repository's set (the REPL's /hooks
        approve): its hooks run if the workspace is trusted and a sandbox exists."""
        sandbox = self.sandbox_problem is None
        entries = tuple(
            (hook, _state(hook, trusted=self.trusted, approved=True, ever=True, sandbox=sandbox))
            for hook, _old in self.entries
        )
        return Catalog(
            workspace=self.workspace,
            entries=entries,
            digest=self.digest,
            trusted=self.trusted,
            sandbox_problem=self.sandbox_problem,
            unreadable=self.unreadable,
        )


def build_catalog(
    settings: Settings, workspace: Path, *, sandbox_problem: str | None = None
) -> Catalog:
    """The session's hooks from `settings` (an untrusted workspace's own, left out of the
    settings, too: to name them). `sandbox_problem`: why this session has no OS sandbox
    (None: it has one)."""
    trusted = settings.provenance.trusted
    hooks = [
        _definition(event, group, handler, _source(origin.path, workspace), origin.name, workspace)
        for origin, event, groups in settings.hook_levels()
        for group in groups
        for handler in group.hooks
    ]
    unreadable: list[str] = []
    for path, event, raw in settings.withheld_hooks():
        for group in _lenient(raw, f"{event} in {path}", unreadable):
            for handler in group.hooks:
                source = _source(path, workspace)
                hooks.append(_definition(event, group, handler, source, str(path), workspace))
    repository = [hook for hook in hooks if hook.from_repository]
    digest = set_digest(repository) if repository else None
    before = approved_digest(workspace) if digest is not None else None
    entries = tuple(
        (
            hook,
            _state(
                hook,
                trusted=trusted,
                approved=before is not None and before == digest,
                ever=before is not None,
                sandbox=sandbox_problem is None,
            ),
        )
        for hook in hooks
    )
    return Catalog(
        workspace=workspace,
        entries=entries,
        digest=digest,
        trusted=trusted,
        sandbox_problem=sandbox_problem,
        unreadable=tuple(unreadable),
    )


def set_digest(hooks: list[HookDef]) -> str:
    """The sha256 of a set of hooks (order does not matter)."""
    canonical = sorted(json.dumps(hook.fingerprint(), sort_keys=True) for hook in hooks)
    return hashlib.sha256(json.dumps(canonical).encode()).hexdigest()


MAX_HOOK_SCRIPT_BYTES = 16 * 1024 * 1024
"""A script a hook names larger than this is not hashed (nor approved: the set changes)."""


def file_hashes(command: str, workspace: Path) -> tuple[tuple[str, str], ...]:
    found = []
    inside = Inside.of(workspace)
    for path in named_files(command, workspace):
        try:  # a workspace file: a regular one, inside, bounded (never a pipe that blocks)
            digest = hashlib.sha256(
                read_bytes(path, inside=inside, limit=MAX_HOOK_SCRIPT_BYTES)
            ).hexdigest()
        except OSError:
            continue
        found.append((str(path.relative_to(workspace.resolve())), digest))
    return tuple(found)


def _definition(
    event: str,
    group: MatcherGroup,
    handler: Handler,
    source: Source,
    origin: str,
    workspace: Path,
) -> HookDef:
    return HookDef(
        event=event,
        matcher=group.matcher,
        handler=handler,
        source=source,
        origin=origin,
        # What an approval binds: a user's own hooks need none.
        files=file_hashes(handler.command, workspace) if source is not Source.USER else (),
    )


def _state(hook: HookDef, *, trusted: bool, approved: bool, ever: bool, sandbox: bool) -> State:
    """`approved`: the repository's set is the one approved; `ever`: some set was."""
    if hook.from_repository:
        if not trusted:
            return State.UNTRUSTED
        if not approved:
            return State.CHANGED if ever else State.UNAPPROVED
    if hook.sandboxed and not sandbox:
        return State.NO_SANDBOX
    return State.RUNS


def _source(path: Path | None, workspace: Path) -> Source:
    if path is None:
        return Source.USER
    project, local = (p.resolve() for p in project_config_paths(workspace))
    resolved = path.resolve()
    if resolved == project:
        return Source.PROJECT
    return Source.LOCAL if resolved == local else Source.USER


def _lenient(raw: object, where: str, unreadable: list[str]) -> list[MatcherGroup]:
    """The groups of a value an untrusted file holds, as far as they are groups at all (what
    is not goes to `unreadable`, with why)."""
    groups = []
    for item in raw if isinstance(raw, list) else [raw]:
        try:
            groups.append(MatcherGroup.model_validate(item))
        except ValidationError as exc:
            error = exc.errors()[0]
            spot = ".".join(str(part) for part in error["loc"])
            unreadable.append(f"{where}: `{spot}`: {error['msg']}" if spot else f"{where}")
    return groups


def _notice(state: State, hooks: list[HookDef], sandbox_problem: str | None) -> str:
    named = "; ".join(f"{hook.describe()} ({hook.source.value})" for hook in hooks)
    count = f"{len(hooks)} hook{'s' if len(hooks) != 1 else ''}"
    verb = "does" if len(hooks) == 1 else "do"
    if state is State.UNTRUSTED:
        return (
            f"this workspace is not trusted, so its {count} {verb} not run: {named}. To run them: "
            f"`agentcli trust`, then {APPROVE_HINT}"
        )
    if state is State.CHANGED:
        return (
            f"this repository's hooks changed since you approved them, so its {count} {verb} not "
            f"run: {named}. {APPROVE_HINT[0].upper()}{APPROVE_HINT[1:]} (in the REPL: /hooks)"
        )
    if state is State.UNAPPROVED:
        return (
            f"this repository's {count} {verb} not run: you have not approved them: {named}. "
            f"{APPROVE_HINT[0].upper()}{APPROVE_HINT[1:]} (in the REPL: /hooks)"
        )
    return (
        f"{count} {verb} not run: they run only in the OS sandbox, and this session has none "
        f"({sandbox_problem or 'no sandbox'}): {named}"
    )
