"""The system prompt's list of the skills the model may load: each one's name and description,
in precedence order, within 2% of the model's context window (counted at 4 characters a token),
or 8,000 characters when the window is unknown (Codex's cap). What does not fit is left out and
counted in a notice: those still run as `/name`.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentcli.skills.catalog import Catalog

CHARS_PER_TOKEN = 4
WINDOW_SHARE = 0.02
UNKNOWN_WINDOW_CHARS = 8000

INTRODUCTION = """\
Skills: instructions for kinds of tasks, written by the user or the project. When the task
fits a skill's description, load it with the `skill` tool (its name, and arguments if the
user gave any) before you start, and follow it."""


@dataclass(frozen=True, slots=True)
class Listing:
    text: str
    """The system prompt's section (empty when there is no skill to offer)."""
    left_out: tuple[str, ...] = ()

    def notice(self) -> str | None:
        if not self.left_out:
            return None
        count = len(self.left_out)
        return (
            f"{count} skill{'' if count == 1 else 's'} left out of the model's list (it may "
            f"take 2% of the context window): {', '.join(self.left_out[:10])}"
            f"{' …' if count > 10 else ''}; they still run as /name"
        )


def budget(window_tokens: int | None) -> int:
    """The characters the list may take."""
    if window_tokens is None:
        return UNKNOWN_WINDOW_CHARS
    return int(window_tokens * WINDOW_SHARE * CHARS_PER_TOKEN)


def listing(catalog: Catalog, window_tokens: int | None) -> Listing:
    skills = catalog.model_skills()
    if not skills:
        return Listing("")
    room = budget(window_tokens) - len(INTRODUCTION)
    lines: list[str] = []
    left_out: list[str] = []
    for definition in skills:
        line = f"- {definition.name}: {definition.listed_description}".rstrip(": ")
        if len(line) + 1 > room:
            left_out.append(definition.name)
            continue
        room -= len(line) + 1
        lines.append(line)
    if not lines:
        return Listing("", tuple(left_out))
    return Listing(INTRODUCTION + "\n\n" + "\n".join(lines), tuple(left_out))
