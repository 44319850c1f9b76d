"""The user's own checks in the sandbox (issue 26, class 9): what a check's command names and
starts is shown to it read-only (`agentcli.check_setup.named_paths`, oracle: the layouts of
real virtualenv tools, written out by hand here); a check that cannot start at all, or names
a hidden path, ends the task as a setup error (exit 2, `config_error`) without a repair round;
one that started in an earlier round and stops starting is the model's to repair."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from agentcli.acceptance import AcceptanceSettings
from agentcli.check_setup import cannot_start, named_paths
from agentcli.confinement import WORKSPACE_WRITE
from agentcli.conversation import ConversationManager
from agentcli.permissions import NonInteractivePrompter, PermissionMode
from agentcli.permissions.basic import ModePolicy
from agentcli.sandbox.runner import OsSandbox, SandboxSettings
from agentcli.store import MemoryJournal
from agentcli.tasks import ExitCode, TaskState
from agentcli.terminal_reason import TerminalReason
from agentcli.testing import ScriptedModel, respond, text, tool_use
from agentcli.tools.base import ToolContext
from tests.sandbox.conftest import requires_landlock
from tests.test_acceptance import Put


def venv(root: Path, *, prog: str = "pytest", base: str = "/usr/bin") -> Path:
    """A virtualenv as `python -m venv` lays it out (pyvenv.cfg, bin/, a console script)."""
    (root / "bin").mkdir(parents=True)
    (root / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    (root / "pyvenv.cfg").write_text(f"home = {base}\ninclude-system-site-packages = false\n")
    (root / "bin" / "python").symlink_to(sys.executable)
    script = root / "bin" / prog
    script.write_text(f"#!{root}/bin/python\nimport sys\nsys.exit(0)\n")
    script.chmod(0o755)
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def named(command: str, workspace: Path, home: Path, **env: str) -> set[Path]:
    environ = {"HOME": str(home), "PATH": "/usr/bin:/bin", **env}
    return set(named_paths(command, cwd=workspace, environ=environ))


@pytest.mark.parametrize(
    "layout",
    [
        ".virtualenvs/proj",  # virtualenvwrapper
        ".cache/pypoetry/virtualenvs/proj-Xb3-py3.11",  # poetry
        ".local/share/virtualenvs/proj-Ab12Cd",  # pipenv
        ".pyenv/versions/3.11.7/envs/proj",  # pyenv-virtualenv
    ],
)
def test_a_virtualenv_program_brings_its_virtualenv(
    workspace: Path, home: Path, layout: str
) -> None:
    root = venv(home / layout)
    found = named(f"~/{layout}/bin/pytest -q tests", workspace, home)
    assert {root / "bin" / "pytest", root} <= found


def test_a_program_found_on_path_brings_its_virtualenv_through_its_shebang(
    workspace: Path, home: Path, tmp_path: Path
) -> None:
    """Found on PATH (`tox`, installed by pipx into a virtualenv, linked from ~/.local/bin):
    its `#!` names that virtualenv's python."""
    root = venv(home / ".local/share/pipx/venvs/tox", prog="tox")
    bin_dir = home / ".local" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "tox").symlink_to(root / "bin" / "tox")
    found = named("tox -e py311", workspace, home, PATH=f"{bin_dir}:/usr/bin")
    assert root in found and bin_dir / "tox" in found


def test_paths_in_options_variables_and_tildes(workspace: Path, home: Path) -> None:
    shared = home / "shared"
    shared.mkdir()
    (shared / "conf.ini").write_text("x")
    (shared / "rules").mkdir()
    found = named(
        "pytest -c ~/shared/conf.ini --rootdir=$SHARED/rules && cat ${SHARED}/conf.ini",
        workspace,
        home,
        SHARED=str(shared),
    )
    assert {shared / "conf.ini", shared / "rules", shared} <= found


def test_what_is_in_the_workspace_missing_or_not_a_path_is_left_out(
    workspace: Path, home: Path
) -> None:
    (workspace / "tests").mkdir()
    found = named(
        "python -m pytest tests ./tests $UNSET/x --flag=value ~/nowhere http://x/y", workspace, home
    )
    assert not any(p.is_relative_to(workspace) for p in found)
    assert not any("nowhere" in str(p) or "UNSET" in str(p) for p in found)


