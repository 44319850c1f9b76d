"""What skills and custom commands add to a session being built: the catalog found for the
workspace, the system prompt's list of skills, the `skill` tool (when there is a skill to
offer), and the skills' directories outside the workspace, which `read_file` may read and
sandboxed commands see (a skill's scripts run where they lie). The notices about what was
found go to the session's events once, as it starts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentcli.events import EventSink, Notice
from agentcli.model_spec import ModelSpec
from agentcli.settings import Settings
from agentcli.skills.catalog import Catalog, discover
from agentcli.skills.listing import listing
from agentcli.skills.sources import Kind
from agentcli.skills.tool import SkillTool
from agentcli.tools.base import Tool


@dataclass(frozen=True, slots=True)
class SessionSkills:
    catalog: Catalog
    system_section: str
    """Appended to the system prompt (empty: nothing to offer the model)."""
    tools: tuple[Tool[Any], ...]
    read_roots: tuple[Path, ...]


def session_skills(
    workspace: Path, settings: Settings, spec: ModelSpec, events: EventSink
) -> SessionSkills:
    catalog = discover(workspace, trusted=settings.provenance.trusted)
    window = settings.context.window_tokens or (spec.context_window if spec.known else None)
    listed = listing(catalog, window)
    notices = catalog.notices()
    if (left_out := listed.notice()) is not None:
        notices.append(left_out)
    for notice in notices:
        events(Notice(level="warning", message=notice))
    tools: tuple[Tool[Any], ...] = (SkillTool(catalog),) if listed.text else ()
    inside = Path(os.path.realpath(workspace))
    roots = tuple(
        dict.fromkeys(
            real
            for definition in catalog.active()
            if definition.kind is Kind.SKILL
            and not (real := Path(os.path.realpath(definition.directory))).is_relative_to(inside)
        )
    )
    return SessionSkills(catalog, listed.text, tools, roots)


def with_skills(system: str, skills: SessionSkills) -> str:
    return f"{system}\n\n{skills.system_section}" if skills.system_section else system


def with_skill_dirs(settings: Settings, skills: SessionSkills) -> Settings:
    """`settings` with the skills' own directories outside the workspace readable in the
    sandbox (`sandbox.readable`): a skill's scripts are run by the commands it shows."""
    if not skills.read_roots:
        return settings
    readable = [*settings.sandbox.readable, *(str(root) for root in skills.read_roots)]
    sandbox = settings.sandbox.model_copy(update={"readable": readable})
    return settings.model_copy(update={"sandbox": sandbox})
