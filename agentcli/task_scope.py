"""The task a tool call runs in, as a tool that acts on the task's behalf (the `agent` tool of
`agentcli.agents`) needs to know it: which task it is, whose changes its work counts as, how
deep in delegation it sits, the account its spending is charged to, what it may do (a subagent
of it may do at most as much), and what its subagents did.

The conversation makes one `TaskScope` per task it runs (and one per child task it runs for a
subagent); the tool runtime hands it to each call in `ToolContext.task`. A leaf of shared words:
it imports only the loop's small step vocabulary and usage (and, for types alone, the policy,
prompter and model seams), so the tool layer, the journal and the agents package can all use it
without importing each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from agentcli.loop_steps import Finished
from agentcli.usage import Usage

if TYPE_CHECKING:
    from agentcli.model import ModelClient
    from agentcli.permissions import PermissionPolicy, Prompter


class TaskAccount(Protocol):
    """Where a task's spending is counted and its budget checked (a `QueryLoop`). A child
    task's loop charges what it spends to its parent's account as it happens, and stops when
    the parent's budget is spent."""

    def budget_stop(self) -> Finished | None:
        """Why no further model call may be made now (this task's budget, or an enclosing
        task's), or None."""
        ...

    def charge(self, *, usage: Usage, cost: float | None, turns: int = 1) -> None:
        """Count a child's model call(s) in this task (and in the tasks enclosing it)."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentStart:
    """A child task about to run for a subagent: what the journal records of it first."""

    task_id: str
    parent_task_id: str
    """The task that delegated (a user's task, or another child task)."""
    parent_call_id: str
    """The `agent` tool call whose result the child's answer is."""
    agent_type: str
    description: str
    prompt: str
    model: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentRecord:
    """What one subagent did, as its parent task's result reports it (`subagents`)."""

    task_id: str
    tool_use_id: str
    agent_type: str
    description: str
    model: str
    state: str
    """The child task's state: `completed`, or what stopped it (`budget_exhausted`, ...)."""
    reason: str
    """Its terminal reason (`completed`, `max_turns`, `timeout`, `aborted`, ...)."""
    error: str | None
    turns: int
    tool_calls: int
    usage: Usage
    cost_usd: float | None
    changed_files: tuple[str, ...] = ()
    denials: tuple[dict[str, Any], ...] = ()
    """Its denied calls (`tool`, `input`, `reason`), labelled with the agent."""
    hook_blocks: tuple[dict[str, Any], ...] = ()
    """What the hooks blocked or stopped of its calls (`HookBlock.to_json`), with the agent."""

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.agent_type,
            "description": self.description,
            "task_id": self.task_id,
            "tool_use_id": self.tool_use_id,
            "model": self.model,
            "state": self.state,
            "terminal_reason": self.reason,
            "turns": self.turns,
            "tool_calls": self.tool_calls,
            "usage": self.usage.as_dict(),
            "cost_usd": self.cost_usd,
            "changed_files": list(self.changed_files),
            "error": self.error,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskScope:
    """One running task, for the calls it makes."""

    task_id: str
    root_task_id: str
    """The user's task this one works for (itself, unless it is a subagent's child task): its
    changes, undo checkpoint and acceptance checks are that task's."""
    account: TaskAccount
    depth: int = 0
    """0: a user's task; 1: a subagent's child task; 2: a child's child, ..."""
    agent: str | None = None
    """The subagent's type, for a child task."""
    tools: tuple[str, ...] | None = None
    """The tools the task has, by name (None: the session's): its subagents get at most these."""
    policy: PermissionPolicy | None = None
    """What decides the task's calls (None: the session's policy): its subagents' calls are
    decided at least as strictly."""
    prompter: Prompter | None = None
    """Who the task's questions go to (None: the session's prompter)."""
    model: ModelClient | None = None
    """The task's model (None: the session's): what its subagents `inherit`."""
    subagents: list[SubagentRecord] = field(default_factory=list)
    """What each subagent this task delegated to did, in the order they ended."""

    def denials(self) -> Sequence[dict[str, Any]]:
        """Every denial of this task's subagents (and theirs)."""
        return [denial for record in self.subagents for denial in record.denials]

    def hook_blocks(self) -> list[dict[str, Any]]:
        """Everything the hooks blocked or stopped of this task's subagents (and theirs)."""
        return [block for record in self.subagents for block in record.hook_blocks]