def test_a_named_file_brings_its_directory_but_never_a_broad_one(
    workspace: Path, home: Path, tmp_path: Path
) -> None:
    harness = tmp_path / "harness"
    (harness / "tests").mkdir(parents=True)
    (harness / "run.py").write_text("x")
    (home / "check.sh").write_text("x")
    (tmp_path / "up.sh").write_text("x")
    assert harness in named(f"python3 {harness}/run.py", workspace, home)
    assert home not in named("sh ~/check.sh", workspace, home)
    # One above the workspace: its sibling projects are not the check's.
    assert tmp_path not in named("sh ../../up.sh", workspace / "ws2", home) | named(
        f"sh {tmp_path}/up.sh", workspace, home
    )


@pytest.mark.parametrize(
    ("code", "output", "said"),
    [
        (127, "bash: line 1: /home/u/.venv/bin/pytest: No such file or directory\n", "pytest"),
        (127, "/usr/bin/bash: line 1: pytset: command not found\n", "pytset: command not found"),
        (126, "bash: line 1: ./check.sh: Permission denied\n", "./check.sh: Permission denied"),
        (126, "agentcli sandbox: cannot run x: No such file or directory\n", "x: No such file"),
    ],
)
def test_a_check_that_cannot_start_says_what_was_missing(code: int, output: str, said: str) -> None:
    problem = cannot_start("the check", code, output)
    assert problem is not None and said in problem and "sandbox.readable" in problem


@pytest.mark.parametrize("code", [0, 1, 2, 5, None])
def test_a_check_that_started_is_not_a_setup_error(code: int | None) -> None:
    assert cannot_start("pytest", code, "bash: line 1: x: No such file or directory") is None


# -- the task ---------------------------------------------------------------------------------


def manager(model: ScriptedModel, workspace: Path, *commands: str) -> ConversationManager:
    return ConversationManager(
        model=model,
        tools=[Put()],
        tool_context=ToolContext(
            workspace=workspace,
            data_dir=workspace.parent / "data",
            sandbox=OsSandbox(workspace=workspace, settings=SandboxSettings()),
        ),
        policy=ModePolicy(mode=PermissionMode.AUTO),
        prompter=NonInteractivePrompter(),
        journal=MemoryJournal(),
        system="sys",
        events=lambda _e: None,
        acceptance=AcceptanceSettings(commands=commands, retries=3),
    )


