"""The settings model: every configuration key agentcli reads, with its type, default and doc.

`Settings` is what a session runs with, resolved once (`agentcli.config.load_settings`) from
flags > environment > `.agentcli/config.local.toml` > `.agentcli/config.toml` > the user's
`config.toml` > the defaults below, and then passed down as one object. Nothing reads a
configuration key by name anywhere else.

Each field also says, on the model itself, how levels combine and who may set it:

- `ACCUMULATES`: every level adds to the list and no level can take away what another added
  (so a `deny` rule, or a path hidden from commands, holds whichever file it is in);
- `Untrusted(...)`: how the in-repo files of a workspace the user has not trusted
  (`agentcli.trust`) may set it. **A field without one cannot be set by such a file at all**,
  so a key added later stays out of an untrusted repository's reach until someone decides,
  here, that it only narrows what runs unasked or is harmless;
- `Env(NAME)`: an environment variable that sets it (above the config files, below flags);
- `StartsPrograms(...)`: its value makes agentcli start programs. Where it `needs_approval`, a
  trusted workspace's own file applies it only as the user approved it, by content
  (`agentcli.approvals`); `agentcli trust` lists every such setting of the workspace.

The top-level `allow`, `ask` and `deny` keys are the `[permissions]` lists (`ALIASES`).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from agentcli.catalogue import CATALOGUE, DEFAULT_MODEL, Catalogue, Effort, ThinkingMode
from agentcli.errors import ConfigError
from agentcli.hook_entry import MatcherGroup
from agentcli.mcp_entry import ServerEntry, check_server_name
from agentcli.provenance import HeldContent, Origin, Provenance
from agentcli.provider import Provider
from agentcli.pydantic_plugins import skip_plugin_discovery
from agentcli.vocabulary import PermissionMode

__all__ = ["DEFAULT_MODEL", "HeldContent", "Origin", "Provenance", "Settings"]


@dataclass(frozen=True, slots=True)
class Untrusted:
    """How an in-repo file of an untrusted workspace may set a field: only to values `allows`
    accepts, given the (raw) values set by the levels below it (`in_force`, dotted keys)."""

    allows: Callable[[Any, Mapping[str, Any]], bool]
    why: str


@dataclass(frozen=True, slots=True)
class Accumulates:
    """List values from every level are concatenated instead of the higher level's winning."""


@dataclass(frozen=True, slots=True)
class Env:
    """An environment variable that sets the field (an empty value counts as unset)."""

    name: str


@dataclass(frozen=True, slots=True)
class ByName:
    """A table of named entries: a higher level replaces an entry of the same name whole (a
    server configured twice is the higher level's server, never a mix of both)."""


@dataclass(frozen=True, slots=True)
class StartsPrograms:
    """The field's value names programs agentcli starts (see the module docstring)."""

    kind: str
    """What they are (the approval's kind: `mcp`)."""
    what: str
    """What they are, in words (`MCP servers`)."""
    runs: str
    """How they run, in words (`unconfined`, `in the sandbox`)."""
    needs_approval: bool
    """Bound to the user's approval of the content (programs that run unconfined); otherwise
    listed only (they run in the sandbox)."""


ACCUMULATES = Accumulates()
BY_NAME = ByName()
HARMLESS = Untrusted(lambda _value, _in_force: True, "bounds the work; never lets anything run")
NARROWS = Untrusted(lambda _value, _in_force: True, "only narrows what runs unasked")


def only(allowed: bool) -> Untrusted:
    """An untrusted file may set this switch only to `allowed` (the narrower setting)."""
    return Untrusted(lambda value, _in_force: value is allowed, f"only to {allowed}".lower())


# Every mode not listed lets more run unasked than `default`.
_MODE_STRICTNESS = {"read-only": 0, "default": 1}


def _stricter_mode(value: Any, in_force: Mapping[str, Any]) -> bool:
    current = in_force.get("permission_mode", "default")
    limit = _MODE_STRICTNESS.get(current, 2) if isinstance(current, str) else 2
    return isinstance(value, str) and _MODE_STRICTNESS.get(value, 3) <= limit


