"""`OsSandbox`: the `CommandSandbox` that runs each command through the helper, confined as the
permission decision says (`agentcli.confinement`).

What a sandboxed command sees is decided once per session, here:
- it reads (read-only profile) only the workspace, the system directories and the toolchain
  (the directories on PATH, the running Python, known tool homes such as ~/.cargo, the user's
  git config) and `sandbox.readable`; in the workspace-write profile it reads everything that
  is not hidden;
- it writes (workspace-write) the workspace, a per-session temp dir (`$TMPDIR`) and
  `sandbox.writable`; `.git` (and a worktree's git dirs) only when the decision opens it;
  `.agentcli/`, the files that name programs agentcli starts (`.mcp.json`: read-only if it
  exists, removed after the command if the command created it) and agentcli's own install
  (`agentcli.own_install`, where it lies beneath a writable directory) never; (read-only)
  only the temp dir;
- hidden from it, in both: credentials and keys under the home directory (~/.ssh, ~/.aws, …),
  agentcli's own config and data (the trust store), `sandbox.deny_read`, the host's /tmp,
  /run, /var/tmp and /dev/shm (where agent, docker and other unix sockets live; it gets empty
  ones), and secrets in system files (/etc/shadow, private host keys);
- its environment has no secrets (`environment.scrubbed`); its processes live in a PID
  namespace of their own and die with it; the network is off unless the decision opens it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import sys
import tempfile
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentcli import environment
from agentcli.confinement import Confinement, PreparedCommand, Profile
from agentcli.owngit.discover import locate
from agentcli.safe_read import MAX_PROJECT_FILE_BYTES, Inside, read_bytes
from agentcli.sandbox.bootstrap import helper_argv, helper_python
from agentcli.sandbox.explain import PROGRAM_FILE_NAMES, SandboxLimits, explain

SYSTEM_READABLE = (
    *("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"),
    *("/proc", "/sys", "/dev", "/nix", "/snap", "/var/lib/alternatives", "/usr/local"),
)
"""What programs need to run: read (and execute) in the read-only profile."""
HOME_TOOLCHAINS = (
    *(".pyenv", ".cargo", ".rustup", ".nvm", ".volta", ".bun", ".deno", ".sdkman", "go"),
    *(".local/bin", ".local/lib", ".local/share/uv/python", ".local/share/mise"),
    *(".gitconfig", ".config/git", ".ripgreprc"),
)
"""Under the home directory: tool installations, and the config git and ripgrep read."""
SENSITIVE_HOME = (
    *(".ssh", ".aws", ".gnupg", ".config/gcloud", ".netrc", ".docker", ".kube", ".azure"),
    *(".git-credentials", ".config/gh", ".pypirc", ".npmrc", ".password-store"),
    *(".local/share/keyrings", ".config/hub", ".terraform.d", ".vault-token", ".pgpass"),
    *(".config/op", ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials"),
    # Where agents and container engines put their sockets under the home directory.
    *(".1password", ".colima", ".lima", ".rd", ".orbstack", ".config/containers"),
)
"""Credentials and keys under the home directory: hidden in every sandboxed profile."""
SENSITIVE_SYSTEM = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-")
GIT_PROGRAM_FILES = ("config", "config.worktree", "hooks")
"""In a git dir, what names programs git runs: read-only even for a command `.git` is opened
for (a commit runs the repository's hooks, which may be work-tree files the model wrote)."""
PYTHON_IN_WORKSPACE = (
    "the Python that runs agentcli lies in the workspace (or a sandbox.writable directory), "
    "where a sandboxed command could replace it, and it starts the sandbox"
)
"""The empty temp dirs each command gets (its own, gone when it ends)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxSettings:
    """The user's `[sandbox]` settings (see `agentcli.permissions.setup`)."""

    writable: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()
    deny_read: tuple[Path, ...] = ()
    allow_unix_sockets: tuple[Path, ...] = ()
    network: bool = False
    """Every workspace-write command has the network (`sandbox.network = true`)."""
    env_scrub: tuple[str, ...] = ()
    env_keep: tuple[str, ...] = ()
    agentcli_dirs: tuple[Path, ...] = ()
    """agentcli's own config and data directories: hidden from every command."""
    read_only: tuple[Path, ...] = ()
    """More paths commands may read but never change (the scripts hooks run)."""
    own_install: tuple[Path, ...] = ()
    """agentcli's own installation (`agentcli.own_install`): read-only to every command where
    it lies beneath the workspace or a writable directory."""


def git_dirs(workspace: Path) -> tuple[Path, ...]:
    """The `.git` entry that governs the workspace and the directories git writes through it
    (for a worktree: its `.git` file, its git dir and the common dir)."""
    found = locate(workspace)
    if found is None:
        return ()
    return tuple(dict.fromkeys((found.directory / ".git", found.git_dir, found.common_dir)))


class OsSandbox:
    """Runs commands confined by Landlock, namespaces and seccomp (see the module docstring)."""

    def __init__(self, *, workspace: Path, settings: SandboxSettings | None = None) -> None:
        self.settings = settings or SandboxSettings()
        self.workspace = workspace.resolve()
        self.temp_dir = Path(tempfile.mkdtemp(prefix="agentcli-session-")).resolve()
        # Removed when the sandbox is collected or, at the latest, when the process exits.
        self._cleanup = weakref.finalize(self, shutil.rmtree, self.temp_dir, ignore_errors=True)
        self.writable = _existing_resolved(self.settings.writable)
        # Chosen now, before any command ran: never a file a sandboxed command may replace.
        self.python = helper_python(avoid=(self.workspace, *self.writable))
        self.git = git_dirs(self.workspace)
        self.git_programs = _git_programs(self.git)
        config = self.workspace / ".agentcli"
        # It must exist to be made read-only: otherwise a command could create it with rules.
        with contextlib.suppress(OSError):  # if we cannot create it, neither can a command
            config.mkdir(exist_ok=True)
        self.protected = (
            *self.git,
            config,
            *_submodule_git_files(self.workspace),
            *(path for path in self.settings.read_only if path.exists()),
        )
        roots = (self.workspace, *self.writable)
        # Read-only where a command could otherwise write it: the next start would run it.
        self.own_install = tuple(
            p for p in self.settings.own_install if any(p.is_relative_to(r) for r in roots)
        )
        # A read-only mount cannot be renamed, but a directory above it could be, and a new
        # one made in its place (`mv src src2 && mkdir -p src/agentcli`): the directories
        # between a writable root and the install are bound onto themselves (mount points
        # cannot be renamed), their contents as writable as before. Never one inside the
        # install (a writable mount there would stay writable under the read-only one).
        self.fixed_dirs = tuple(
            dict.fromkeys(
                above
                for p in self.own_install
                for above in reversed(p.parents)
                if any(above != r and above.is_relative_to(r) for r in roots)
                and not any(above.is_relative_to(q) for q in self.own_install)
            )
        )
        # Read-only while they exist, removed if a command created them (`--absent`): bound
        # by path at each command, so one created later (by the user) is protected as well.
        self.program_files = tuple(self.workspace / name for name in PROGRAM_FILE_NAMES)
        home = Path.home()
        self.hidden = _hidden_paths(home, self.settings)
        self.readable = _readable_paths(home, self.settings)
        self.links = _links(home, self.settings)
        # Not a repository when the session started: no command may make it one (a planted
        # .git/config with core.fsmonitor runs when the user's prompt or git reads it).
        self.absent = () if self.git else (self.workspace / ".git",)
        # The helper looks paths up by name. Where a command could move or replace them
        # (beneath the workspace or another writable directory), it checks them against what
        # they are now: a granted path that changed loses its grant (`pins`); a changed
        # protected path, or a renamed directory above a hidden one, stops the command
        # (`guards`). A hidden path is a mount point (it cannot be moved itself): its parents
        # could, leaving what it hid under another name.
        self.pins = _pins([*self.writable, *self.readable, *self.fixed_dirs], under=roots)
        above_hidden = [a for h in self.hidden for a in h.parents if a not in roots]
        self.guards = _pins([*self.protected, *above_hidden, *self.own_install], under=roots)
        self.env = environment.scrubbed(
            os.environ, extra=self.settings.env_scrub, keep=self.settings.env_keep
        )
        self.limits = SandboxLimits(
            workspace=self.workspace,
            temp_dir=self.temp_dir,
            writable=self.writable,
            protected=self.protected,
            own_install=self.own_install,
            program_files=self.program_files,
            network_blocked=not self.settings.network,
            hidden=tuple(p for p in self.hidden if p.exists()),
            visible=self.readable,
            git_programs=tuple(self.git_programs),
        )

    @property
    def block_network(self) -> bool:
        return not self.settings.network

    def prepare(self, argv: list[str], confinement: Confinement) -> PreparedCommand:
        """How to run `argv` confined as `confinement` says."""
        if confinement.profile is Profile.UNCONFINED:
            return PreparedCommand(argv=argv, env=environment.without_own_credentials(os.environ))
        options = ["--tmp", str(self.temp_dir)]
        read_only = [*self.protected, *self.program_files, *self.own_install]
        if confinement.profile is Profile.READ_ONLY:
            reads = [self.workspace, *self.writable, *self.readable]
            writes: list[Path] = [self.temp_dir]
        else:
            reads = [*self.readable, *self._also_readable(confinement.readable)]
            writes = [self.workspace, self.temp_dir, *self.writable, *self.fixed_dirs]
            if confinement.git_write:
                git_writable = [p for p in self.git if p.is_dir()]
                writes += git_writable
                read_only = [p for p in read_only if p not in git_writable]
                read_only += self.git_programs
            if confinement.network or self.settings.network:
                options.append("--network")
        options += _each("--read", [*reads, *_resolver_files()])
        options += _each("--write", writes)
        options += _each("--link", [*self.links, *confinement.readable])
        options += _each("--hide", self.hidden)
        options += _each("--read-only", read_only)
        options += _each("--socket", self.settings.allow_unix_sockets)
        options += _each("--absent", [*self.absent, *self.program_files])
        options += _each("--pin", self.pins)
        options += _each("--guard", self.guards)
        if self.python is None:
            raise OSError(PYTHON_IN_WORKSPACE)
        return PreparedCommand(argv=helper_argv(options, argv, self.python), env=self.env)

    def explain_failure(self, output: str, exit_code: int, confinement: Confinement) -> str | None:
        return explain(output, self.limits, confinement)

    def hides(self, paths: Sequence[Path]) -> list[Path]:
        """Those of `paths` (as written) at or beneath a path hidden from every command (where
        links lead), or that hold one's way there: none of these may be shown."""
        found = []
        for path in paths:
            real = _real(path)
            if any(real == h or real.is_relative_to(h) for h in self.hidden):
                found.append(path)
        return found

    def _also_readable(self, paths: Sequence[Path]) -> list[Path]:
        """The extra paths a confinement asks for, where they lead, less what is hidden or
        already in sight, and never a directory the command's root is made of (`/`, /tmp and
        the other private ones: a check naming /tmp does not get the host's), nor a socket."""
        shown = (self.workspace, self.temp_dir, *self.writable, *self.readable)
        kept: list[Path] = []
        for path in paths:
            real = _real(path)
            if real in NEVER_SHOWN or self.hides([path]) or real in kept or _socket_place(real):
                continue
            if any(real.is_relative_to(s) for s in shown):
                continue
            kept.append(real)
        return kept


NEVER_SHOWN = tuple(
    map(Path, ("/", "/tmp", "/var/tmp", "/run", "/dev/shm", "/proc", "/dev", "/sys"))
)
"""Directories a command never gets the host's of, even when a check names one."""


def _socket_place(path: Path) -> bool:
    """A unix socket, or beneath /run (where sockets live): never shown, even when a check
    names it (below Landlock ABI 9 a socket in sight is connectable)."""
    if any(path.is_relative_to(run) for run in (Path("/run"), Path("/var/run"))):
        return True
    try:
        return stat.S_ISSOCK(path.stat().st_mode)
    except OSError:
        return False


def _real(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path


def _pins(paths: Iterable[Path], *, under: Iterable[Path]) -> list[str]:
    """`DEV:INO:PATH` for each existing path beneath one of `under` (see `exec.check_pins`)."""
    roots = list(under)
    pins: list[str] = []
    for path in dict.fromkeys(paths):
        if not any(path.is_relative_to(root) for root in roots):
            continue
        with contextlib.suppress(OSError):
            found = path.lstat()
            pins.append(f"{found.st_dev}:{found.st_ino}:{path}")
    return pins


def _git_programs(git: Iterable[Path]) -> list[Path]:
    """`GIT_PROGRAM_FILES` of each git dir and of the submodules' git dirs kept in it
    (`modules/…`). A missing `hooks` directory is created, so that it can be made read-only
    (git itself creates it with the repository)."""
    found: list[Path] = []
    pending = [p for p in git if p.is_dir()]
    while pending:
        git_dir = pending.pop()
        with contextlib.suppress(OSError):
            (git_dir / "hooks").mkdir(exist_ok=True)
        found += [git_dir / name for name in GIT_PROGRAM_FILES if (git_dir / name).exists()]
        pending += _module_git_dirs(git_dir / "modules")
    return list(dict.fromkeys(found))


def _submodule_git_files(workspace: Path) -> list[Path]:
    """The `.git` files of the submodules `.gitmodules` lists (`path = …`): git metadata too, a
    redirected one points the user's own git at a git dir a command wrote."""
    try:  # a pipe, a device or a link out is no .gitmodules (`agentcli.safe_read`)
        data = read_bytes(
            workspace / ".gitmodules", inside=Inside.of(workspace), limit=MAX_PROJECT_FILE_BYTES
        )
    except OSError:
        return []
    text = data.decode("utf-8", errors="replace")
    found = []
    for match in re.finditer(r"^\s*path\s*=\s*(.+?)\s*$", text, re.MULTILINE):
        dotgit = workspace / match.group(1).strip('"') / ".git"
        if dotgit.is_file() and dotgit.resolve().is_relative_to(workspace):
            found.append(dotgit)
    return found


def _module_git_dirs(modules: Path) -> list[Path]:
    """The git dirs under a `modules/` directory (a submodule's name may contain slashes),
    without walking into any git dir's objects."""
    found: list[Path] = []
    pending = [modules]
    while pending:
        directory = pending.pop()
        if not directory.is_dir() or directory.is_symlink():
            continue
        if (directory / "HEAD").is_file() and (directory / "objects").is_dir():
            found.append(directory)  # its own modules/ are looked at as a git dir's
            continue
        with contextlib.suppress(OSError):
            pending += [entry for entry in directory.iterdir() if entry.is_dir()]
    return found


def _each(option: str, paths: Iterable[Path | str]) -> list[str]:
    return [word for path in dict.fromkeys(map(str, paths)) for word in (option, path)]


def _existing_resolved(paths: Iterable[Path]) -> tuple[Path, ...]:
    return tuple(p.expanduser().resolve() for p in paths)


def _hidden_paths(home: Path, settings: SandboxSettings) -> tuple[Path, ...]:
    """What every sandboxed command must not see, resolved (a link is hidden where it leads),
    whether it exists now or not."""
    candidates = [
        *(home / name for name in SENSITIVE_HOME),
        *settings.agentcli_dirs,
        *settings.deny_read,
        *map(Path, SENSITIVE_SYSTEM),
        *Path("/etc/ssh").glob("ssh_host_*_key"),
    ]
    hidden: list[Path] = []
    for path in candidates:
        # Also when it does not exist yet: the helper hides what exists when a command runs
        # (a .env written during the session, ~/.aws after `aws configure`).
        resolved = path.expanduser().resolve()
        if resolved not in hidden:
            hidden.append(resolved)
    return tuple(hidden)


def _readable_paths(home: Path, settings: SandboxSettings) -> tuple[Path, ...]:
    """What a command sees beyond the workspace and its writable dirs: system dirs, PATH
    entries (and the tool home above `X/bin`), the running Python, known tool homes,
    `sandbox.readable` (resolved: where links lead; `_links` keeps the way there)."""
    paths = [Path(p) for p in SYSTEM_READABLE]
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if not entry or not os.path.isabs(entry):  # noqa: PTH117 - a string from PATH
            continue  # a relative PATH entry would make the workspace a toolchain
        directory = Path(entry)
        paths.append(directory)
        if directory.name in ("bin", "shims") and directory.parent not in (Path("/"), home):
            if directory.parent != home / ".local":
                paths.append(directory.parent)
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix}:
        paths.append(Path(prefix))
    paths += [home / name for name in HOME_TOOLCHAINS]
    paths += settings.readable
    resolved: list[Path] = []
    for path in paths:
        with contextlib.suppress(OSError):
            real = path.expanduser().resolve()
            if real.exists() and real not in resolved:
                resolved.append(real)
    # A path beneath another one is in the root with it: one bind mount fewer per command.
    return tuple(p for p in resolved if not any(p != o and p.is_relative_to(o) for o in resolved))


def _resolver_files() -> list[Path]:
    """/etc/resolv.conf often links into /run, which commands get empty: keep what it points
    to (the link itself is in /etc)."""
    link = Path("/etc/resolv.conf")
    return [link.resolve()] if link.is_symlink() and link.exists() else []


def _links(home: Path, settings: SandboxSettings) -> tuple[str, ...]:
    """Paths whose links the command's root must copy: the PATH entries and readable paths as
    written (`/run/current-system/sw/bin` on NixOS, a `~/bin` that links elsewhere)."""
    written = [e for e in os.environ.get("PATH", "").split(os.pathsep) if os.path.isabs(e)]  # noqa: PTH117
    written += [str(home / name) for name in HOME_TOOLCHAINS]
    written += [str(p.expanduser()) for p in settings.readable]
    written += [str(Path(p)) for p in {sys.executable, sys.prefix, sys.base_prefix}]
    return tuple(dict.fromkeys(written))