@requires_landlock
async def test_a_user_check_outside_the_workspace_runs(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    root = venv(home / ".virtualenvs" / "proj", base=str(Path(sys.executable).parent))
    (root / "lib" / "python3.11" / "site-packages" / "checklib.py").write_text(
        "import pathlib, sys\nsys.exit(0 if pathlib.Path('a.txt').read_text() == 'ok' else 3)\n"
    )
    (root / "bin" / "check").write_text(f"#!{root}/bin/python\nimport checklib\n")
    (root / "bin" / "check").chmod(0o755)
    monkeypatch.setenv("HOME", str(home))
    model = ScriptedModel(
        [respond(tool_use("put", {"path": "a.txt", "content": "ok"})), respond(text("done"))]
    )
    result = await manager(model, workspace, "~/.virtualenvs/proj/bin/check").run_task("x")
    assert result.state is TaskState.SUCCEEDED, result.acceptance


@requires_landlock
async def test_a_check_that_cannot_start_ends_the_task_as_a_setup_error(
    workspace: Path,
) -> None:
    model = ScriptedModel([respond(text("done"))])  # a repair round would need a 2nd response
    result = await manager(model, workspace, "/nonexistent/venv/bin/pytest -q").run_task("x")
    assert result.reason is TerminalReason.CONFIG_ERROR and result.state is TaskState.FAILED
    assert result.exit_code is ExitCode.USAGE and result.repair_rounds == 0
    assert result.error is not None and "/nonexistent/venv/bin/pytest" in result.error
    assert "sandbox.readable" in result.error and len(model.requests) == 1
    assert result.to_json()["subtype"] == "error_config_error"


@requires_landlock
async def test_a_check_naming_a_hidden_path_is_not_run(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text("aws_secret_access_key = HIDDEN-KEY\n")
    monkeypatch.setenv("HOME", str(home))
    model = ScriptedModel([respond(text("done"))])
    result = await manager(model, workspace, "grep -c HIDDEN ~/.aws/credentials").run_task("x")
    assert result.reason is TerminalReason.CONFIG_ERROR and result.repair_rounds == 0
    assert result.error is not None and ".aws/credentials" in result.error
    assert "HIDDEN-KEY" not in str(result.to_json())
    (check,) = result.acceptance
    assert check.exit_code is None and not check.passed


@requires_landlock
async def test_a_check_the_model_broke_gets_a_repair_round(workspace: Path) -> None:
    """It ran in round 0 (exit 1); the model then broke the script (an interpreter that does
    not exist): that it no longer starts is the model's doing, and the model's to repair."""
    (workspace / "check.sh").write_text("#!/bin/sh\ntest -f done.txt\n")
    (workspace / "check.sh").chmod(0o755)
    model = ScriptedModel(
        [
            respond(text("done")),
            respond(tool_use("put", {"path": "check.sh", "content": "#!/nonexistent/sh\n"})),
            respond(text("done again")),
            respond(tool_use("put", {"path": "check.sh", "content": "#!/bin/sh\ntrue\n"})),
            respond(text("fixed")),
        ]
    )
    result = await manager(model, workspace, "./check.sh").run_task("x")
    codes = [c.exit_code for c in result.acceptance]
    assert codes[0] == 1 and codes[1] in (126, 127) and codes[2] == 0, codes
    assert result.state is TaskState.SUCCEEDED and result.repair_rounds == 2


@requires_landlock
def test_a_check_sees_what_it_names_but_credentials_stay_hidden(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Named `~`: the home directory is shown, read-only, its credentials still hidden."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE-KEY\n")
    (home / "notes.txt").write_text("SHOWN\n")
    monkeypatch.setenv("HOME", str(home))
    box = OsSandbox(workspace=workspace)
    paths = named_paths("ls ~", cwd=workspace, environ={"HOME": str(home), "PATH": "/usr/bin"})
    assert box.hides(list(paths)) == []
    command = f"cat {home}/notes.txt; cat {home}/.ssh/id_rsa; echo x > {home}/written"
    prepared = box.prepare(["bash", "-c", command], WORKSPACE_WRITE.reading(paths))
    done = subprocess.run(
        prepared.argv, cwd=workspace, env=dict(prepared.env), capture_output=True, text=True
    )
    assert "SHOWN" in done.stdout and "PRIVATE-KEY" not in done.stdout, done.stderr
    assert not (home / "written").exists()
    plain = box.prepare(["bash", "-c", f"cat {home}/notes.txt"], WORKSPACE_WRITE)
    unnamed = subprocess.run(plain.argv, cwd=workspace, env=dict(plain.env), capture_output=True)
    assert b"SHOWN" not in unnamed.stdout  # only a check that names it sees it


@requires_landlock
def test_a_check_is_never_shown_a_socket_or_the_private_dirs(
    workspace: Path, tmp_path: Path
) -> None:
    import socket

    place = Path(tempfile.mkdtemp(prefix="sk-", dir="/tmp"))
    try:
        with socket.socket(socket.AF_UNIX) as listener:
            listener.bind(str(place / "s"))
            box = OsSandbox(workspace=workspace)
            asked = (place / "s", Path("/tmp"), Path("/run/user"), Path("/"), place)
            prepared = box.prepare(["true"], WORKSPACE_WRITE.reading(asked))
            reads = [prepared.argv[i + 1] for i, w in enumerate(prepared.argv) if w == "--read"]
            assert str(place) in reads  # a directory named: shown
            assert not {str(place / "s"), "/tmp", "/run/user", "/"} & set(reads)
    finally:
        shutil.rmtree(place, ignore_errors=True)
