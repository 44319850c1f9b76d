"""agentcli opens a file it did not write in one way only (`agentcli.safe_read`; issue 26), read
from the source: no module reads or opens a file directly (`path.read_text()`,
`path.read_bytes()`, `path.open(...)`, `open(...)`, `io.open`, `os.open`, `shutil.copy*`)
except where `ALLOWED` says why that is agentcli's own file, or the kernel's, or the writer's.

A new direct read anywhere else fails here: route it through `safe_read` (a regular file,
never a pipe or a device, inside the workspace after links, bounded), or, if the file really is
agentcli's own, add the function to `ALLOWED` with the reason.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from tests.structure.test_layering import _modules, parsed

ANY = "*"
ALLOWED: dict[str, dict[str, str]] = {
    "agentcli.safe_read": {ANY: "the one way agentcli opens a file it did not write"},
    "agentcli.safe_write": {ANY: "the one way agentcli writes a workspace file: pinned parents"},
    "agentcli.private": {"open_private": "creates agentcli's own private files (0600)"},
    "agentcli.store.lock": {"SessionLock.acquire": "a session's lock file in the data dir"},
    "agentcli.store.db": {
        "_create": "the journal it is building (private, not yet linked), to fsync"
    },
    "agentcli.permissions.persist": {
        "append_allow_rule": "opens the config's directory (O_DIRECTORY) to lock it",
    },
    "agentcli.owngit.index": {
        "_read_state": "its own state file in agentcli's private git dir",
        "_locked": "its own lock file in agentcli's private git dir",
        "_seed": "copies the repository's index (git metadata, checked `is_file()`) into "
        "agentcli's private git dir; copied by the kernel, never read into memory",
        "fresh_tree": "the same copy, into a throw-away directory",
    },
    "agentcli.owngit.repo": {
        "_write_if_changed": "agentcli's own files in its private git dir",
        "_sync_file": "the private copy it keeps (the repository's file goes through safe_read)",
    },
    "agentcli.usergit.repository": {
        "UserRepo.index_locked": "creates the repository's `index.lock` (git's own lock "
        "protocol, O_EXCL), never reads it",
    },
    "agentcli.usergit.commit": {
        "_seed": "copies the repository's index (git metadata, checked `is_file()`) for a "
        "temporary index in its git dir; copied by the kernel, never read into memory",
        "_update_index": "the same copy, which becomes the new index once its entries for "
        "the committed files are updated",
    },
    "agentcli.sandbox.bootstrap": {
        "helper_program": "agentcli's own source, for the helper",
        "helper_sources": "the same source, hashed for the probe cache's key",
    },
    "agentcli.sandbox.exec": {"shape_mounts": "O_PATH handles for bind mounts, never read"},
    "agentcli.tools.input_schema": {"_kept": "its own schema cache in the data dir"},
    "agentcli.dataclass_code": {
        "CodeCache.save": "creates its own cache file (O_EXCL) beside agentcli's byte-code, "
        "renamed over the old one",
    },
    "agentcli.sandbox.landlock": {"_add_rule": "an O_PATH handle for a Landlock rule"},
    "agentcli.sandbox.namespaces": {
        "unshare": "writes /proc/self/{uid,gid}_map and setgroups: the kernel's",
        "bind": "creates a mount point in the sandbox's own root",
    },
    "agentcli.sandbox.support": {
        "_cache_path": "the kernel's boot id (/proc/sys/kernel/random/boot_id)",
        "_read_cache": "its own probe cache in the data dir",
    },
    "agentcli.batch.output": {
        "read_jsonl": "the batch's own results in its output directory",
        "BatchOutput.record": "appends to the batch's own result files",
        "BatchOutput.finish": "the batch's own patch files",
    },
    "agentcli.batch.plan": {
        "_latest_batch_of": "the manifest a batch wrote in its own output directory",
        "_check_manifest": "the same manifest",
        "write_manifest": "the same manifest",
    },
    "agentcli.batch.runner": {"_Run.run_child": "the task's own log file (the child's stderr)"},
    "agentcli.batch.setup": {"_run_all": "the task's own setup log"},
    "agentcli.batch.workspace": {
        "_locked": "a lock file in the batch's own repos directory",
        "model_patch": "copies the task worktree's git index into a temporary index (git "
        "metadata, copied by the kernel, never read into memory)",
    },
    "agentcli.jsonstore": {
        "read_json": "agentcli's own JSON stores (approvals) in its data dir",
        "store_lock": "their lock files, beside them",
    },
    "agentcli.tools.process_group": {"group_alive": "/proc/<pid>/stat: the kernel's"},
    "agentcli.mcp.groups": {"_children": "/proc/<pid>/task/*/children: the kernel's"},
}


@dataclass(frozen=True, slots=True)
class DirectRead:
    module: str
    function: str
    """The enclosing function's qualified name (`Class.method`), `<module>` at top level."""
    call: str
    line: int

    def __str__(self) -> str:
        return f"{self.module}:{self.line} {self.function}: {self.call}"


