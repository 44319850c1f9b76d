"""The compiled methods of dataclasses, kept between runs like a module's byte-code.

`@dataclass` writes each class's `__init__`, `__repr__`, `__eq__`, `__hash__` (and, when frozen,
`__setattr__` and `__delattr__`) as Python source and compiles it, at every start: on the way to
`run`'s first request ~250 classes (agentcli's, pydantic's, typer's), ~1,300 compiles, ~95 ms on
this 2-core machine, a fifth of the time to the first request. For the same code the texts are
the same at every start, so their compiled code is kept, as Python keeps a module's, and read
back in ~5 ms.

How: `dataclasses` runs each text with `exec(text, globals, namespace)`. `install` gives that
module an `exec` of its own (the builtin everywhere else is untouched) that compiles a text it
has not seen, as `exec` would (file name `<string>`, no inherited `__future__` flags; the
`dataclasses` module has none), and runs the code object. A kept code object is used only for
exactly the text it was compiled from: the text is its key, so nothing else is ever run.

Where: beside agentcli's own byte-code (`agentcli/__pycache__/`, or under PYTHONPYCACHEPREFIX,
wherever Python keeps it), named by the interpreter's cache tag and checked against its magic
number, so another Python's file is never read as this one's. It holds code agentcli runs, as
the `.pyc` files beside it do, and whoever can write one can write the other: it is written
only into a directory that already holds agentcli's byte-code (made by the installer or by
Python), never created elsewhere, and read only when it is this user's (or root's) and nobody
else may write it. A file that is missing, unreadable, of another interpreter, not this user's
or damaged (its CRC-32 is in its header: a flipped byte in marshalled code can crash the
interpreter when the class is built) is ignored: every class is compiled as without it, and the
file is written anew.
Like byte-code another interpreter wrote there, `pip uninstall` leaves it behind (it is not in
the wheel's record); an upgrade reuses what still matches.

No library does this: Python 3.13 compiles a class's methods in one go (about half the cost);
3.11, which agentcli supports, does not.
"""

import _frozen_importlib_external as _bootstrap
import builtins
import marshal
import os
import sys
import zlib
from pathlib import Path
from types import CodeType
from typing import Any

# Imported before `install` routes dataclasses here: the file is read when the first class is
# made, and a module imported then (safe_read defines a class) would ask for it again.
from agentcli.safe_read import read_bytes

FORMAT = b"agentcli dataclass code 2\n"
"""The file's first bytes, before the interpreter's magic number and the CRC-32 of the rest: a
later layout changes it."""

MAX_FILE_BYTES = 32 * 1024 * 1024
"""A bigger file is not read (~1 MB per 1,000 entries)."""

MAX_KEPT = 6000
"""Entries beyond this (texts of classes an upgrade changed, accumulating) start the file over
with what this process compiled. A run keeps ~1,300; the REPL and the other commands add some."""


class CodeCache:
    """Compiled dataclass texts by their text: those read from `path`, and those compiled since."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._kept: dict[str, CodeType] | None = None
        self.compiled: dict[str, CodeType] = {}

    @property
    def kept(self) -> dict[str, CodeType]:
        """What the file holds, read when first needed (a process that defines no class
        reads nothing)."""
        if self._kept is None:
            self._kept = _read(self.path) if self.path is not None else {}
        return self._kept

    def exec(
        self,
        source: Any,
        globals: dict[str, Any] | None = None,
        locals: Any = None,
        /,
    ) -> None:
        """`exec`, compiling a text once."""
        if globals is None:  # the caller's namespace, as the builtin takes it (never cached)
            caller = sys._getframe(1)
            globals, locals = caller.f_globals, caller.f_locals if locals is None else locals
        elif type(source) is str:
            code = self.kept.get(source) or self.compiled.get(source)
            if code is None:
                code = compile(source, "<string>", "exec", dont_inherit=True)
                self.compiled[source] = code
            source = code
        builtins.exec(source, globals, locals)

    def save(self) -> None:
        """Write the file with what was compiled since it was read, if anything was and the
        directory exists (never created). Written whole under another name, then renamed: a
        reader sees the old file or the new one, and of two writers the last wins."""
        compiled = dict(self.compiled)
        if self.path is None or not compiled:
            return
        if not self.path.parent.is_dir():
            return
        entries = {**self.kept, **compiled}
        if len(entries) > MAX_KEPT:
            entries = compiled
        payload = marshal.dumps(entries)
        data = _header() + zlib.crc32(payload).to_bytes(4, "little") + payload
        temporary = self.path.with_name(f"{self.path.name}.{os.urandom(6).hex()}.tmp")
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(temporary, flags, 0o644)  # not private: byte-code, as the .pyc files
            try:
                with os.fdopen(fd, "wb") as file:
                    file.write(data)
            except BaseException:
                temporary.unlink()
                raise
            temporary.replace(self.path)
        except OSError:
            return
        self._kept, self.compiled = entries, {}


def install() -> CodeCache | None:
    """Compile dataclass methods through a kept cache from now on in this process, and save what
    is new when it exits. Once per process; None when Python keeps no byte-code here, or when
    anything about the cache fails (start-up goes on without it)."""
    try:
        return _install()
    except Exception:  # a cache is never a reason not to start
        return None


def _install() -> CodeCache | None:
    import atexit
    import dataclasses

    current = getattr(dataclasses, "exec", None)
    if isinstance(getattr(current, "__self__", None), CodeCache):
        return current.__self__  # type: ignore[union-attr,no-any-return]
    path = cache_path()
    if path is None:
        return None
    cache = CodeCache(path)
    dataclasses.exec = cache.exec  # type: ignore[attr-defined]
    atexit.register(cache.save)
    return cache


def cache_path() -> Path | None:
    """The file beside the byte-code of agentcli's own `__init__`, where Python keeps it."""
    import agentcli

    tag = sys.implementation.cache_tag
    if tag is None or agentcli.__file__ is None:
        return None
    try:
        beside = _bootstrap.cache_from_source(agentcli.__file__)
    except (NotImplementedError, ValueError):
        return None
    return Path(beside).with_name(f"dataclass-code.{tag}.bin")


def _header() -> bytes:
    return FORMAT + _bootstrap.MAGIC_NUMBER


def _is_mine(path: Path) -> bool:
    """The file is this user's (or root's) and nobody else may write it: a shared cache prefix
    (PYTHONPYCACHEPREFIX=/tmp/...) may hold another user's file, which is not run."""
    info = path.stat()
    return info.st_uid in (os.geteuid(), 0) and not info.st_mode & 0o022


def _read(path: Path) -> dict[str, CodeType]:
    """The entries of the file at `path`: empty when it is missing, unreadable (not a regular
    file, too big), another interpreter's or not what this module writes."""
    try:
        mine = _is_mine(path)
        data = read_bytes(path, inside=None, limit=MAX_FILE_BYTES) if mine else b""
    except OSError:
        return {}
    header = _header()
    start = len(header) + 4
    if not data.startswith(header) or len(data) < start:
        return {}
    payload = memoryview(data)[start:]
    if zlib.crc32(payload) != int.from_bytes(data[len(header) : start], "little"):
        return {}
    try:
        entries = marshal.loads(payload)
    except Exception:  # damaged in a way the checksum missed: marshal raises more than it says
        return {}
    if not isinstance(entries, dict):
        return {}
    return {
        text: code for text, code in entries.items() if type(text) is str and type(code) is CodeType
    }
