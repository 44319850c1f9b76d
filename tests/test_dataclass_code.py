"""Dataclasses compiled through the kept cache (`agentcli.dataclass_code`) are the classes stock
`dataclasses` makes: the oracle is `dataclasses` itself with the builtin `exec`, for every shape
of class the generated methods differ by (frozen, slots, defaults and factories, keyword-only,
ordering, `eq=False`, init-only and class variables, inheritance). A damaged, foreign or missing
file changes nothing but the time it takes."""

from __future__ import annotations

import builtins
import dataclasses
import marshal
import os
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from agentcli import dataclass_code
from agentcli.dataclass_code import FORMAT, CodeCache

METHODS = (
    *("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"),
    *("__lt__", "__le__", "__gt__", "__ge__", "__getstate__", "__setstate__"),
)


def _plain(**options: Any) -> type:
    @dataclasses.dataclass(**options)
    class Plain:
        name: str
        count: int = 0
        tags: list[str] = dataclasses.field(default_factory=list)

    return Plain


def _child() -> type:
    @dataclasses.dataclass(frozen=True)
    class Base:
        name: str
        hidden: str = dataclasses.field(default="h", repr=False, compare=False)

    @dataclasses.dataclass(frozen=True)
    class Child(Base):
        kind: ClassVar[str] = "child"
        size: int = 1
        start: dataclasses.InitVar[int] = 0

        def __post_init__(self, start: int) -> None:
            object.__setattr__(self, "size", self.size + start)

    return Child


def _keyword_only() -> type:
    @dataclasses.dataclass(kw_only=True, slots=True, unsafe_hash=True)
    class KeywordOnly:
        first: int
        second: str = "two"
        _: dataclasses.KW_ONLY
        third: float = 3.0

    return KeywordOnly


SHAPES: dict[str, tuple[Callable[[], type], Callable[[type], list[Any]]]] = {
    "plain": (lambda: _plain(), lambda cls: [cls("a"), cls("a", 2, ["x"])]),
    "frozen": (lambda: _plain(frozen=True), lambda cls: [cls("a"), cls("b", 3)]),
    "ordered": (lambda: _plain(order=True), lambda cls: [cls("a"), cls("b", 1)]),
    "no eq": (lambda: _plain(eq=False, repr=False), lambda cls: [cls("a")]),
    "slots": (lambda: _plain(slots=True, frozen=True), lambda cls: [cls("a", 1)]),
    "inherited": (_child, lambda cls: [cls("a"), cls("a", "x", 2, start=5)]),
    "keyword-only": (_keyword_only, lambda cls: [cls(first=1), cls(first=2, third=4.5)]),
}


@pytest.fixture
def through(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[CodeCache | None], None]]:
    """Make `dataclasses` run its method texts through a cache (None: the builtin `exec`)."""

    def use(cache: CodeCache | None) -> None:
        if cache is None:
            monkeypatch.delattr(dataclasses, "exec", raising=False)
        else:
            monkeypatch.setattr(dataclasses, "exec", cache.exec, raising=False)

    yield use


def _observed(cls: type, make: Callable[[type], list[Any]]) -> dict[str, Any]:
    """What a class does: its generated methods' code and its instances' behaviour."""
    instances = make(cls)
    seen: dict[str, Any] = {
        name: cls.__dict__[name].__code__
        for name in METHODS
        if name in cls.__dict__ and hasattr(cls.__dict__[name], "__code__")
    }
    by_identity = "__repr__" not in cls.__dict__, "__hash__" not in cls.__dict__
    seen["repr"] = "identity" if by_identity[0] else [repr(instance) for instance in instances]
    seen["eq"] = [a == b for a in instances for b in make(cls)]
    seen["hash"] = "identity" if by_identity[1] else [_outcome(_hash(i)) for i in instances]
    seen["order"] = [_outcome(lambda: instances[0] < instances[-1])]
    seen["assign"] = [_outcome(_rename(instance)) for instance in instances]
    seen["fields"] = [f.name for f in dataclasses.fields(cls)]
    seen["match"] = getattr(cls, "__match_args__", None)
    return seen


def _hash(instance: Any) -> Callable[[], object]:
    return lambda: hash(instance)