STRICTER_MODE = Untrusted(_stricter_mode, "only `default` or `read-only`, never looser than yours")

skip_plugin_discovery()  # before any settings model builds its validator

_STRICT = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)
Rules = Annotated[list[str], ACCUMULATES]
Names = list[Annotated[str, Field(min_length=1)]]


class PermissionsSection(BaseModel):
    """`[permissions]`: rules and how many denials a task takes."""

    model_config = _STRICT

    allow: Rules = []
    """Rules that let a call run without asking, e.g. `shell(pytest *)`, `write(src/**)`."""
    ask: Annotated[Rules, NARROWS] = []
    """Rules that make a call ask even where the mode or an allow rule would let it run."""
    deny: Annotated[Rules, NARROWS] = []
    """Rules that refuse a call; a deny rule at any level wins."""
    denial_limit: Annotated[int, Field(ge=1), HARMLESS] = 3
    """Permission denials in one task before it stops (exit 4)."""


class SandboxSection(BaseModel):
    """`[sandbox]`: what sandboxed commands may reach beyond the profile's defaults."""

    model_config = _STRICT

    enabled: Annotated[bool, only(True)] = True
    """False: no OS sandbox; every command asks, and runs unconfined if approved."""
    network: Annotated[bool, only(False)] = False
    """True: every workspace-write command gets the network."""
    writable: list[str] = []
    """Extra directories sandboxed commands may write (relative to the workspace, or `~`)."""
    readable: list[str] = []
    """Extra paths read-only-profile commands may read."""
    deny_read: Annotated[list[str], ACCUMULATES, NARROWS] = []
    """Paths hidden from every sandboxed command."""
    allow_unix_sockets: list[str] = []
    """Unix socket paths commands may connect to."""
    env_scrub: Annotated[Names, ACCUMULATES, NARROWS] = []
    """More environment variable name patterns to remove from commands' environment."""
    env_keep: Names = []
    """Variable names to keep although they look like secrets."""


class AcceptanceSection(BaseModel):
    """`[acceptance]`: the checks that decide whether a task succeeded."""

    model_config = _STRICT

    commands: Annotated[
        list[str], StartsPrograms("acceptance", "acceptance checks", "in the sandbox", False)
    ] = []
    """Check commands run on the final workspace (`tests` detects the project's test command);
    `--accept` replaces them."""
    retries: Annotated[int, Field(ge=0), HARMLESS] = 3
    """Repair rounds after a failed check (separate from --max-turns)."""
    timeout_s: Annotated[float, Field(gt=0, allow_inf_nan=False), HARMLESS] = 600.0
    """Seconds per check; a check that runs longer is killed and fails."""


class ConvergenceSection(BaseModel):
    """`[convergence]`: when a task that makes no progress is nudged, then stopped."""

    model_config = _STRICT

    repeat_limit: Annotated[int, Field(ge=1), HARMLESS] = 3
    """Identical (call, result) pairs before the model is told to change approach."""
    failure_limit: Annotated[int, Field(ge=1), HARMLESS] = 3
    """Failures of the same call on an unchanged workspace before the model is told."""


class CompactionMode(enum.StrEnum):
    """Who writes a compaction's summary (`[context] compaction`)."""

    CLIENT = "client"
    SERVER = "server"


SAME_SERVER = Untrusted(
    lambda _value, _in_force: True,
    "the same server with the same key; a price --max-cost needs is checked as the model's",
)


