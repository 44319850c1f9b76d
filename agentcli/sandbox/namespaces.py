"""Linux namespaces for the sandbox helper: a private user, mount, PID, IPC and (unless the
network is opened) network namespace, and the mounts that shape what a command sees.

`unshare` creates a user namespace mapping the caller's own uid and gid (so a command has no
capability over anything outside, even when agentcli runs as root) with the other namespaces
owned by it. In the new mount namespace the helper builds a root of its own (`fresh_tmpfs`,
`bind` from descriptors opened beforehand, `copy_links`, then `pivot`); `hide` covers a
directory with an empty tmpfs or a file with /dev/null, `bind_read_only` makes a path
read-only, `mount_proc` gives the new PID namespace a /proc of its own. Changes affect only the
helper and what it starts.

Part of the sandbox helper: standard library only, no agentcli imports (see `bootstrap`).
"""

from __future__ import annotations

import _socket
import ctypes
import fcntl
import os
import stat
import struct
from collections.abc import Iterable

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_RELATIME = 1 << 21
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 1
PR_SET_PDEATHSIG = 1
PR_CAPBSET_DROP = 24
CAP_LAST_POSSIBLE = 63
EINVAL = 22
SIGKILL = 9
_IFREQ = "16sh22x"
MNT_DETACH = 2
_PIVOT_ROOT = {"x86_64": 155, "amd64": 155, "aarch64": 41, "arm64": 41}
# statvfs flag → mount flag: a remount must keep the flags that are locked on the mount.
_KEPT_FLAGS = (
    (os.ST_NOSUID, MS_NOSUID),
    (os.ST_NODEV, MS_NODEV),
    (os.ST_NOEXEC, MS_NOEXEC),
    (os.ST_NOATIME, MS_NOATIME),
    (os.ST_NODIRATIME, MS_NODIRATIME),
    (os.ST_RELATIME, MS_RELATIME),
)


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, call: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{call} failed: {os.strerror(errno)}")


def unshare(*, network: bool) -> None:
    """Enter new user, mount, PID and IPC namespaces (and a network one when `network` is
    False). The caller stays in its PID namespace: its next child is the new one's PID 1.
    Raises OSError."""
    flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC
    if not network:
        flags |= CLONE_NEWNET
    uid, gid = os.getuid(), os.getgid()
    _check(_libc().unshare(flags), "unshare")
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{uid} {uid} 1"),
        ("gid_map", f"{gid} {gid} 1"),
    ):
        with open(f"/proc/self/{name}", "w", encoding="ascii") as file:
            file.write(text)


