"""Custom commands and skills in the REPL: `/name args` runs one (the REPL's own commands win
a name they share, with a notice), `/help` and Tab list them with their argument hints, and
`/skills` lists every one found: its name, kind, file, state (active, or hidden by which file)
and description, then the files that were skipped and why."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from rich.text import Text

from agentcli.truncation import shorten
from agentcli.ui.repl.input import CustomCommand
from agentcli.ui.term.safe import visible

if TYPE_CHECKING:
    from agentcli.skills.catalog import Catalog
    from agentcli.ui.repl.host import ReplHost as Repl


def completions(catalog: Catalog) -> list[CustomCommand]:
    return [
        CustomCommand(f"/{d.name}", d.front.argument_hint or "", d.description)
        for d in catalog.user_commands()
    ]


def clashes(catalog: Catalog, builtins: Collection[str]) -> list[str]:
    """A notice for each custom command the REPL's own command of that name hides."""
    return [
        f"/{d.name} ({catalog.shown(d.path)}) is not run: the REPL's own /{d.name} wins"
        for d in catalog.user_commands()
        if f"/{d.name}" in builtins
    ]


def help_text(catalog: Catalog, builtins: Collection[str]) -> Text:
    """`/help`'s part for custom commands and skills (empty when there are none)."""
    text = Text()
    shown = [d for d in catalog.user_commands() if f"/{d.name}" not in builtins]
    if not shown:
        return text
    text.append("\n  Custom commands and skills (/skills lists where each comes from):\n", "dim")
    for d in shown:
        usage = visible(f"/{d.name} {d.front.argument_hint or ''}".rstrip())
        # A long usage (a long hint) gets a line of its own, as the description's column.
        text.append(f"  {usage:<25}" if len(usage) < 25 else f"  {usage}\n{'':27}", "bold")
        text.append(f"{shorten(visible(d.description), 70)}\n")
    return text


async def run(repl: Repl, name: str, arg: str) -> bool:
    """Run `/name arg` if it names a custom command or skill; False if it names none."""
    definition = repl.custom_catalog().find(name.removeprefix("/"))
    if definition is None or not definition.user_invocable:
        return False
    await repl.run_task(f"{name} {arg}".rstrip(), command=True)
    return True


def show(repl: Repl, catalog: Catalog, builtins: Collection[str]) -> None:
    """`/skills`."""
    if not catalog.listed and not catalog.skipped:
        repl.say(
            "no skills or custom commands: put them in .agentcli/commands/NAME.md, "
            ".claude/commands/, .agents/skills/NAME/SKILL.md or ~/.claude/skills/"
        )
        return
    text = Text()
    for entry in catalog.listed:
        definition = entry.definition
        name = f"/{definition.name}"
        if entry.hidden_by is not None:
            state, style = f"hidden by {catalog.shown(entry.hidden_by)}", "yellow"
        elif name in builtins:
            state, style = f"hidden by the REPL's own {name}", "yellow"
        elif not definition.user_invocable:
            state, style = "active (the model's only)", "green"
        else:
            state, style = "active", "green"
        text.append(f"  {visible(name)}", style="bold")
        text.append(f"  {definition.kind.value}  {visible(catalog.shown(definition.path))}\n")
        text.append(f"    {state}", style=style)
        if definition.description:
            text.append(f" · {shorten(visible(definition.description), 100)}")
        text.append("\n")
    for skipped in catalog.skipped:
        text.append(f"  skipped {visible(catalog.shown(skipped.path))}", style="red")
        text.append(f": {visible(skipped.reason)}\n")
    repl.console.print(text, end="")