class ContextSection(BaseModel):
    """`[context]`: when old tool results stop being sent to the model in full, and when older
    turns are compacted into a summary (what the model is sent, never what runs or what the
    journal keeps)."""

    model_config = _STRICT

    window_tokens: Annotated[int | None, Field(ge=1), HARMLESS] = None
    """The model's context window, in tokens (default: the model's, from the catalogue)."""
    elide_at: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False), HARMLESS] = 0.5
    """Fraction of the window a response's context may reach before old results are elided."""
    keep_recent: Annotated[int, Field(ge=1), HARMLESS] = 3
    """Tool rounds whose results are always sent in full, and model turns a compaction always
    sends verbatim after its summary."""
    auto_compact: Annotated[bool, Field(strict=False), HARMLESS, Env("AGENTCLI_AUTO_COMPACT")] = (
        True
    )
    """False (or `AGENTCLI_AUTO_COMPACT=0`): never compact on its own; `/compact` still does."""
    auto_compact_at: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False), HARMLESS] = 0.85
    """Fraction of the window a response's context may reach before older turns are replaced,
    in what the model is sent, by a summary (0: never)."""
    warn_at: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False), HARMLESS] = 0.75
    """Fraction of the window at which the REPL's status line, and `run` once on stderr, say
    how full the context is (0: never)."""
    compact_model: Annotated[str | None, Field(min_length=1), SAME_SERVER] = None
    """The model that writes compaction summaries (default: the session's model), e.g. a
    cheaper one of the same provider; its cost counts in the task's, and `--max-cost` needs
    its price."""
    compaction: Annotated[CompactionMode, Field(strict=False), SAME_SERVER] = CompactionMode.CLIENT
    """client (agentcli writes the summary; every provider) or server (the Anthropic API's own
    compaction, `compact_20260112`, on the models the catalogue says support it)."""


class ToolsSection(BaseModel):
    """`[tools]`: which of agentcli's own optional tools the model is offered."""

    model_config = _STRICT

    todo: Annotated[bool, HARMLESS] = True
    """Offer `todo_write` (the task's checklist); false leaves it out (its schema costs
    context, and the newest models keep track without it)."""


def at_most(key: str, default: float | None) -> Untrusted:
    """An untrusted file may set this limit only at or below the value in force (`default`
    when no lower level set it; None: unlimited, so any limit is lower)."""

    def lowers(value: Any, in_force: Mapping[str, Any]) -> bool:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        current = in_force.get(key, default)
        return current is None or (isinstance(current, int | float) and value <= current)

    return Untrusted(lowers, "only lower than the limit in force")


class AgentsSection(BaseModel):
    """`[agents]`: the limits agentcli enforces on subagents (the `agent` tool), whatever the
    model asks for. A repository's own files may only lower them."""

    model_config = _STRICT

    max_concurrent: Annotated[int, Field(ge=1), at_most("agents.max_concurrent", 4)] = 4
    """Subagents one task runs at the same time (more `agent` calls in one response wait)."""
    max_depth: Annotated[int, Field(ge=0), at_most("agents.max_depth", 1)] = 1
    """How deep delegation goes: 1, a subagent gets no `agent` tool; 0, no subagents at all."""
    max_turns: Annotated[int, Field(ge=1), at_most("agents.max_turns", 30)] = 30
    """Model calls one subagent may make (a definition's `maxTurns` may only lower it)."""
    max_cost_usd: Annotated[
        float | None,
        Field(gt=0, allow_inf_nan=False, strict=False),
        at_most("agents.max_cost_usd", None),
    ] = None
    """USD one subagent may spend (None: only the task's own `--max-cost` limits it)."""
    max_wall_s: Annotated[
        float, Field(gt=0, allow_inf_nan=False, strict=False), at_most("agents.max_wall_s", 600.0)
    ] = 600.0
    """Seconds one subagent may run (its commands are stopped with it)."""


Hooks = Annotated[list[MatcherGroup], ACCUMULATES]
# No `Untrusted` mark: hooks start programs. A repository's own hooks also need the user's
# approval of their exact set (`agentcli.hooks.approval`), and run sandboxed.


