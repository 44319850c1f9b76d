"""agentcli's own installation: the interpreter that runs it, its prefixes, `site-packages` (any
`.pth` file or `sitecustomize` there runs at every start), the `agentcli` package and the script
that started it, and the directory PYTHONPYCACHEPREFIX names, where set: the byte-code of all of
these (and the compiled dataclass methods `agentcli.dataclass_code` keeps) lies there instead,
and runs as they would.

When agentcli runs from a virtualenv inside the workspace it works in (the README's own set-up),
all of that lies where commands may write; a changed one runs at the next start, outside the
sandbox, before anything is asked. So the sandbox keeps every one of these paths read-only
(`agentcli.sandbox.runner`: a read-only bind, in the kernel, whatever the command), and the
permission policy asks before a file tool writes into one (`agentcli.permissions.protected`).
"""

from __future__ import annotations

import contextlib
import site
import sys
from pathlib import Path

import agentcli


def own_install_paths() -> tuple[Path, ...]:
    """Every path of agentcli's own installation (see the module docstring), as written and
    where links lead, each once."""
    candidates: list[str | None] = [
        sys.prefix,
        sys.exec_prefix,
        sys.base_prefix,
        sys.base_exec_prefix,
        sys.executable,
        getattr(sys, "_base_executable", None),
        str(Path(agentcli.__file__).parent),
        sys.pycache_prefix,
        *site.getsitepackages(),
    ]
    if site.ENABLE_USER_SITE:
        candidates.append(site.getusersitepackages())
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is not None and script.name in ("agentcli", "__main__.py") and script.is_file():
        candidates.append(str(script.absolute()))
    found: list[Path] = []
    for candidate in candidates:
        if not candidate:
            continue
        path = Path(candidate).absolute()
        with contextlib.suppress(OSError, RuntimeError):
            for each in (path, path.resolve()):
                if each.exists() and each not in found:
                    found.append(each)
    return tuple(found)
