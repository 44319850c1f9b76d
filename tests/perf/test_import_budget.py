"""Start-up budget, enforced by what gets imported rather than by timing (SPEC §10).

`import anthropic` alone costs ~2 s. The shell parser (tree-sitter and its bash grammar,
native libraries) is cheap: ~1 ms on top of what agentcli imports anyway (~8 ms in a bare
interpreter), against ~70 ms for bashlex, which it replaced. It is still loaded only where a
command is classified: a native library has no business in `--version`. Each command below runs
in a fresh interpreter, and the test names every heavy module it loaded that it has no use for
("git" stands for GitPython, which only `run --branch/--commit`, `/commit`, `/branch` and
`agentcli batch` load: its import costs 0.2-0.4 s, `git version` included; batch's Ray too).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import agentcli
from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text

NEVER_WITHOUT_A_MODEL = (
    *("anthropic", "httpx2", "tree_sitter", "tree_sitter_bash", "prompt_toolkit"),
    *("mcp", "mcp_types"),
)
"""No command that needs no model loads these: the SDK, the shell parser, the REPL's UI, the
MCP SDK (no MCP server is configured in these tests)."""

PROBE = """
import contextlib, io, json, sys
from agentcli.ui.entry import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main(json.loads(sys.argv[1]))
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


RUN_MODULES_CEILING = 640
"""Modules a whole `agentcli run hi` loads (the interpreter's own included): 622 when this was
set (issue 35; 689 before: YAML, tomlkit, pathspec, GitPython's wrapper and rich left the
path, and pydantic stopped scanning every distribution for plugins). A new import on the path
to the first request costs every run: raise this only for one the request needs. Its time is
measured in `bench/bench_startup.py` (timing bounds live there, never in a test)."""


def loaded_by(args: list[str], cwd: Path) -> tuple[int, set[str]]:
    """Run `agentcli ARGS` in a fresh interpreter: its exit code and every module it loaded."""
    code, modules = every_module_loaded_by(args, cwd)
    return code, {name.partition(".")[0] for name in modules}


def every_module_loaded_by(args: list[str], cwd: Path) -> tuple[int, list[str]]:
    """Run `agentcli ARGS` in a fresh interpreter: its exit code and the full name of every
    module it loaded."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=True,
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return report["code"], list(report["modules"])


def test_version_loads_no_third_party_package(workspace: Path) -> None:
    code, modules = loaded_by(["--version"], workspace)
    assert code == 0
    heavy = {"typer", "pydantic", "rich", "sqlite3", "asyncio", *NEVER_WITHOUT_A_MODEL}
    assert modules & heavy == set()


def test_the_installed_command_answers_version_with_agentcli_alone(workspace: Path) -> None:
    """The `agentcli` command as installed (`scripts/agentcli`), not the entry point in-process:
    beyond what a bare interpreter imports (the oracle: `python -c pass` under the same
    variable) and the interpreter's built-in modules, `--version` imports agentcli's own entry
    modules and nothing else (pip's generated wrapper imported `re`, ~9 ms)."""
    command = Path(sys.executable).with_name("agentcli")
    assert command.is_file(), "the test install has no agentcli command"
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}

    def imported(argv: list[str]) -> tuple[str, set[str]]:
        done = subprocess.run(
            argv, capture_output=True, text=True, env=env, cwd=workspace, timeout=60, check=True
        )
        names = {line.split("|")[-1].strip() for line in done.stderr.splitlines()[1:]}
        return done.stdout, names

    bare = imported([sys.executable, "-c", "pass"])[1]
    out, names = imported([str(command), "--version"])
    assert out == f"agentcli {agentcli.__version__}\n"
    built_in = set(sys.builtin_module_names)  # compiled into the interpreter: no file to load
    assert names - bare - built_in == {"agentcli", "agentcli.ui", "agentcli.ui.entry"}


