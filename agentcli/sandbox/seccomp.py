"""A seccomp filter for sandboxed commands, built with libseccomp (through ctypes) once, in
agentcli (`compiled`), and installed by the helper as the raw BPF program libseccomp exported
(`install`), so no command pays for loading libseccomp and building the filter.

Namespaces do not cover everything: a vsock socket reaches the hypervisor host from any network
namespace, io_uring can open sockets without the socket() call, and the kernel keyrings are not
per-namespace. The filter allows every system call except:
- `socket`/`socketpair` of any family other than unix, IPv4, IPv6 and netlink (those four are
  confined by the namespaces and Landlock): EAFNOSUPPORT;
- `io_uring_setup`/`io_uring_enter`/`io_uring_register`, `keyctl`/`add_key`/`request_key`:
  EPERM.
System calls of another architecture (e.g. the 32-bit ABI on x86_64) kill the process, which
libseccomp does for any architecture not added to the filter.

Part of the sandbox helper: standard library only, no agentcli imports (see `bootstrap`).
"""

from __future__ import annotations

import ctypes
import os

PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
ACT_ALLOW = 0x7FFF0000
ACT_ERRNO = 0x00050000
CMP_EQ = 4
CMP_GT = 6
EPERM = 1
EAFNOSUPPORT = 97
ALLOWED_FAMILIES = frozenset({1, 2, 10, 16})  # AF_UNIX, AF_INET, AF_INET6, AF_NETLINK
_HIGHEST_LISTED = max(ALLOWED_FAMILIES)
DENIED_CALLS = (
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "keyctl",
    "add_key",
    "request_key",
)


class SeccompError(OSError):
    """libseccomp is missing or refused the filter."""


class _ArgCmp(ctypes.Structure):
    _fields_ = (
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    )


def _library() -> ctypes.CDLL:
    try:  # by soname: ctypes.util.find_library would cost the helper ~10 ms of imports
        lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    except OSError as exc:
        raise SeccompError(f"libseccomp is not installed ({exc})") from exc
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = (ctypes.c_uint32,)
    lib.seccomp_rule_add_array.argtypes = (
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCmp),
    )
    lib.seccomp_syscall_resolve_name.argtypes = (ctypes.c_char_p,)
    lib.seccomp_export_bpf.argtypes = (ctypes.c_void_p, ctypes.c_int)
    lib.seccomp_release.argtypes = (ctypes.c_void_p,)
    return lib


def available() -> bool:
    try:
        compiled_once()
    except SeccompError:
        return False
    return True


_COMPILED: list[bytes] = []


def compiled_once() -> bytes:
    """`compiled`, built once per process."""
    if not _COMPILED:
        _COMPILED.append(compiled())
    return _COMPILED[0]


def compiled() -> bytes:
    """The filter as a BPF program (struct sock_filter[]), exported by libseccomp for this
    architecture. Raises SeccompError."""
    lib = _library()
    ctx = lib.seccomp_init(ACT_ALLOW)
    if not ctx:
        raise SeccompError("seccomp_init failed")
    try:
        for name in ("socket", "socketpair"):
            number = _resolve(lib, name)
            denied = [v for v in range(_HIGHEST_LISTED) if v not in ALLOWED_FAMILIES]
            for family in denied:
                _add(lib, ctx, ACT_ERRNO | EAFNOSUPPORT, number, _ArgCmp(0, CMP_EQ, family, 0))
            _add(lib, ctx, ACT_ERRNO | EAFNOSUPPORT, number, _ArgCmp(0, CMP_GT, _HIGHEST_LISTED, 0))
        for name in DENIED_CALLS:
            number = lib.seccomp_syscall_resolve_name(name.encode())
            if number >= 0:  # a call this architecture does not have needs no rule
                _add(lib, ctx, ACT_ERRNO | EPERM, number, None)
        reader, writer = os.pipe()
        try:
            result = lib.seccomp_export_bpf(ctx, writer)
            os.close(writer)
            writer = -1
            if result != 0:
                raise SeccompError(-result, f"seccomp_export_bpf failed: error {-result}")
            program = b""
            while chunk := os.read(reader, 65536):
                program += chunk
        finally:
            os.close(reader)
            if writer >= 0:
                os.close(writer)
    finally:
        lib.seccomp_release(ctx)
    if not program or len(program) % 8:
        raise SeccompError("libseccomp exported no usable filter")
    return program


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def install(program: bytes) -> None:
    """Load a `compiled` filter into this process (inherited by everything it starts). Needs
    no_new_privs (Landlock's restrict_self sets it first). Raises SeccompError."""
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        errno = ctypes.get_errno()
        raise SeccompError(errno, f"prctl(PR_SET_SECCOMP) failed: {os.strerror(errno)}")


def _resolve(lib: ctypes.CDLL, name: str) -> int:
    number = int(lib.seccomp_syscall_resolve_name(name.encode()))
    if number < 0:
        raise SeccompError(f"libseccomp does not know the system call {name}")
    return number


def _add(lib: ctypes.CDLL, ctx: int, action: int, number: int, comparison: _ArgCmp | None) -> None:
    if comparison is None:
        result = lib.seccomp_rule_add_array(ctx, action, number, 0, None)
    else:
        result = lib.seccomp_rule_add_array(ctx, action, number, 1, ctypes.byref(comparison))
    if result != 0:
        raise SeccompError(-result, f"seccomp_rule_add failed: error {-result}")