def _rename(instance: Any) -> Callable[[], object]:
    return lambda: setattr(instance, "name", "z")


def _outcome(action: Callable[[], object]) -> object:
    try:
        return ("value", action())
    except Exception as error:  # the kind of failure is part of the behaviour compared
        return ("raised", type(error).__name__)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_classes_made_through_the_cache_are_stock_dataclasses(
    shape: str, tmp_path: Path, through: Callable[[CodeCache | None], None]
) -> None:
    build, make = SHAPES[shape]
    through(None)
    stock = _observed(build(), make)
    path = tmp_path / "kept.bin"

    cold = CodeCache(path)
    through(cold)
    assert _observed(build(), make) == stock
    assert cold.compiled, "a cold cache compiles each text"
    cold.save()

    warm = CodeCache(path)
    through(warm)
    assert _observed(build(), make) == stock
    assert warm.compiled == {}, "a warm cache compiles nothing it has kept"


def test_the_kept_code_is_what_compiling_the_text_gives(tmp_path: Path) -> None:
    cache = CodeCache(tmp_path / "kept.bin")
    text = "def __create_fn__(cls):\n def __repr__(self):\n  return cls.__name__\n return __repr__"
    namespace: dict[str, Any] = {}
    cache.exec(text, {}, namespace)
    cache.save()
    kept = CodeCache(tmp_path / "kept.bin").kept
    # The oracle compiles as `exec` called from `dataclasses` does: without this module's
    # `from __future__ import annotations` (a flag of the code object, which equality compares).
    assert kept == {text: compile(text, "<string>", "exec", dont_inherit=True)}
    assert kept[text] != compile(text, "<string>", "exec")
    assert namespace["__create_fn__"](int)(1) == "int"


def test_a_text_under_future_annotations_compiles_as_exec_would(tmp_path: Path) -> None:
    """This test module has `from __future__ import annotations`; `exec` called from
    `dataclasses` inherits no such flag, and neither does the cache's compile."""
    cache = CodeCache(None)
    text = "def f(x: undefined_name) -> None:\n pass\n"
    with pytest.raises(NameError):
        cache.exec(text, {}, {})  # the annotation is evaluated: no postponed evaluation


def test_what_is_not_a_text_goes_to_the_builtin_exec() -> None:
    cache = CodeCache(None)
    namespace: dict[str, Any] = {}
    cache.exec(compile("x = 1", "<string>", "exec"), {}, namespace)
    assert namespace == {"x": 1}
    assert cache.compiled == {}


def _header() -> bytes:
    import importlib.util

    return FORMAT + importlib.util.MAGIC_NUMBER


def _framed(payload: bytes) -> bytes:
    """A file as `save` writes one: the header, the payload's CRC-32, the payload."""
    return _header() + zlib.crc32(payload).to_bytes(4, "little") + payload


