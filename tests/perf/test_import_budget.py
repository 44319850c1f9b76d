"""Start-up budget, enforced by what gets imported rather than by timing (SPEC §10).

`import anthropic` alone costs ~2 s. The shell parser (tree-sitter and its bash grammar,
native libraries) is cheap: ~1 ms on top of what agentcli imports anyway (~8 ms in a bare
interpreter), against ~70 ms for bashlex, which it replaced. It is still loaded only where a
command is classified: a native library has no business in `--version`. Each command below runs
in a fresh interpreter, and the test names every heavy module it loaded that it has no use for
("git" stands for GitPython, which only `agentcli batch` uses, as does Ray).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

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


def loaded_by(args: list[str], cwd: Path) -> tuple[int, set[str]]:
    """Run `agentcli ARGS` in a fresh interpreter: its exit code and every module it loaded."""
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
    return report["code"], {name.partition(".")[0] for name in report["modules"]}


def test_version_loads_no_third_party_package(workspace: Path) -> None:
    code, modules = loaded_by(["--version"], workspace)
    assert code == 0
    heavy = {"typer", "pydantic", "rich", "sqlite3", "asyncio", *NEVER_WITHOUT_A_MODEL}
    assert modules & heavy == set()


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
