"""Small JSON stores in the data dir (the trust store, the approvals store): read whole,
changed under an exclusive lock, replaced atomically, so concurrent writers lose no entry and a
reader never sees half a file."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentcli.errors import ConfigError
from agentcli.private import private_dir


def read_json(path: Path, *, what: str, hint: str = "fix or remove it") -> Any | None:
    """The store's data; None when there is no store yet. ConfigError, naming `what`, when it
    cannot be read or is not JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except NotADirectoryError as exc:
        raise ConfigError(
            f"the data directory {path.parent} cannot be used: it is not a directory",
            hint="AGENTCLI_HOME (or the user data directory) must be a writable directory",
        ) from exc
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{what} {path} is unreadable: {exc}", hint=hint) from exc


def replace_json(path: Path, data: Any) -> None:
    """Write `data` to a temp file beside `path`, then put it in place (call under
    `store_lock`)."""
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        Path(temp).replace(path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def store_lock(path: Path) -> Iterator[None]:
    """Writers serialize on a lock file beside the store (the store itself gets replaced)."""
    private_dir(path.parent)
    fd = os.open(path.with_name(f"{path.name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