class HooksSection(BaseModel):
    """`[[hooks.EVENT]]` tables: commands agentcli runs at each event (`agentcli.hooks`), in
    Claude Code's shape; every level's groups add up (an identical handler runs once)."""

    model_config = _STRICT

    SessionStart: Hooks = []
    """When a session starts (matcher: `startup`, `resume`, `clear`, `compact`)."""
    UserPromptSubmit: Hooks = []
    """Before a prompt goes to the model; may block it, or add context."""
    PreToolUse: Hooks = []
    """Before a tool call (matcher: the tool's name); may allow, ask, deny or change it."""
    PostToolUse: Hooks = []
    """After a tool call succeeded; may tell the model something."""
    PostToolUseFailure: Hooks = []
    """After a tool call failed."""
    Notification: Hooks = []
    """When a permission question is waiting for you (matcher: `permission_prompt`)."""
    Stop: Hooks = []
    """When the model ends its turn, before the acceptance checks; may send it back to work."""
    PreCompact: Hooks = []
    """Before the history is compacted (matcher: `manual`, `auto`); may block it."""
    SessionEnd: Hooks = []
    """When a session ends (matcher: `clear`, `resume`, `prompt_input_exit`, `other`)."""

    def groups(self) -> list[tuple[str, MatcherGroup]]:
        """Every (event, matcher group), in the order of the events."""
        return [
            (event, group) for event in type(self).model_fields for group in getattr(self, event)
        ]


class Transport(enum.StrEnum):
    """How requests reach the Anthropic API (`model.http` or `model.anthropic`)."""

    HTTP = "http"
    SDK = "sdk"


SENDS_THE_SAME = Untrusted(
    lambda _value, _in_force: True, "the same request to the same server, with the same key"
)


class ApiSection(BaseModel):
    """`[api]`: how model requests are sent, how long one is waited on, and retried."""

    model_config = _STRICT

    transport: Annotated[
        Transport, Field(strict=False), SENDS_THE_SAME, Env("AGENTCLI_TRANSPORT")
    ] = Transport.HTTP
    """http (agentcli's own client, fast to start) or sdk (the official `anthropic` SDK, which
    takes ~2 s to load)."""

    idle_timeout_s: Annotated[float, Field(gt=0, allow_inf_nan=False), HARMLESS] = 90.0
    """Seconds the connection may stay silent (no byte, not even a ping) before the attempt is
    abandoned and retried."""
    max_retry_wait_s: Annotated[float, Field(ge=0, allow_inf_nan=False), HARMLESS] = 900.0
    """The longest wait a server may ask for (`retry-after`) that is honoured; a longer one ends
    the task with an error that says so."""


class GitSection(BaseModel):
    """`[git]`: git for the user (`agentcli.usergit`)."""

    model_config = _STRICT

    commit: Annotated[bool, only(False)] = False
    """True: `agentcli run` commits a task that succeeded, as `--commit` does (`--no-commit`
    for one run). A repository you have not trusted may only turn it off: committing in your
    repository is yours to ask for."""


class ModelEntry(BaseModel):
    """`[models."ID"]`: a model the catalogue lacks, or what to change of one it has. Only the
    fields given apply; a new model starts from the conservative defaults of an unknown one."""

    model_config = _STRICT

    aliases: Names | None = None
    """Other names for it (`-m NAME`, `/model NAME`)."""
    context_window: Annotated[int | None, Field(ge=1)] = None
    """Its context window, in tokens."""
    max_output: Annotated[int | None, Field(ge=1)] = None
    """The largest `max_tokens` it accepts (every request asks for this much)."""
    input: Annotated[float | None, Field(ge=0, strict=False)] = None
    """USD per million uncached input tokens."""
    output: Annotated[float | None, Field(ge=0, strict=False)] = None
    """USD per million output tokens."""
    cache_write: Annotated[float | None, Field(ge=0, strict=False)] = None
    """USD per million prompt-cache write tokens (default 1.25x `input`)."""
    cache_read: Annotated[float | None, Field(ge=0, strict=False)] = None
    """USD per million prompt-cache read tokens (default 0.1x `input`)."""
    thinking: Annotated[ThinkingMode | None, Field(strict=False)] = None
    """adaptive-only, adaptive, budgeted or none."""
    efforts: list[Annotated[Effort, Field(strict=False)]] | None = None
    """The effort levels it accepts (`output_config.effort`)."""
    default_effort: Annotated[Effort | None, Field(strict=False)] = None
    """The level the API uses when none is sent."""
    omits_thinking: bool | None = None
    """Its thinking text is empty unless asked for (`thinking.display`)."""
    rejects_prefill: bool | None = None
    """It rejects a request that ends with an assistant message."""
    rejects_sampling: bool | None = None
    """It rejects temperature, top_p and top_k."""
    rejects_forced_tool_choice: bool | None = None
    """It rejects `tool_choice` any/tool."""
    binds_thinking: bool | None = None
    """Its thinking blocks are valid only for it, under the same transcript."""
    server_compaction: bool | None = None
    """The API can compact its context itself (`[context] compaction = "server"`)."""

    def given(self) -> dict[str, Any]:
        """The fields set, as the catalogue takes them."""
        return self.model_dump(exclude_none=True)


