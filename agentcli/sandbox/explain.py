"""Telling the model that a command failed because of the sandbox, not just "permission denied".

Without this, a model that sees `Permission denied` or `Network is unreachable` improvises:
`sudo`, `chmod`, other paths, retries. The explanation names the limit that was hit and the
honest way out: run escalating commands on their own so the user can approve them, or tell the
user what it needs.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from agentcli.confinement import Confinement, Profile

PROGRAM_FILE_NAMES = (".mcp.json",)
"""`permissions.protected.PROGRAM_FILES` (the sandbox package does not import the policy's):
a test keeps the two equal."""

_FS_MARKERS = (
    "Read-only file system",
    "Permission denied",
    "Operation not permitted",
    "EROFS",
    "EACCES",
    "EPERM",
    # Renaming onto a path the sandbox bound read-only (how git and editors save a file).
    "Device or resource busy",
    "EBUSY",
)
_NET_MARKERS = (
    "Network is unreachable",
    "ENETUNREACH",
    "Temporary failure in name resolution",
    "Could not resolve host",
    "Could not resolve hostname",
    "Name or service not known",
    "No address associated with hostname",
    "getaddrinfo",
    "No route to host",
    "Failed to establish a new connection",
    "Couldn't connect to server",
    "Connection refused",
    "ECONNREFUSED",
)
_SHELL_SAYS = re.compile(r"^\S*sh: (?:line \d+: )?")
"""The shell's own prefix on its error lines (`/usr/bin/bash: line 1: `): not a path involved."""
_PATH = re.compile(r"""['"`‘]([^'"`’\n]+)['"`’]|((?:~|\.{1,2})?/[^\s:'",)]+|[\w.-]+/[^\s:'",)]*)""")

GIT_WAY_OUT = (
    "Git commands that change the repository get a writable .git only when the whole command "
    "is git commands (e.g. `git add -A && git commit -m 'msg'`) and the user approves it: run "
    "it that way, on its own."
)
NETWORK_WAY_OUT = (
    "Commands known to need the network (package installs, git fetch/pull/push, curl, …) get "
    "it only when run on their own, not chained with other commands, and approved by the user. "
    "Run it that way, or tell the user why you need the network."
)
OUTSIDE_WAY_OUT = (
    "Do not work around it (no sudo, chmod or other locations). Write inside the workspace or "
    "$TMPDIR, or tell the user which directory you need: they can add it to `sandbox.writable` "
    "in .agentcli/config.toml."
)
ESCAPE_HATCH = (
    "If it truly cannot work inside the sandbox, you may run the same command with "
    "outside_sandbox: true; the user is asked and may refuse."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxLimits:
    workspace: Path
    temp_dir: Path
    writable: tuple[Path, ...]
    protected: tuple[Path, ...]
    network_blocked: bool
    hidden: tuple[Path, ...] = ()
    """Directories and files sandboxed commands do not see (an empty dir, or /dev/null)."""
    visible: tuple[Path, ...] = ()
    """Beyond the workspace, $TMPDIR and the writable dirs, what a command's root holds (system
    and toolchain dirs, sandbox.readable); nothing else of the host exists for it."""
    git_programs: tuple[Path, ...] = ()
    """The git dirs' config and hooks: read-only even for a command opened for `.git`."""
    own_install: tuple[Path, ...] = ()
    """agentcli's own interpreter, site-packages, package and entry script, where they lie
    beneath a writable directory: read-only."""
    program_files: tuple[Path, ...] = ()
    """Files that name programs agentcli starts (`.mcp.json`): read-only."""


def explain(output: str, limits: SandboxLimits, confinement: Confinement) -> str | None:
    """A note for the model when `output` shows the sandbox stopped the command, else None."""
    removed = _removed(output)
    if any(Path(path).name in PROGRAM_FILE_NAMES for path in removed):
        return (
            "The file this command created was removed: files that name programs agentcli "
            "starts (MCP servers in .mcp.json) cannot be written by commands. Write it with "
            "the file tools (the user is asked), or tell the user what it should hold."
        )
    if removed:
        return (
            "The workspace was not a git repository when the session started, so the .git this "
            "command created was removed: a planted .git/config can run programs when the "
            "user's shell prompt or git reads it. If the user wants a repository here, ask them "
            "to run `git init` themselves."
        )
    if "agentcli sandbox: cannot confine" in output:
        return (
            "agentcli's sandbox could not confine this command, so it did not run. "
            "Tell the user; do not retry it."
        )
    network = not confinement.network and limits.network_blocked
    network = network and any(m in output for m in _NET_MARKERS)
    fs_lines = [line for line in output.splitlines() if any(m in line for m in _FS_MARKERS)]
    hidden_note = _hidden_note(output, limits)
    if hidden_note and confinement.profile is not Profile.READ_ONLY:
        return f"{hidden_note} {ESCAPE_HATCH}"
    if confinement.profile is Profile.READ_ONLY:
        if not fs_lines and not network:
            return None
        return (
            "This command ran without asking in agentcli's read-only sandbox, because it "
            "looked read-only: it may read only the workspace and system directories, write "
            "only $TMPDIR, and has no network. If it needs more, say so; a command that "
            f"writes is run (after asking, if needed) in the workspace sandbox. {ESCAPE_HATCH}"
        )
    fs_note = _file_system_note(fs_lines, limits, confinement) if fs_lines else None
    if fs_note is None and not network:
        return None
    header = (
        "This command ran inside agentcli's sandbox: it may write only to the "
        f"workspace, $TMPDIR ({limits.temp_dir})"
        + "".join(f", {p}" for p in limits.writable)
        + "; .git and .agentcli are read-only; credentials and keys in the home directory "
        "and other processes are out of its reach"
        + ("; the network is off." if network or limits.network_blocked else ".")
    )
    notes = [header]
    if fs_note:
        notes.append(fs_note)
    if network:
        notes.append(f"The network error came from the sandbox. {NETWORK_WAY_OUT}")
    notes.append(ESCAPE_HATCH)
    return " ".join(notes)


def _removed(output: str) -> list[str]:
    """The paths the helper removed after the command (`exec.ABSENT_NOTE`)."""
    marker = "agentcli sandbox: removed what the command created where it must not be: "
    return [
        path
        for line in output.splitlines()
        if line.startswith(marker)
        for path in line[len(marker) :].split(", ")
    ]


def _hidden_note(output: str, limits: SandboxLimits) -> str | None:
    """Why a path "does not exist": the sandbox hides where it is."""
    for line in output.splitlines():
        if "No such file or directory" not in line and "ENOENT" not in line:
            continue
        for quoted, bare in _PATH.findall(_SHELL_SAYS.sub("", line)):
            candidate = (quoted or bare).strip()
            if "/" not in candidate:
                continue
            path = _absolute(candidate, limits.workspace)
            if any(_within(path, root) for root in _writable(limits)):
                continue  # truly missing
            hidden = next((p for p in limits.hidden if _within(path, p)), None)
            if hidden is not None:
                return (
                    f"{candidate} is not there because the sandbox hides {hidden} from commands "
                    "(credentials, keys and agentcli's own data are hidden). Use the workspace "
                    f"or $TMPDIR ({limits.temp_dir}), or tell the user what you need."
                )
            if limits.visible and not any(_within(path, root) for root in limits.visible):
                return (
                    f"{candidate} is not there for sandboxed commands: a command sees only the "
                    f"workspace, $TMPDIR ({limits.temp_dir}), empty /tmp and /run dirs of its "
                    "own, and the system and toolchain directories. Use those, or tell the "
                    "user what you need (they can add a path to `sandbox.readable`)."
                )
    return None


def _file_system_note(
    lines: list[str], limits: SandboxLimits, confinement: Confinement
) -> str | None:
    saw_path = False
    for line in lines:
        for quoted, bare in _PATH.findall(_SHELL_SAYS.sub("", line)):
            candidate = (quoted or bare).strip()
            if not candidate or ("/" not in candidate and not candidate.startswith(".")):
                continue
            saw_path = True
            path = _absolute(candidate, limits.workspace)
            own = _own_note(candidate, path, limits)
            if own is not None:
                return own
            hit = next((p for p in limits.protected if _within(path, p)), None)
            if hit is not None and hit.name == ".agentcli":
                return (
                    f"Writing {candidate} failed: agentcli's own config is read-only to "
                    "commands. Tell the user what should change there."
                )
            in_git_programs = any(_within(path, p) for p in limits.git_programs)
            if hit is not None and confinement.git_write and in_git_programs:
                return (
                    f"Writing {candidate} failed: a git dir's config and hooks stay read-only "
                    "even when .git is opened (they name programs git runs). A command that "
                    "must change them (git config, git remote add, git push -u) cannot run in "
                    "the sandbox."
                )
            if hit is not None:
                return f"Writing {candidate} failed because .git is read-only. {GIT_WAY_OUT}"
            if not any(_within(path, root) for root in _writable(limits)):
                return (
                    f"Writing {candidate} failed because it is outside the writable places. "
                    + OUTSIDE_WAY_OUT
                )
    if any("Read-only file system" in line or "EROFS" in line for line in lines):
        return f"A write hit a read-only part of the sandbox (.git or .agentcli). {GIT_WAY_OUT}"
    if saw_path:
        return None  # the paths involved are writable: the error is not the sandbox's
    return f"The permission error may have come from the sandbox. {OUTSIDE_WAY_OUT}"


def _own_note(candidate: str, path: Path, limits: SandboxLimits) -> str | None:
    """Why writing `path` failed, when it is agentcli's own install or a file naming programs
    agentcli starts."""
    if any(_within(path, p) for p in limits.own_install):
        return (
            f"Writing {candidate} failed: it is part of agentcli's own installation (its "
            "interpreter, site-packages, package or entry script), which commands may not "
            "change: the next agentcli start would run what they wrote. Install packages "
            "elsewhere (another virtualenv), or tell the user what you need."
        )
    if any(path == p for p in limits.program_files):
        return (
            f"Writing {candidate} failed: files that name programs agentcli starts (MCP "
            "servers) are read-only to commands. Tell the user what should change there; "
            "a write with the file tools asks them."
        )
    return None


def _writable(limits: SandboxLimits) -> tuple[Path, ...]:
    return (limits.workspace, limits.temp_dir, *limits.writable, Path("/dev"))


def _absolute(candidate: str, workspace: Path) -> Path:
    expanded = Path(os.path.expandvars(candidate)).expanduser()
    joined = expanded if expanded.is_absolute() else workspace / expanded
    return Path(os.path.realpath(joined))


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