@pytest.mark.parametrize(
    ("args", "code", "also_never"),
    [
        (["--help"], 0, ("git", "rich", "pydantic", "sqlite3")),
        (["run", "--help"], 0, ("git", "rich", "sqlite3")),
        (["undo", "--help"], 0, ("git", "rich", "sqlite3")),
        (["batch", "--help"], 0, ("git", "ray", "rich", "sqlite3")),
        # typer parses them (and builds a pydantic adapter per option: bench_startup keeps
        # their wall time against the 0.4 s target); nothing else heavy.
        (["sessions", "list"], 0, ("git", "rich")),
        (["doctor"], 1, ("git", "rich", "asyncio")),  # 1: no API key here
        (["undo"], 1, ("rich",)),  # nothing to undo in a fresh workspace
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else None,
)
def test_commands_without_a_model_never_load_the_sdk(
    args: list[str], code: int, also_never: tuple[str, ...], workspace: Path
) -> None:
    exit_code, modules = loaded_by(args, workspace)
    assert exit_code == code
    assert modules & {*NEVER_WITHOUT_A_MODEL, *also_never} == set()


def test_run_loads_the_sdk_parser_and_git_only_when_it_needs_them(workspace: Path) -> None:
    """Loading the `run` command must leave the SDK to `make_model` and the shell parser to the
    first shell command."""
    probe = "import json, sys, agentcli.ui.run; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    modules = {name.partition(".")[0] for name in json.loads(done.stdout)}
    assert modules & {*NEVER_WITHOUT_A_MODEL, "git", "rich"} == set()
    assert "agentcli" in modules


def test_a_usage_error_in_run_comes_before_the_sdk(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run` reports a missing key without paying for the SDK import (~2 s)."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    # No API key: a usage error (exit 2) after everything but the SDK import and the request.
    code, modules = loaded_by(["run", "hi", "--max-turns", "3", "-q"], workspace)
    assert code == 2
    assert "agentcli" in modules
    assert modules & {"anthropic", "httpx2", "prompt_toolkit", "tree_sitter"} == set()


def test_root_options_are_checked_before_the_sdk(workspace: Path) -> None:
    """`agentcli -C missing --permission-mode auto` (stdin not a terminal, so a run): a usage
    error before the SDK is loaded."""
    code, modules = loaded_by(
        ["-C", str(workspace / "missing"), "--permission-mode", "auto"], workspace
    )
    assert code == 2  # the workspace is not a directory: a usage error before the terminal
    assert "agentcli" in modules
    assert modules & {"anthropic", "httpx2"} == set()


@pytest.mark.parametrize(
    ("transport", "client_library"), [(None, "httpx2"), ("sdk", "anthropic")], ids=["http", "sdk"]
)
def test_run_sends_its_request_without_the_sdk_unless_asked_to(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, transport: str | None, client_library: str
) -> None:
    """A whole `run` (in a git repository, whose snapshots it takes) against the fake API: by
    default (the thin transport) it never loads the SDK (~2 s) or GitPython; `AGENTCLI_TRANSPORT
    = sdk` does load the SDK, so this would see it if the default did."""
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    (workspace / "a.txt").write_text("a\n")
    with FakeMessagesServer() as server:
        server.push(stream_message([text("done")]))
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        if transport is not None:
            monkeypatch.setenv("AGENTCLI_TRANSPORT", transport)
        code, modules = loaded_by(["run", "hi", "-q"], workspace)
    assert code == 0
    assert len(server.requests) == 1
    assert client_library in modules
    assert "git" not in modules
    if transport is None:
        assert "anthropic" not in modules


def test_a_run_loads_no_more_modules_than_its_ceiling(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole of a one-turn `run` (its answer printed, no terminal): nothing on the path
    that only some runs use (YAML for definitions' frontmatter, tomlkit for saving a rule,
    pathspec for a .gitignore, GitPython, rich where no style shows, the MCP SDK)."""
    with FakeMessagesServer() as server:
        server.push(stream_message([text("done")]))
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        code, modules = every_module_loaded_by(["run", "hi"], workspace)
    assert code == 0
    assert len(server.requests) == 1
    tops = {name.partition(".")[0] for name in modules}
    assert tops & {"yaml", "tomlkit", "pathspec", "git", "rich", "mcp", "anthropic"} == set()
    assert "agentcli.usergit.commit" not in modules
    assert len(modules) <= RUN_MODULES_CEILING, f"{len(modules)} modules"


def test_run_loads_gitpython_only_for_branch_or_commit(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other side of the test above (a run without `--branch`/`--commit` never loads
    GitPython): with `--branch` it does, so that test would see it if a plain run did."""
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    with FakeMessagesServer() as server:
        server.push(stream_message([text("done")]))
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        code, modules = loaded_by(["run", "hi", "-q", "--branch", "topic"], workspace)
    assert code == 0
    assert "git" in modules