def direct_reads(module: str, tree: ast.AST) -> list[DirectRead]:
    """Every call in `tree` that opens or reads a file by path."""
    found: list[DirectRead] = []
    scope: list[str] = []

    class Visitor(ast.NodeVisitor):
        def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
            scope.append(node.name)
            self.generic_visit(node)
            scope.pop()

        visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

        def visit_ClassDef(self, node: ast.ClassDef) -> None:
            scope.append(node.name)
            self.generic_visit(node)
            scope.pop()

        def visit_Call(self, node: ast.Call) -> None:
            call = _file_call(node)
            if call is not None:
                where = ".".join(scope) or "<module>"
                found.append(DirectRead(module, where, call, node.lineno))
            self.generic_visit(node)

    Visitor().visit(tree)
    return found


def _file_call(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return "open()" if func.id == "open" else None
    if not isinstance(func, ast.Attribute):
        return None
    base = func.value.id if isinstance(func.value, ast.Name) else None
    if func.attr in ("read_text", "read_bytes"):
        return f".{func.attr}()"
    if func.attr == "open" and base in ("os", "io"):
        return f"{base}.open()"
    if base == "shutil" and func.attr.startswith("copy"):
        return f"shutil.{func.attr}()"
    # `path.open()` / `path.open("rb")`, not a method of the same name (`Journal.open(id)`).
    first = node.args[0] if node.args else None
    if func.attr == "open" and (first is None or _is_str(first)):
        return ".open()"
    return None


def _is_str(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _allowed(read: DirectRead) -> bool:
    allowed = ALLOWED.get(read.module, {})
    return ANY in allowed or read.function in allowed


def _all_reads() -> list[DirectRead]:
    return [
        read
        for name, path in sorted(_modules().items())
        if name.startswith("agentcli.") and not name.startswith("agentcli.testing")
        for read in direct_reads(name, parsed(path))
    ]


def test_the_detector_finds_every_kind_of_direct_read() -> None:
    source = """
def f(path, ws):
    open(path).read()
    path.read_text()
    (ws / "AGENTS.md").read_bytes()
    with path.open("rb") as h: pass
    path.open()
    io.open(path)
    os.open(path, os.O_RDONLY)
    shutil.copyfile(path, "x")
    Journal.open(session_id, conn=c)  # a method of the same name: not a file
class C:
    def m(self):
        self.path.read_text()
"""
    found = direct_reads("m", ast.parse(source))
    assert [str(r) for r in found] == [
        "m:3 f: open()",
        "m:4 f: .read_text()",
        "m:5 f: .read_bytes()",
        "m:6 f: .open()",
        "m:7 f: .open()",
        "m:8 f: io.open()",
        "m:9 f: os.open()",
        "m:10 f: shutil.copyfile()",
        "m:14 C.m: .read_text()",
    ]


def test_no_module_reads_a_file_directly_outside_the_allowed_places() -> None:
    offending = [str(read) for read in _all_reads() if not _allowed(read)]
    assert offending == [], (
        "direct file reads outside agentcli.safe_read (use safe_read.read_bytes / opened, or, "
        "for a file that is agentcli's own, add the function to ALLOWED with the reason):\n"
        + "\n".join(offending)
    )


def test_every_allowed_place_still_reads_something() -> None:
    # An entry left behind after its read moved would allow a new one there silently.
    reads = _all_reads()
    stale = [
        f"{module}: {function}"
        for module, functions in ALLOWED.items()
        for function in functions
        if not any(
            r.module == module and (function == ANY or r.function == function) for r in reads
        )
    ]
    assert stale == []
