"""What the REPL was started with (options before any command, `-C`, `/model`, `/mode`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(kw_only=True)
class ReplSettings:
    """What the REPL was started with; `/model` and `/mode` change it for later sessions."""

    cwd: Path | None = None
    model: str | None = None
    permission_mode: str | None = None
    allow: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)
    accept: list[str] = field(default_factory=list)