def _flipped(good: bytes) -> bytes:
    """One byte of the payload changed, the checksum left as it was."""
    data = bytearray(good)
    data[len(data) // 2] ^= 0x40
    return bytes(data)


def _crashing_marshal(good: bytes) -> bytes:
    """A payload (with a right checksum) that marshal fails on with an error it does not
    document (SystemError), found by flipping bytes of a real one."""
    payload = good[len(_header()) + 4 :]
    for index in range(len(payload)):
        for bit in (0x01, 0x10, 0x80):
            data = bytearray(payload)
            data[index] ^= bit
            try:
                marshal.loads(bytes(data))
            except SystemError:
                return _framed(bytes(data))
            except Exception:  # other errors: not the case looked for
                continue
    pytest.skip("no flipped byte makes this Python's marshal raise SystemError")


DAMAGED: dict[str, Callable[[bytes], bytes]] = {
    "empty": lambda good: b"",
    "header only": lambda good: _header(),
    "truncated": lambda good: good[: len(good) // 2],
    "a flipped byte": _flipped,
    "another interpreter": lambda good: FORMAT + b"\x00\x00\r\n" + good[len(_header()) :],
    "another layout": lambda good: b"agentcli dataclass code 0\n" + good[len(FORMAT) :],
    "not a mapping": lambda good: _framed(marshal.dumps(["text", "code"])),
    "keys not texts": lambda good: _framed(marshal.dumps({1: compile("", "", "exec")})),
    "values not code": lambda good: _framed(marshal.dumps({"def f(): pass": "code"})),
    "garbage": lambda good: _framed(os.urandom(4096)),
    "marshal's undocumented error": _crashing_marshal,
}


@pytest.mark.parametrize("damage", sorted(DAMAGED))
def test_a_damaged_file_is_ignored_and_written_anew(
    damage: str, tmp_path: Path, through: Callable[[CodeCache | None], None]
) -> None:
    build, make = SHAPES["frozen"]
    through(None)
    stock = _observed(build(), make)
    path = tmp_path / "kept.bin"
    first = CodeCache(path)
    through(first)
    build()
    first.save()
    path.write_bytes(DAMAGED[damage](path.read_bytes()))

    again = CodeCache(path)
    through(again)
    assert _observed(build(), make) == stock
    assert again.compiled, "nothing usable was read"
    again.save()
    assert set(CodeCache(path).kept) >= set(again.kept) and CodeCache(path).kept


def test_a_change_marshal_would_accept_is_refused_by_the_checksum(
    tmp_path: Path, through: Callable[[CodeCache | None], None]
) -> None:
    """A changed letter in a kept text still unmarshals (into the wrong code for a text):
    only the checksum tells."""
    path = tmp_path / "kept.bin"
    first = CodeCache(path)
    through(first)
    _plain(frozen=True)
    first.save()
    data = path.read_bytes()
    assert data.count(b"__create_fn__") > 1
    path.write_bytes(data.replace(b"__create_fn__", b"__create_fX__", 1))
    assert CodeCache(path).kept == {}


@pytest.mark.parametrize("whose", ["writable by others", "another user's"])
def test_a_file_someone_else_could_have_written_is_not_run(
    whose: str, tmp_path: Path, through: Callable[[CodeCache | None], None]
) -> None:
    path = tmp_path / "kept.bin"
    first = CodeCache(path)
    through(first)
    _plain(frozen=True)
    first.save()
    assert CodeCache(path).kept
    if whose == "writable by others":
        path.chmod(0o666)
    elif os.geteuid() == 0:
        os.chown(path, 54321, 54321)
    else:
        pytest.skip("giving a file another owner needs root")
    assert CodeCache(path).kept == {}


def test_without_globals_the_caller_s_namespace_is_used_as_by_exec() -> None:
    cache = CodeCache(None)
    ours: dict[str, Any] = {}
    theirs: dict[str, Any] = {}
    cache.exec("name = __name__", None, ours)
    exec("name = __name__", None, theirs)
    assert ours == theirs == {"name": __name__}


def test_a_directory_where_the_file_should_be_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "kept.bin").mkdir()
    cache = CodeCache(tmp_path / "kept.bin")
    cache.exec("x = 1", {}, {})
    cache.save()  # no error: nothing kept
    assert (tmp_path / "kept.bin").is_dir()


def test_save_never_creates_the_directory(tmp_path: Path) -> None:
    cache = CodeCache(tmp_path / "missing" / "kept.bin")
    cache.exec("x = 1", {}, {})
    cache.save()
    assert not (tmp_path / "missing").exists()


def test_save_writes_only_what_is_new_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "kept.bin"
    cache = CodeCache(path)
    cache.save()
    assert not path.exists(), "nothing compiled: nothing written"
    cache.exec("x = 1", {}, {})
    cache.save()
    written = path.stat().st_mtime_ns, path.read_bytes()
    cache.save()
    again = CodeCache(path)
    again.exec("x = 1", {}, {})
    again.save()
    assert (path.stat().st_mtime_ns, path.read_bytes()) == written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.bin"]


def test_two_processes_keep_the_union_of_what_they_compiled(tmp_path: Path) -> None:
    path = tmp_path / "kept.bin"
    CodeCache(path).save()
    first = CodeCache(path)
    first.exec("a = 1", {}, {})
    first.save()
    second = CodeCache(path)
    second.exec("b = 2", {}, {})
    second.save()
    assert set(CodeCache(path).kept) == {"a = 1", "b = 2"}


def test_a_full_file_starts_over_with_what_this_process_compiled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dataclass_code, "MAX_KEPT", 3)
    path = tmp_path / "kept.bin"
    old = CodeCache(path)
    for index in range(3):
        old.exec(f"old = {index}", {}, {})
    old.save()
    new = CodeCache(path)
    new.exec("new = 1", {}, {})
    new.save()
    assert set(CodeCache(path).kept) == {"new = 1"}