def loopback_up() -> None:
    """Bring `lo` up in a fresh network namespace, so 127.0.0.1 inside it works."""
    # _socket, not socket: the helper cannot afford socket's ~9 ms import.
    sock = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
    try:
        request = struct.pack(_IFREQ, b"lo", 0)
        flags = struct.unpack(_IFREQ, fcntl.ioctl(sock.fileno(), SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock.fileno(), SIOCSIFFLAGS, struct.pack(_IFREQ, b"lo", flags | IFF_UP))
    finally:
        sock.close()


def make_private() -> None:
    """Stop mount events from propagating to or from the parent namespace."""
    _check(_libc().mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount(/, private)")


def hide(path: str) -> None:
    """Cover a directory with an empty tmpfs, or a file with /dev/null; a missing path (or one
    that is neither) is left alone."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return
    encoded = os.fsencode(path)
    libc = _libc()
    if stat.S_ISDIR(mode):
        options = b"mode=0755,size=64m"
        flags = MS_NOSUID | MS_NODEV
        _check(libc.mount(b"tmpfs", encoded, b"tmpfs", flags, options), f"hide {path}")
    elif not stat.S_ISLNK(mode):
        _check(libc.mount(b"/dev/null", encoded, None, MS_BIND, None), f"hide {path}")


def fresh_tmpfs(path: str, mode: str = "0755") -> None:
    """An empty tmpfs at `path` (created if missing)."""
    os.makedirs(path, exist_ok=True)
    options = f"mode={mode},size=50%".encode()
    flags = MS_NOSUID | MS_NODEV
    _check(_libc().mount(b"tmpfs", os.fsencode(path), b"tmpfs", flags, options), f"tmpfs {path}")


def bind(fd: int, target: str) -> None:
    """Bind what `fd` (an O_PATH descriptor) refers to at `target`, creating the mount point
    (a directory, or an empty file) if it is missing."""
    if stat.S_ISDIR(os.fstat(fd).st_mode):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.lexists(target):
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o600))
    source = os.fsencode(f"/proc/self/fd/{fd}")
    flags = MS_BIND | MS_REC
    _check(_libc().mount(source, os.fsencode(target), None, flags, None), f"bind {target}")


def copy_links(path: str, root: str) -> None:
    """Recreate under `root` the symbolic links met on the way to `path` on the host (`/bin`
    to `usr/bin`, a PATH entry through `/run/current-system`), so `path` leads in `root`
    where it leads on the host."""
    parts = [p for p in path.split("/") if p]
    current = ""
    for _ in range(40):  # a bound on link chains, as the kernel's
        if not parts:
            return
        current = f"{current}/{parts.pop(0)}"
        try:
            target = os.readlink(current)
        except OSError:
            continue  # not a link (or gone): the bind mounts provide it
        copy = root + current
        if not os.path.lexists(copy):
            os.makedirs(os.path.dirname(copy), exist_ok=True)
            os.symlink(target, copy)
        resolved = target if target.startswith("/") else f"{os.path.dirname(current)}/{target}"
        parts = [p for p in resolved.split("/") if p] + parts
        current = ""


def pivot(new_root: str) -> None:
    """Make `new_root` (a mount point) this mount namespace's root and drop the old one."""
    old = f"{new_root}/.oldroot"
    os.makedirs(old, exist_ok=True)
    number = _PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise OSError(f"pivot_root: unknown system call number on {os.uname().machine}")
    libc = _libc()
    _check(libc.syscall(number, os.fsencode(new_root), os.fsencode(old)), "pivot_root")
    os.chdir("/")
    _check(libc.umount2(b"/.oldroot", MNT_DETACH), "umount the old root")
    os.rmdir("/.oldroot")


def bind_read_only(paths: Iterable[str]) -> None:
    """Make each existing path read-only in this (private) mount namespace."""
    libc = _libc()
    for path in paths:
        if not os.path.exists(path):
            continue
        encoded = os.fsencode(path)
        _check(libc.mount(encoded, encoded, None, MS_BIND | MS_REC, None), f"bind {path}")
        kept = os.statvfs(path).f_flag
        flags = MS_BIND | MS_REMOUNT | MS_RDONLY
        for statvfs_flag, mount_flag in _KEPT_FLAGS:
            if kept & statvfs_flag:
                flags |= mount_flag
        _check(libc.mount(None, encoded, None, flags, None), f"remount {path} read-only")


def private_terminals(dev: str = "/dev") -> None:
    """A devpts instance of its own at DEV/pts (and its ptmx at DEV/ptmx): the host's shows
    the user's terminals, which a command could open by name, to read what the user types and
    to write escape sequences to the screen. Where no devpts can be mounted, an empty tmpfs
    covers DEV/pts instead (no pseudo-terminals, rather than the host's)."""
    pts, ptmx = f"{dev}/pts", f"{dev}/ptmx"
    if not os.path.isdir(pts):
        return
    libc = _libc()
    options = b"newinstance,ptmxmode=0666,mode=0620"
    if libc.mount(b"devpts", os.fsencode(pts), b"devpts", MS_NOSUID | MS_NOEXEC, options) != 0:
        hide(pts)
        return
    if os.path.exists(ptmx):
        source = os.fsencode(f"{pts}/ptmx")
        _check(libc.mount(source, os.fsencode(ptmx), None, MS_BIND, None), f"bind {ptmx}")


def die_with_parent() -> None:
    """SIGKILL this process when the process that forked it dies (PR_SET_PDEATHSIG)."""
    _check(_libc().prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")


def drop_capabilities() -> None:
    """Empty the capability bounding set, so that nothing this process starts has any
    capability in the sandbox's user namespace. Without it a command run by root keeps them all
    across execve (root's rule), and with CAP_SYS_ADMIN over its own mount namespace it could
    undo the mounts that confine it: `mount_setattr` and `open_tree`, which Landlock does not
    mediate, clear a read-only flag or copy a mount without what hides parts of it. This process
    keeps its own capabilities: a command without them cannot ptrace it."""
    libc = _libc()
    for capability in range(CAP_LAST_POSSIBLE + 1):
        if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            if ctypes.get_errno() == EINVAL:  # past the kernel's last capability
                return
            _check(-1, f"prctl(PR_CAPBSET_DROP, {capability})")


def mount_proc(target: str = "/proc") -> None:
    """A /proc that shows only this PID namespace (call as its PID 1, or a process in it)."""
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    _check(_libc().mount(b"proc", os.fsencode(target), b"proc", flags, None), "mount /proc")
