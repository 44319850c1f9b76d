"""Linux namespaces for the sandbox helper: a private network (loopback only) and read-only
bind mounts over `.git` and `.agentcli`.

As root, `unshare(CLONE_NEWNET | CLONE_NEWNS)` works directly; otherwise a user namespace that
maps the caller's own uid and gid is created with them. Either way the changes only affect the
helper process and what it execs.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct
from collections.abc import Iterable
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
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
_IFREQ = "16sh22x"
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


def unshare(*, network: bool, mounts: bool) -> str:
    """Enter new namespaces; return how ("root" or "user namespace"). Raises OSError."""
    flags = (CLONE_NEWNET if network else 0) | (CLONE_NEWNS if mounts else 0)
    libc = _libc()
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(flags) == 0:
        return "root"
    _check(libc.unshare(flags | CLONE_NEWUSER), "unshare")
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{uid} {uid} 1"),
        ("gid_map", f"{gid} {gid} 1"),
    ):
        Path(f"/proc/self/{name}").write_text(text, encoding="ascii")
    return "user namespace"


def loopback_up() -> None:
    """Bring `lo` up in a fresh network namespace, so 127.0.0.1 inside it works."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack(_IFREQ, b"lo", 0)
        flags = struct.unpack(_IFREQ, fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack(_IFREQ, b"lo", flags | IFF_UP))


def bind_read_only(paths: Iterable[str]) -> None:
    """Make each existing path read-only in this (private) mount namespace."""
    libc = _libc()
    _check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount(/, private)")
    for path in paths:
        if not Path(path).exists():
            continue
        encoded = os.fsencode(path)
        _check(libc.mount(encoded, encoded, None, MS_BIND | MS_REC, None), f"bind {path}")
        kept = os.statvfs(path).f_flag
        flags = MS_BIND | MS_REMOUNT | MS_RDONLY
        for statvfs_flag, mount_flag in _KEPT_FLAGS:
            if kept & statvfs_flag:
                flags |= mount_flag
        _check(libc.mount(None, encoded, None, flags, None), f"remount {path} read-only")