def _check_prices(models: dict[str, ModelEntry]) -> dict[str, ModelEntry]:
    for model_id, entry in models.items():
        known = CATALOGUE.find(model_id)
        half = (entry.input is None) != (entry.output is None)
        if half and (known is None or known.price is None):
            raise ValueError(
                f"model {model_id!r} has no known price: give both `input` and `output`"
            )
    return models


class Settings(BaseModel):
    """Everything a session is configured with. Config files use these names: top-level keys,
    and one TOML table per section (`[sandbox]`, `[acceptance]`, …)."""

    model_config = _STRICT

    model: Annotated[str, Field(min_length=1), HARMLESS, Env("AGENTCLI_MODEL")] = DEFAULT_MODEL
    """The model: an id or an alias (`opus`, `sonnet`, `haiku`, `fable`) (`-m/--model`)."""
    effort: Annotated[Effort | None, Field(strict=False), HARMLESS] = None
    """low, medium, high, xhigh or max (`--effort`; default: the model's own default)."""
    permission_mode: Annotated[PermissionMode, Field(strict=False), STRICTER_MODE] = (
        PermissionMode.DEFAULT
    )
    """default, accept-edits, read-only, auto or yolo (`--permission-mode`)."""
    permissions: PermissionsSection = PermissionsSection.model_construct()
    sandbox: SandboxSection = SandboxSection.model_construct()
    acceptance: AcceptanceSection = AcceptanceSection.model_construct()
    convergence: ConvergenceSection = ConvergenceSection.model_construct()
    context: ContextSection = ContextSection.model_construct()
    tools: ToolsSection = ToolsSection.model_construct()
    api: ApiSection = ApiSection.model_construct()
    git: GitSection = GitSection.model_construct()
    models: dict[str, ModelEntry] = {}
    """`[models."ID"]` tables: models added to the catalogue, or changes to the ones it has."""
    mcp_servers: Annotated[
        dict[str, ServerEntry],
        BY_NAME,
        StartsPrograms("mcp", "MCP servers", "unconfined", True),
    ] = {}
    """`[mcp_servers.NAME]` tables: MCP servers whose tools the model gets (`agentcli.mcp`)."""
    hooks: HooksSection = HooksSection.model_construct()
    agents: AgentsSection = AgentsSection.model_construct()
    # No `Untrusted` mark on these two: a repository's own config must not send your key, or
    # your code, to a server of its choosing.
    provider: Annotated[Provider, Field(strict=False), Env("AGENTCLI_PROVIDER")] = (
        Provider.ANTHROPIC
    )
    """anthropic, or openai: any OpenAI-compatible Chat Completions server (`--provider`)."""
    base_url: Annotated[str | None, Field(min_length=1), Env("OPENAI_BASE_URL")] = None
    """With `provider = "openai"`: the server's URL up to its API version, e.g.
    `http://localhost:11434/v1` (default `https://api.openai.com/v1`); checked only then."""

    _provenance: Provenance = PrivateAttr(default_factory=Provenance)
    _catalogue: Catalogue | None = PrivateAttr(default=None)

    @field_validator("models")
    @classmethod
    def _known_prices(cls, models: dict[str, ModelEntry]) -> dict[str, ModelEntry]:
        return _check_prices(models)

    @field_validator("mcp_servers")
    @classmethod
    def _server_names(cls, servers: dict[str, ServerEntry]) -> dict[str, ServerEntry]:
        for name in servers:
            problem = check_server_name(name)
            if problem:
                raise ValueError(f"server {name!r}: {problem}")
        return servers

    def catalogue(self) -> Catalogue:
        """The provider's catalogue with this configuration's `[models]` applied. An
        OpenAI-compatible server's models are only the ones `[models]` describes."""
        if self._catalogue is None:
            base = CATALOGUE if self.provider is Provider.ANTHROPIC else Catalogue(())
            overrides = {model_id: entry.given() for model_id, entry in self.models.items()}
            try:
                self._catalogue = base.with_overrides(overrides)
            except ValueError as exc:
                raise ConfigError(
                    f"[models]: {exc}", hint="give each such model both `input` and `output`"
                ) from exc
        return self._catalogue

    def with_provider(self, provider: Provider) -> Settings:
        """These settings with another provider (a resumed session's own), and its catalogue."""
        changed = self.model_copy(update={"provider": provider})
        changed._catalogue = None
        return changed

    @property
    def provenance(self) -> Provenance:
        return self._provenance

    def with_provenance(self, provenance: Provenance) -> Settings:
        self._provenance = provenance
        return self

    def origin(self, key: str) -> Origin | None:
        """Where the value of dotted `key` came from; None when it is the default."""
        return self._provenance.origins.get(key)

    def rule_sources(self, kind: str) -> list[tuple[str, list[str]]]:
        """The `kind` (allow/ask/deny) rules as (where from, rules): every config file's as
        "config files", a flag's under the flag's name."""
        key = f"permissions.{kind}"
        found = self._provenance.contributions.get(key)
        if found is None:
            rules: list[str] = getattr(self.permissions, kind)
            return [("config files", list(rules))] if rules else []
        return [("config files" if o.path else o.name, list(v)) for o, v in found if v]

    def flag_rules(self, kind: str) -> list[str]:
        """The `kind` rules given on the command line (what a session records of them)."""
        found = self._provenance.contributions.get(f"permissions.{kind}", [])
        return [rule for origin, rules in found if origin.path is None for rule in rules]

    def hook_levels(self) -> list[tuple[Origin, str, list[MatcherGroup]]]:
        """The hooks each config level added, as (where from, event, its groups), lowest
        precedence first; settings made without files have them under "settings"."""
        found: list[tuple[Origin, str, list[MatcherGroup]]] = []
        for event in HooksSection.model_fields:
            levels = self._provenance.contributions.get(f"hooks.{event}")
            if levels is None:
                given: list[MatcherGroup] = getattr(self.hooks, event)
                levels = [(Origin("settings"), given)] if given else []
            for origin, groups in levels:
                found.append((origin, event, [MatcherGroup.model_validate(g) for g in groups]))
        return found

    def withheld_hooks(self) -> list[tuple[Path, str, object]]:
        """The hooks an untrusted workspace's own files hold and that were left out, as
        written: (file, event, its groups, unchecked)."""
        return [
            (path, key.removeprefix("hooks."), value)
            for path, keys in self._provenance.withheld.items()
            for key, value in keys.items()
            if key.startswith("hooks.")
        ]


ALIASES = {"allow": "permissions.allow", "ask": "permissions.ask", "deny": "permissions.deny"}
"""Top-level keys that are another field's name in config files."""

DEFAULTS = Settings.model_construct()
"""The defaults, for the core's own settings objects to take theirs from."""
