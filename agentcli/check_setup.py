"""A user's own acceptance check in the sandbox: what it may read beyond what every sandboxed
command sees, and when it cannot start at all (a setup error: not the model's to fix).

Checks run in the sandbox: they run the model's code. But the check itself is the user's
(`--accept`, `/accept`, the user's config, a trusted workspace's config; an untrusted
repository cannot set one), and it often names what lies outside the workspace: a virtualenv
that is not activated (`~/.virtualenvs/proj/bin/pytest`, poetry's and pipenv's virtualenvs,
pyenv-virtualenv's), a shared check script, an evaluation harness that keeps its tests out of
the model's reach. Hidden from the check, such a check fails (exit 127 or 2) for a reason the
model cannot fix.

So a check sees, read-only, the paths its command names (each word that is a path, `~` and
`$VARS` expanded as bash would, `--option=PATH` too) and the program each of its commands starts:
found on PATH like bash finds it, and, for a program in a virtualenv (`X/bin/prog` with
`X/pyvenv.cfg`, or a conda environment), that environment's root; a script's `#!` interpreter
the same way (so `~/.virtualenvs/proj/bin/pytest`, whose first line names that virtualenv's
python, brings the virtualenv). Paths inside the workspace are in sight anyway. What the
sandbox hides (credentials, agentcli's own data, `sandbox.deny_read`) stays hidden: the caller
asks the sandbox (`CommandSandbox.hides`) and a check that names such a path cannot run.

A check that cannot start at all, by bash's own account (exit 126: found but not executable,
127: not found; the sandbox's own refusal), or that names a path the sandbox hides, is a setup
error (`cannot_start`, `hidden_paths_problem`): the task ends with a configuration error
naming the path and `sandbox.readable`, never a repair round.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Mapping
from pathlib import Path

from agentcli.permissions.commands import every_command
from agentcli.permissions.shell import parse_command
from agentcli.safe_read import MAX_CONFIG_BYTES, read_bytes

_VARIABLE = re.compile(r"\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})")
SHEBANG_BYTES = 256
ENVIRONMENT_MARKERS = ("pyvenv.cfg", "conda-meta")
"""A directory holding one of these is the root of a Python (or conda) environment."""


def named_paths(command: str, *, cwd: Path, environ: Mapping[str, str]) -> tuple[Path, ...]:
    """The paths outside `cwd` that `command` names or starts (see the module docstring), as
    written (links not followed: the sandbox keeps the way through them), existing ones only,
    each once."""
    found: list[Path] = []
    for argv in _commands(command):
        if not argv:
            continue
        program = _program(argv[0], cwd, environ)
        if program is not None:
            found += [program, *_environment_of(program), *_interpreter_paths(program, environ)]
        for word in argv[1:]:
            for piece in _pieces(word):
                path = _as_path(piece, cwd, environ)
                if path is not None:
                    found += [path, *_environment_of(path), *_interpreter_paths(path, environ)]
                    found += _beside(path, cwd, environ)
        if program is not None and "/" in argv[0]:
            found += _beside(program, cwd, environ)
    inside = cwd.resolve()
    kept: list[Path] = []
    for path in found:
        if path in kept or not os.path.lexists(path):
            continue
        if _real(path).is_relative_to(inside):
            continue
        kept.append(path)
    return tuple(kept)


def _beside(path: Path, cwd: Path, environ: Mapping[str, str]) -> list[Path]:
    """For a file a check names (a script, a harness), the directory it is in: what it reads
    beside itself (the tests it keeps out of the model's reach). Never a directory as broad as
    the home directory (or one above it, or one just below `/`), nor one above the workspace
    (its sibling projects)."""
    if not path.is_file():
        return []
    parent = path.parent
    home = Path(environ.get("HOME") or Path.home())
    real = _real(parent)
    too_broad = len(real.parts) < 3 or home.is_relative_to(parent) or home.is_relative_to(real)
    if too_broad or cwd.is_relative_to(parent) or _real(cwd).is_relative_to(real):
        return []
    return [parent]


def _commands(command: str) -> list[tuple[str, ...]]:
    parsed = parse_command(command)
    if parsed.ok:
        return [part.argv for part in every_command(parsed)]
    try:
        return [tuple(shlex.split(command))]
    except ValueError:
        return [tuple(command.split())]


def _pieces(word: str) -> list[str]:
    """A word, and what follows `=` in it (`--rootdir=/x`, `VAR=/x`)."""
    pieces = [word]
    if "=" in word:
        pieces.append(word.split("=", 1)[1])
    return pieces


def _expand(word: str, environ: Mapping[str, str]) -> str:
    """`~`, `$VAR` and `${VAR}` expanded from the check's environment as bash would (an unset
    variable is left as written: then the word is not taken for a path)."""
    home = environ.get("HOME")
    if home and (word == "~" or word.startswith("~/")):
        word = home + word[1:]
    elif word.startswith("~"):
        word = os.path.expanduser(word)  # noqa: PTH111 - `~user` in a string
    return _VARIABLE.sub(lambda m: environ.get(m.group(1) or m.group(2), m.group(0)), word)


def _as_path(word: str, cwd: Path, environ: Mapping[str, str]) -> Path | None:
    """The path `word` names, if it looks like one (`/x`, `~/x`, `./x`, `a/b`, `$VAR/x`)."""
    if not word or word.startswith("-") or "://" in word:
        return None
    if not ("/" in word or word.startswith("~")):
        return None
    expanded = _expand(word, environ)
    if "$" in expanded:
        return None  # a variable the check's environment does not set
    return Path(os.path.normpath(cwd / expanded))


def _program(name: str, cwd: Path, environ: Mapping[str, str]) -> Path | None:
    """The file bash runs for command name `name` (a path, or looked up on PATH)."""
    if "/" in name or name.startswith("~"):
        return _as_path(name, cwd, environ)
    for entry in environ.get("PATH", "").split(os.pathsep):
        if not entry or not os.path.isabs(entry):  # noqa: PTH117 - a string from PATH
            continue
        candidate = Path(entry) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def _environment_of(path: Path) -> list[Path]:
    """The Python (or conda) environment `path` lies in: its root, and the base Python a
    virtualenv's `pyvenv.cfg` names (`home = …/bin`), as written and where they lead."""
    found: list[Path] = []
    for candidate in _dirs_up(path):
        if any((candidate / marker).exists() for marker in ENVIRONMENT_MARKERS):
            found.append(candidate)
            found += _base_python(candidate / "pyvenv.cfg")
            break
    return found


