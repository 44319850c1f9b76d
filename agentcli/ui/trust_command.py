"""`agentcli trust [PATH] [--list | --revoke]`: the trust store (`agentcli.trust`) from the
command line, saying which of the workspace's own settings start to apply."""

from __future__ import annotations

import sys
from pathlib import Path

from agentcli.config import describe_ignored, load_settings
from agentcli.errors import UsageError
from agentcli.trust import set_trusted, trusted_workspaces, workspace_key
from agentcli.ui.term.safe import visible


def trust_command(path: Path | None, *, list_: bool = False, revoke: bool = False) -> int:
    """`agentcli trust [PATH] [--list | --revoke]`: PATH defaults to the current directory."""

    def out(text: str) -> None:
        sys.stdout.write(visible(text))

    if list_:
        if path is not None or revoke:
            raise UsageError("--list takes no path and no --revoke")
        entries = trusted_workspaces()
        for key, when in sorted(entries.items()):
            missing = "" if Path(key).is_dir() else "  (no longer exists)"
            out(f"{key}  trusted {when}{missing}\n")
        if not entries:
            out("no trusted workspaces\n")
        return 0
    target = (path or Path.cwd()).expanduser()
    if revoke:
        changed = set_trusted(target, False)
        out(f"{'no longer trusted' if changed else 'was not trusted'}: {workspace_key(target)}\n")
        return 0
    if not target.is_dir():
        raise UsageError(f"{target} is not a directory")
    now_applying = describe_ignored(load_settings(target, trusted=False))
    changed = set_trusted(target, True)
    out(f"{'trusted' if changed else 'already trusted'}: {workspace_key(target)}\n")
    if now_applying:
        out(f"its own config now applies:\n{now_applying}\n")
    return 0
