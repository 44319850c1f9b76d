"""Landlock through ctypes: create a ruleset, add path rules, restrict the calling process.

Only write-like file accesses are handled, so reading and executing stay allowed everywhere;
writes are allowed only beneath the directories (and on the files) given rules. On ABI ≥ 4
TCP bind and connect can be handled too (with no rule, both are denied), and on ABI ≥ 6
signals to processes outside the sandbox and abstract unix sockets are scoped.
Syscall numbers 444/445/446 are the same on x86_64 and aarch64.
"""

from __future__ import annotations

import ctypes
import os
import platform
import stat
from collections.abc import Iterable

SYS_CREATE_RULESET = 444
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

WRITE_FILE = 1 << 1
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
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

_WRITE_ABI1 = (
    WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR | MAKE_DIR | MAKE_REG | MAKE_SOCK
) | (MAKE_FIFO | MAKE_BLOCK | MAKE_SYM)
_FILE_ONLY = WRITE_FILE | TRUNCATE
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
    if platform.system() != "Linux" or platform.machine().lower() not in _SUPPORTED_ARCHES:
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


def restrict_self(*, writable: Iterable[str], block_tcp: bool) -> int:
    """Apply the ruleset to this process (and everything it execs); return the ABI used.

    `writable` are directories (writable beneath) and files (writable themselves); paths that
    do not exist are skipped. Raises LandlockError when the kernel cannot do it or
    when `block_tcp` is asked of an ABI without network rules.
    """
    abi = abi_version()
    if abi < 1:
        raise LandlockError("the kernel does not support Landlock")
    if block_tcp and abi < 4:
        raise LandlockError(f"Landlock ABI {abi} has no network rules (4 needed)")
    handled = write_access(abi)
    attr = _RulesetAttr(handled, (NET_BIND_TCP | NET_CONNECT_TCP) if block_tcp else 0, 0)
    if abi >= 6:
        attr.scoped = SCOPE_SIGNAL | (SCOPE_ABSTRACT_UNIX_SOCKET if block_tcp else 0)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    libc = _libc()
    ruleset = libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), size, 0)
    if ruleset < 0:
        raise _error("landlock_create_ruleset")
    try:
        for path in writable:
            _add_rule(libc, ruleset, path, handled)
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
    except FileNotFoundError:
        return
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            access &= _FILE_ONLY  # a rule on a file may only carry file rights
        rule = _PathBeneathAttr(access, fd)
        if libc.syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
            raise _error(f"landlock_add_rule({path})")
    finally:
        os.close(fd)


def _error(call: str) -> LandlockError:
    errno = ctypes.get_errno()
    return LandlockError(errno, f"{call} failed: {os.strerror(errno)}")