def _dirs_up(path: Path) -> Iterable[Path]:
    """The directories above `path`, both as written and where links lead, up to 4 levels
    (a program sits at `ROOT/bin/prog`, a module at `ROOT/lib/pythonX/site-packages/m`)."""
    for start in dict.fromkeys((path, _real(path))):
        for parent in list(start.parents)[:5]:
            if parent != Path("/"):
                yield parent


def _base_python(config: Path) -> list[Path]:
    try:  # a virtualenv's pyvenv.cfg: the user's file, read as agentcli reads those
        text = read_bytes(config, inside=None, limit=MAX_CONFIG_BYTES).decode("utf-8", "replace")
    except OSError:
        return []
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            home = Path(value.strip())
            return [home.parent if home.name == "bin" else home]
    return []


def _interpreter_paths(path: Path, environ: Mapping[str, str]) -> list[Path]:
    """For a script starting with `#!`: its interpreter (through `env`, looked up on PATH)
    and the environment that interpreter lies in."""
    try:  # never a pipe a check names (its open would block), only a regular file's head
        head = read_bytes(path, inside=None, limit=SHEBANG_BYTES, cut=True)
    except OSError:
        return []
    if not head.startswith(b"#!"):
        return []
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if not words:
        return []
    interpreter: Path | None = Path(words[0])
    if Path(words[0]).name == "env":
        rest = [w for w in words[1:] if not w.startswith("-")]
        interpreter = _program(rest[0], Path("/"), environ) if rest else None
    if interpreter is None or not interpreter.is_absolute():
        return []
    return [interpreter, *_environment_of(interpreter)]


def _real(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path


CANNOT_START = (126, 127)
"""bash's exit codes for a command it found but could not execute, and one it did not find."""
_BASH_SAYS = re.compile(
    r"^(?:\S*sh|agentcli sandbox)(?:: line \d+)?: (?:cannot run )?(.+?): "
    r"(No such file or directory|command not found|Permission denied|cannot execute[^\n]*)",
    re.MULTILINE,
)
HOW_TO_FIX = (
    "The model cannot fix this. If the check needs something outside the workspace that the "
    "sandbox does not show, name it in the check's command (the check then sees it, "
    "read-only) or add it to `sandbox.readable` in your config (~/.config/agentcli/config.toml)"
)


def cannot_start(
    command: str, exit_code: int | None, output: str, *, sandboxed: bool = True
) -> str | None:
    """Why the check `command` could not start at all, naming what was missing; None when it
    started (whatever it then found)."""
    if exit_code not in CANNOT_START:
        return None
    said = _BASH_SAYS.search(output)
    what = f"{said.group(1)}: {said.group(2)}" if said else f"exit code {exit_code}"
    where = " in the sandbox" if sandboxed else ""
    fix = HOW_TO_FIX if sandboxed else "The model cannot fix this: check that it runs for you"
    return (
        f"the acceptance check `{command}` cannot start{where} ({what}; exit code "
        f"{exit_code}). {fix}."
    )


def hidden_paths_problem(command: str, hidden: Iterable[Path]) -> str | None:
    """Why the check `command` cannot run when it names paths the sandbox hides (each named
    once: not also the directory a named file is in)."""
    found = list(hidden)
    names = ", ".join(
        str(p) for p in found if not any(q.is_relative_to(p) for q in found if q != p)
    )
    if not names:
        return None
    return (
        f"the acceptance check `{command}` names {names}, which the sandbox hides from every "
        "command (credentials, agentcli's own data, sandbox.deny_read), also from checks; it "
        "was not run. Change the check so it does not need it; `sandbox.readable` does not "
        "open hidden paths"
    )
