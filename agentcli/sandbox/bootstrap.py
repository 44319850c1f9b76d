"""How agentcli starts the sandbox helper: `python -I -S -c PROGRAM OPTIONS -- ARGV...`.

PROGRAM carries the helper's modules (`landlock`, `namespaces`, `seccomp`, `exec`), compiled
once when agentcli first needs them and passed as marshalled code. So the helper imports
nothing from the file system but the standard library: not from the workspace (`-I` keeps the
current directory off `sys.path`), not from site-packages (`-S`, which also saves ~20 ms per
command), and not from an agentcli source tree the model may be editing (an editable install
of agentcli working on its own repository runs the helper it started with, not the one on
disk now). marshal's format belongs to the running Python, which is also the helper's.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import marshal
import os
import sys
from collections.abc import Iterable
from pathlib import Path

HELPER_MODULES = ("landlock", "namespaces", "seccomp", "exec")
_LOADER = """\
import sys, marshal, binascii
from types import ModuleType
def _package(name):
    module = ModuleType(name)
    module.__path__ = []
    sys.modules[name] = module
    return module
_package("agentcli").sandbox = _package("agentcli.sandbox")
for _name, _code in marshal.loads(binascii.a2b_base64({payload!r})):
    _module = ModuleType("agentcli.sandbox." + _name)
    sys.modules[_module.__name__] = _module
    exec(_code, _module.__dict__)
    setattr(sys.modules["agentcli.sandbox"], _name, _module)
_code = sys.modules["agentcli.sandbox.exec"].main(sys.argv[1:])
sys.stdout.flush()
sys.stderr.flush()
import os
os._exit(_code)  # no interpreter teardown: ~3 ms of every command
"""


@functools.cache
def helper_sources() -> str:
    """A digest of the helper's source files: what the program `helper_program` compiles
    from them does (with the Python that compiles it). Cheaper than compiling them (~10 ms),
    for keys that must change with the helper."""
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for name in HELPER_MODULES:
        digest.update(name.encode() + b"\0" + (here / f"{name}.py").read_bytes() + b"\0")
    return digest.hexdigest()


@functools.cache
def helper_program() -> str:
    """The `-c` program that defines the helper's modules and runs `exec.main`."""
    here = Path(__file__).resolve().parent
    compiled = []
    for name in HELPER_MODULES:
        path = here / f"{name}.py"
        source = path.read_text(encoding="utf-8")
        # optimize=2 drops docstrings: a smaller argv for every command.
        compiled.append((name, compile(source, str(path), "exec", optimize=2)))
    payload = base64.b64encode(marshal.dumps(compiled)).decode("ascii")
    return _LOADER.format(payload=payload)


def helper_python(avoid: Iterable[Path] = ()) -> str | None:
    """The interpreter the helper runs on: the real file behind the running Python (in a
    virtualenv `bin/python` is a link to the base interpreter), else the virtualenv's base
    interpreter; never one beneath `avoid` (the workspace and the other directories sandboxed
    commands may write). The helper runs before anything is confined: with agentcli installed
    in a virtualenv inside the workspace, `sys.executable` is a file a sandboxed command can
    replace, and the next command would start the replacement unconfined. None when every
    candidate lies beneath `avoid`."""
    avoided = [Path(os.path.realpath(path)) for path in avoid]
    for candidate in (sys.executable, getattr(sys, "_base_executable", None)):
        if not candidate:
            continue
        real = Path(os.path.realpath(candidate))
        if real.is_file() and not any(real.is_relative_to(a) for a in avoided):
            return str(real)
    return None


def helper_argv(options: list[str], argv: list[str], python: str | None = None) -> list[str]:
    """The argv that runs `argv` through the helper with `options` (and the seccomp filter),
    on `python` (default: `helper_python()`); the calling process must start it (the helper dies
    with it). Raises OSError when the filter cannot be built (no libseccomp) or there is no
    interpreter to run the helper on."""
    from agentcli.sandbox.seccomp import compiled_once  # ctypes: only once a command runs

    python = python or helper_python()
    if python is None:
        raise OSError("no Python interpreter to run the sandbox helper on")
    program = helper_program()
    filter_options = ["--seccomp", compiled_once().hex(), "--parent", str(os.getpid())]
    return [python, "-I", "-S", "-c", program, *filter_options, *options, "--", *argv]
