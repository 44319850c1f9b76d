"""Slash commands that stand on other parts of agentcli: permissions, acceptance checks,
checkpoints (diff/undo) and the session journal. Each calls that part's public functions; a
part that is missing says so plainly instead of pretending."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

if TYPE_CHECKING:
    from agentcli.ui.repl.app import Repl


def _unavailable(repl: Repl, command: str, needs: str) -> None:
    repl.error(f"{command} is not available yet in this version ({needs} is not built yet)")


async def permissions(repl: Repl, arg: str) -> None:
    manager = await repl.manager_or_none()
    if manager is None:
        return
    policy = manager.policy
    text = Text()
    text.append("  mode  ", style="bold")
    text.append(f"{repl.status.mode}\n")
    allowed = sorted(getattr(policy, "allowed", set()))
    text.append("  allow ", style="bold")
    text.append((", ".join(allowed) or "(no rules)") + "\n")
    repl.console.print(text, end="")


async def accept(repl: Repl, arg: str) -> None:
    _unavailable(repl, "/accept", "acceptance checks in the session")


async def check(repl: Repl, arg: str) -> None:
    _unavailable(repl, "/check", "acceptance checks in the session")


async def diff(repl: Repl, arg: str) -> None:
    _unavailable(repl, "/diff", "task checkpoints")


async def undo(repl: Repl, arg: str) -> None:
    _unavailable(repl, "/undo", "task checkpoints")


async def sessions(repl: Repl, arg: str) -> None:
    _unavailable(repl, "/sessions", "the session journal")


async def resume(repl: Repl, arg: str) -> None:
    _unavailable(repl, "/resume", "the session journal")
