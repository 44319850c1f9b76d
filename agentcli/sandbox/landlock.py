"""Landlock through ctypes: create a ruleset, add path rules, restrict the calling process.

Writes are always handled: they are allowed only beneath the directories (and on the files)
given write rules. Reads and execution are handled too when a read list is given (the
read-only profile): then a file can be read or run only beneath a read or write rule. On ABI ≥ 6
signals to processes outside the sandbox and abstract unix sockets are scoped. Syscall numbers
444/445/446 are the same on x86_64 and aarch64.

Part of the sandbox helper: standard library only, no agentcli imports (see `bootstrap`).
"""

from __future__ import annotations

import ctypes
import os
import stat
import sys
from collections.abc import Iterable

SYS_CREATE_RULESET = 444
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5
RESOLVE_UNIX = 1 << 16  # ABI 9: connect()/sendmsg() to a pathname unix socket
RESOLVE_UNIX_ABI = 9
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

READ = EXECUTE | READ_FILE | READ_DIR
_WRITE_ABI1 = (
    WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR | MAKE_DIR | MAKE_REG | MAKE_SOCK
) | (MAKE_FIFO | MAKE_BLOCK | MAKE_SYM)
_FILE_ONLY = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
_SUPPORTED_ARCHES = ("x86_64", "amd64", "aarch64", "arm64")


class LandlockError(OSError):
    """Landlock is missing or refused the ruleset."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is unavailable."""
    # os.uname, not the platform module: the helper cannot afford platform's ~9 ms import.
    if sys.platform != "linux" or os.uname().machine.lower() not in _SUPPORTED_ARCHES:
        return 0
    result = _libc().syscall(SYS_CREATE_RULESET, None, 0, CREATE_RULESET_VERSION)
    return max(int(result), 0)


def write_access(abi: int) -> int:
    """Every write-like file access this ABI can restrict."""
    access = _WRITE_ABI1
    if abi >= 2:
        access |= REFER
    if abi >= 3:
        access |= TRUNCATE
    return access


def restrict_self(
    *,
    writable: Iterable[str],
    readable: Iterable[str] | None = None,
    unix_sockets: Iterable[str] = (),
) -> int:
    """Apply the ruleset to this process (and everything it execs); return the ABI used.

    `writable` are directories (everything allowed beneath) and files; `readable`, when given,
    limits reading and executing to beneath those paths and the writable ones (None: reads are
    not restricted). On ABI ≥ 9, connecting to pathname unix sockets is limited to
    `unix_sockets`. Paths that do not exist are skipped. Raises LandlockError.
    """
    abi = abi_version()
    if abi < 1:
        raise LandlockError("the kernel does not support Landlock")
    handled = write_access(abi)
    if readable is not None:
        handled |= READ
    if abi >= RESOLVE_UNIX_ABI:
        handled |= RESOLVE_UNIX
    attr = _RulesetAttr(handled, 0, 0)
    if abi >= 6:
        attr.scoped = SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX_SOCKET
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    libc = _libc()
    ruleset = libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), size, 0)
    if ruleset < 0:
        raise _error("landlock_create_ruleset")
    try:
        for path in writable:
            _add_rule(libc, ruleset, path, handled & ~RESOLVE_UNIX)
        for path in readable or ():
            _add_rule(libc, ruleset, path, handled & READ)
        for path in unix_sockets:
            _add_rule(libc, ruleset, path, handled & (RESOLVE_UNIX | READ))
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise _error("prctl(PR_SET_NO_NEW_PRIVS)")
        if libc.syscall(SYS_RESTRICT_SELF, ruleset, 0) != 0:
            raise _error("landlock_restrict_self")
    finally:
        os.close(ruleset)
    return abi


def _add_rule(libc: ctypes.CDLL, ruleset: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            access &= _FILE_ONLY | RESOLVE_UNIX  # a rule on a file may only carry file rights
        if not access:
            return
        rule = _PathBeneathAttr(access, fd)
        if libc.syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
            raise _error(f"landlock_add_rule({path})")
    finally:
        os.close(fd)


def _error(call: str) -> LandlockError:
    errno = ctypes.get_errno()
    return LandlockError(errno, f"{call} failed: {os.strerror(errno)}")