def test_install_routes_dataclasses_through_one_cache_per_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Recorded as it is (absent or not) and taken away: whatever `install` sets is undone.
    monkeypatch.setattr(dataclasses, "exec", builtins.exec, raising=False)
    monkeypatch.delattr(dataclasses, "exec")
    monkeypatch.setattr(dataclass_code, "cache_path", lambda: tmp_path / "kept.bin")
    saved: list[Callable[[], None]] = []
    monkeypatch.setattr("atexit.register", saved.append)
    cache = dataclass_code.install()
    assert cache is not None
    assert dataclass_code.install() is cache
    assert saved == [cache.save]
    _plain(frozen=True)
    assert cache.compiled


def test_install_does_nothing_where_python_keeps_no_byte_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dataclasses, "exec", builtins.exec, raising=False)
    monkeypatch.delattr(dataclasses, "exec")
    monkeypatch.setattr(sys.implementation, "cache_tag", None)
    assert dataclass_code.cache_path() is None
    assert dataclass_code.install() is None
    assert not hasattr(dataclasses, "exec")


def test_the_file_lies_beside_agentcli_s_byte_code() -> None:
    import importlib.util

    import agentcli

    path = dataclass_code.cache_path()
    assert path is not None and agentcli.__file__ is not None
    beside = importlib.util.cache_from_source(agentcli.__file__)
    assert os.path.dirname(path) == os.path.dirname(beside)
    assert sys.implementation.cache_tag in os.path.basename(path)


@pytest.mark.parametrize("prefix", [False, True], ids=["beside the sources", "cache prefix"])
def test_the_file_is_out_of_a_sandboxed_command_s_reach(
    prefix: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Code agentcli runs at its next start: it lies within agentcli's own installation, which
    the sandbox keeps read-only to every command (tests/sandbox/test_started_files.py), also
    when PYTHONPYCACHEPREFIX moves byte-code out of the package."""
    from agentcli.own_install import own_install_paths

    if prefix:
        monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "bytecode"))
        (tmp_path / "bytecode").mkdir()
    path = dataclass_code.cache_path()
    assert path is not None
    assert tmp_path in Path(path).parents if prefix else tmp_path not in Path(path).parents
    assert any(Path(path).is_relative_to(own) for own in own_install_paths())


def test_the_installed_command_keeps_its_classes_and_reads_them_back(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process contract: `agentcli` installs the cache before its first class, saves it
    when it exits (which skips the interpreter's teardown), and the next start compiles
    nothing new: the file is not written again."""
    command = Path(sys.executable).with_name("agentcli")
    assert command.is_file(), "the test install has no agentcli command"
    prefix = workspace.parent / "bytecode"
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(prefix)}
    monkeypatch.setattr(sys, "pycache_prefix", str(prefix))  # where the command will look
    path = dataclass_code.cache_path()
    assert path is not None and prefix in path.parents
    path.parent.mkdir(parents=True)  # as Python makes it when it writes byte-code there

    def sessions() -> str:
        done = subprocess.run(
            [str(command), "sessions", "list"],
            env=env,
            cwd=workspace,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return done.stdout

    first = sessions()
    kept = CodeCache(path).kept
    assert len(kept) > 100, "agentcli, typer and pydantic define hundreds of dataclasses"
    written = path.stat().st_mtime_ns
    assert sessions() == first
    assert path.stat().st_mtime_ns == written


def test_a_fifo_or_an_oversized_file_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Never blocks on a pipe someone left in its place, never reads without bound."""
    fifo = tmp_path / "fifo.bin"
    os.mkfifo(fifo)
    assert CodeCache(fifo).kept == {}
    path = tmp_path / "kept.bin"
    cache = CodeCache(path)
    cache.exec("x = 1", {}, {})
    cache.save()
    monkeypatch.setattr(dataclass_code, "MAX_FILE_BYTES", path.stat().st_size - 1)
    assert CodeCache(path).kept == {}
