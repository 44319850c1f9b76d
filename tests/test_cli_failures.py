"""Every way `agentcli run` can fail to start ends the same way (SPEC §7): in json mode exactly one
JSON object on stdout (the result object, with the failure's subtype as `terminal_reason` and
its message as `error`), in stream-json mode a result event as the last line, one line on
stderr in every mode, the README's exit code, and no traceback.

The real binary for what the issue found broken (stdin that is not UTF-8, a data directory that
cannot be written or a full disk, a config file that is not UTF-8, no API key) and a few more;
in-process runs of the same command line for the rest of the start-up paths.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentcli.messages import Message
from agentcli.store.db import connect
from agentcli.store.lock import SessionLock
from agentcli.store.sqlite import SqliteJournal
from agentcli.ui.cli import run_app
from tests.test_cli_run import RESULT_KEYS

Setup = Callable[[Path, pytest.MonkeyPatch], None]


def one_result(stdout: str, output_format: str) -> dict[str, Any]:
    """The result object: json's only line, or stream-json's last one."""
    lines = stdout.splitlines()
    if output_format == "json":
        assert len(lines) == 1, stdout
    result: dict[str, Any] = json.loads(lines[-1])
    if output_format == "stream-json":
        assert result.pop("timestamp")  # every stream-json event has one
    assert result["type"] == "result" and set(result) == RESULT_KEYS
    assert result["is_error"] is True and result["subtype"] == f"error_{result['terminal_reason']}"
    return result


def assert_failed(
    code: int,
    stdout: str,
    stderr: str,
    output_format: str,
    reason: str,
    needle: str,
) -> dict[str, Any]:
    expected = {"usage_error": 2, "config_error": 2, "internal_error": 1, "aborted": 130}[reason]
    assert code == expected, stderr
    result = one_result(stdout, output_format)
    assert result["terminal_reason"] == reason, result
    assert result["task_state"] == ("aborted" if reason == "aborted" else "failed")
    assert needle in result["error"] and needle in stderr
    assert (result["task_id"], result["turns"], result["final_text"]) == ("", 0, None)
    assert "Traceback" not in stderr and stderr.startswith("agentcli: ")
    return result


# -- the real binary ------------------------------------------------------------------------


def binary(
    *args: str,
    cwd: Path,
    stdin: bytes | None = None,
    prefix: tuple[str, ...] = (),
    **env: str,
) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "ANTHROPIC_API_KEY": "test", **env}
    for name, value in env.items():
        if value == "":
            environ.pop(name, None)
    done = subprocess.run(
        [*prefix, sys.executable, "-m", "agentcli", *args],
        cwd=cwd,
        env=environ,
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        timeout=60,
    )
    return subprocess.CompletedProcess(
        done.args,
        done.returncode,
        done.stdout.decode("utf-8", "replace"),
        done.stderr.decode("utf-8", "replace"),
    )


@pytest.mark.parametrize("output_format", ["json", "stream-json"])
def test_stdin_that_is_not_utf8_is_a_usage_error(workspace: Path, output_format: str) -> None:
    for args in (["run"], ["run", "review this"]):  # the task, or extra context
        done = binary(
            *args, "--output-format", output_format, cwd=workspace, stdin=b"caf\xe9 au lait\n"
        )
        assert_failed(
            done.returncode,
            done.stdout,
            done.stderr,
            output_format,
            "usage_error",
            "stdin is not UTF-8 text (byte 0xe9 at offset 3)",
        )


@pytest.mark.parametrize("output_format", ["json", "stream-json"])
def test_a_missing_api_key_is_a_configuration_error(workspace: Path, output_format: str) -> None:
    done = binary(
        "run", "hi", "--output-format", output_format, cwd=workspace, ANTHROPIC_API_KEY=""
    )
    result = assert_failed(
        done.returncode,
        done.stdout,
        done.stderr,
        output_format,
        "config_error",
        "ANTHROPIC_API_KEY is not set",
    )
    assert "export ANTHROPIC_API_KEY" in result["error"]  # the hint says how to fix it


@pytest.mark.parametrize("git", [True, False], ids=["git", "plain"])
def test_a_run_that_cannot_start_leaves_nothing_behind(
    workspace: Path, tmp_path: Path, git: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No key: no `.agentcli/` in the repository, no journal, no private snapshot repository
    and no sandbox probe in the data dir (they were all made before the key was looked for)."""
    import subprocess as sp

    from tests.inprocess import run_in_process

    if git:
        sp.run(["git", "init", "-q"], cwd=workspace, check=True)
    (workspace / "a.txt").write_text("x\n")
    before = sorted(p.name for p in workspace.iterdir())
    home = tmp_path / "fresh-home"
    done = run_in_process(
        "run", "hi", cwd=workspace, env={"ANTHROPIC_API_KEY": None, "AGENTCLI_HOME": str(home)}
    )
    assert done.returncode == 2
    assert sorted(p.name for p in workspace.iterdir()) == before
    assert not home.exists() or list(home.iterdir()) == []


def test_a_config_file_that_is_not_utf8_is_a_configuration_error(
    workspace: Path, tmp_path: Path
) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.toml").write_bytes(b'model = "caf\xe9"\n')
    done = binary(
        "run", "hi", "--output-format", "json", cwd=workspace, AGENTCLI_CONFIG_DIR=str(config)
    )
    assert_failed(
        done.returncode,
        done.stdout,
        done.stderr,
        "json",
        "config_error",
        f"config file {config / 'config.toml'} is not UTF-8 text (byte 0xe9 at offset 12)",
    )


def test_a_data_directory_that_is_a_file_is_a_configuration_error(
    workspace: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.write_text("not a directory")
    done = binary("run", "hi", "--output-format", "json", cwd=workspace, AGENTCLI_HOME=str(home))
    assert_failed(
        done.returncode,
        done.stdout,
        done.stderr,
        "json",
        "config_error",
        f"the data directory {home} cannot be used",
    )
    assert home.read_text() == "not a directory"


def _namespace() -> tuple[str, ...]:
    """A private mount namespace (as a user namespace's root) to mount a real read-only or
    full file system in; skips where the kernel does not allow one."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("no unshare(1)")
    prefix = (unshare, "--user", "--map-root-user", "--mount")
    probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"no user and mount namespaces here: {probe.stderr.decode().strip()}")
    return prefix


@pytest.mark.parametrize(
    ("fault", "needle"),
    [
        ("read-only", "Read-only file system"),
        ("full", "the disk is full"),
        ("full, journal exists", "the disk is full"),
    ],
)
def test_a_data_directory_that_cannot_be_written_is_a_configuration_error(
    workspace: Path, tmp_path: Path, fault: str, needle: str
) -> None:
    """The data directory on a real tmpfs: mounted read-only, or filled to the last byte (with
    no journal yet, or with one that opens but cannot grow)."""
    home = tmp_path / "home"
    home.mkdir()
    prepare = {
        "read-only": 'mount -o remount,ro "$HOME_DIR"',
        "full": 'cat /dev/zero > "$HOME_DIR/filler" 2>/dev/null; true',
        "full, journal exists": (
            f"{sys.executable} -c 'from agentcli.store.db import connect; connect().close()' && "
            'cat /dev/zero > "$HOME_DIR/filler" 2>/dev/null; true'
        ),
    }[fault]
    script = f'mount -t tmpfs -o size=256k tmpfs "$HOME_DIR" && {prepare} && exec "$@"'
    prefix = (*_namespace(), "sh", "-c", script, "sh")
    done = binary(
        "run",
        "hi",
        "--output-format",
        "json",
        cwd=workspace,
        prefix=prefix,
        AGENTCLI_HOME=str(home),
        HOME_DIR=str(home),
    )
    result = assert_failed(
        done.returncode, done.stdout, done.stderr, "json", "config_error", needle
    )
    assert str(home / "journal.sqlite3") in result["error"]


# -- the same command line, in-process ------------------------------------------------------


def write(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data)


def user_config(data: str | bytes) -> Setup:
    def setup(_workspace: Path, _monkeypatch: pytest.MonkeyPatch) -> None:
        write(Path(os.environ["AGENTCLI_CONFIG_DIR"]) / "config.toml", data)

    return setup


def project_config(data: str) -> Setup:
    def setup(workspace: Path, _monkeypatch: pytest.MonkeyPatch) -> None:
        write(workspace / ".agentcli" / "config.toml", data)

    return setup


def config_is_a_directory(_workspace: Path, _monkeypatch: pytest.MonkeyPatch) -> None:
    (Path(os.environ["AGENTCLI_CONFIG_DIR"]) / "config.toml").mkdir(parents=True)


def config_dir_is_a_file(_workspace: Path, _monkeypatch: pytest.MonkeyPatch) -> None:
    write(Path(os.environ["AGENTCLI_CONFIG_DIR"]), "")


def broken_trust_store(_workspace: Path, _monkeypatch: pytest.MonkeyPatch) -> None:
    write(Path(os.environ["AGENTCLI_HOME"]) / "trusted_workspaces.json", "{not json")


def journal_is_a_directory(_workspace: Path, _monkeypatch: pytest.MonkeyPatch) -> None:
    (Path(os.environ["AGENTCLI_HOME"]) / "journal.sqlite3").mkdir(parents=True)


def git_dir_blocked(workspace: Path, _monkeypatch: pytest.MonkeyPatch) -> None:
    """A git workspace, and a file where agentcli keeps its private git dirs."""
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    write(Path(os.environ["AGENTCLI_HOME"]) / "git", "")


def no_api_key(_workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")


def nothing(_workspace: Path, _monkeypatch: pytest.MonkeyPatch) -> None:
    pass


START_UP = [
    # (name, arguments after `run`, stdin, setup, subtype, what the message says)
    ("no task", [], "", nothing, "usage_error", "the task read from stdin is empty"),
    ("blank task", ["  "], None, nothing, "usage_error", "the task is empty"),
    ("stdin not UTF-8", ["-"], b"\xff\xfe", nothing, "usage_error", "stdin is not UTF-8"),
    ("zero turns", ["t", "--max-turns", "0"], None, nothing, "usage_error", "--max-turns"),
    ("negative cost", ["t", "--max-cost", "-1"], None, nothing, "usage_error", "--max-cost"),
    ("cost nan", ["t", "--max-cost", "nan"], None, nothing, "usage_error", "finite"),
    ("timeout inf", ["t", "--timeout", "inf"], None, nothing, "usage_error", "finite"),
    (
        "unpriced model",
        ["t", "--max-cost", "1", "-m", "mystery"],
        None,
        nothing,
        "usage_error",
        "price",
    ),
    (
        "bad mode",
        ["t", "--permission-mode", "godmode"],
        None,
        nothing,
        "usage_error",
        "unknown permission mode",
    ),
    ("bad rule", ["t", "--allow", "shell("], None, nothing, "usage_error", "shell("),
    (
        "cwd missing",
        ["t", "-C", "/nonexistent/dir"],
        None,
        nothing,
        "usage_error",
        "not a directory",
    ),
    (
        "resume and continue",
        ["t", "--resume", "x", "--continue"],
        None,
        nothing,
        "usage_error",
        "cannot be used together",
    ),
    (
        "unknown session",
        ["t", "--resume", "01NOPE"],
        None,
        nothing,
        "usage_error",
        "no session '01NOPE'",
    ),
    (
        "nothing to continue",
        ["t", "--continue"],
        None,
        nothing,
        "usage_error",
        "no session to continue",
    ),
    ("no API key", ["t"], None, no_api_key, "config_error", "ANTHROPIC_API_KEY"),
    (
        "config not TOML",
        ["t"],
        None,
        user_config("model = \n"),
        "config_error",
        "is not valid TOML",
    ),
    ("config not UTF-8", ["t"], None, user_config(b"\xff"), "config_error", "not UTF-8"),
    ("config a directory", ["t"], None, config_is_a_directory, "config_error", "Is a directory"),
    ("config dir a file", ["t"], None, config_dir_is_a_file, "config_error", "Not a directory"),
    (
        "unknown key",
        ["t"],
        None,
        user_config("modle = 'x'\n"),
        "config_error",
        "unknown key `modle`",
    ),
    (
        "wrong type",
        ["t"],
        None,
        user_config("[acceptance]\nretries = 'x'\n"),
        "config_error",
        "acceptance.retries",
    ),
    (
        "float nan in config",
        ["t"],
        None,
        user_config("[acceptance]\ntimeout_s = nan\n"),
        "config_error",
        "must be a finite number",
    ),
    (
        "untrusted project config with an unknown key",
        ["t"],
        None,
        project_config("modle = 'x'\n"),
        "config_error",
        "unknown key `modle`",
    ),
    ("trust store broken", ["t"], None, broken_trust_store, "config_error", "trust store"),
    ("journal a directory", ["t"], None, journal_is_a_directory, "config_error", "journal.sqlite3"),
    ("git dir blocked", ["t"], None, git_dir_blocked, "config_error", "agentcli's git directory"),
]


class FakeStdin(io.TextIOWrapper):
    def isatty(self) -> bool:
        return False


@pytest.mark.parametrize("output_format", ["json", "stream-json", "text"])
@pytest.mark.parametrize(
    ("args", "stdin", "setup", "reason", "needle"),
    [case[1:] for case in START_UP],
    ids=[case[0] for case in START_UP],
)
def test_every_start_up_failure_is_reported_in_the_output_format(
    args: list[str],
    stdin: str | bytes | None,
    setup: Setup,
    reason: str,
    needle: str,
    output_format: str,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    monkeypatch.chdir(workspace)
    setup(workspace, monkeypatch)
    if stdin is not None:
        data = stdin.encode() if isinstance(stdin, str) else stdin
        monkeypatch.setattr(sys, "stdin", FakeStdin(io.BytesIO(data)))
    else:
        monkeypatch.setattr(sys, "stdin", None)
    code = run_app(["run", *args, "--output-format", output_format])
    out, err = capsys.readouterr()
    if output_format == "text":
        assert out == "" and err.startswith("agentcli: error: ") and needle in err
        assert code == 2 and "Traceback" not in err
    else:
        assert_failed(code, out, err, output_format, reason, needle)


def test_a_busy_session_is_reported_as_the_result_object(
    workspace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    monkeypatch.setattr(sys, "stdin", None)
    journal = SqliteJournal.create("01BUSY", workspace=workspace, model="m", conn=connect())
    journal.message_appended(Message.user("hi"))
    with SessionLock.acquire("01BUSY"):  # held as a live process would
        code = run_app(["run", "t", "--resume", "01BUSY", "--output-format", "json"])
    out, err = capsys.readouterr()
    assert_failed(code, out, err, "json", "usage_error", "session 01BUSY is in use")


def test_a_bug_at_start_up_is_an_internal_error_result_and_a_logged_traceback(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import agentcli.ui.run

    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise KeyError("boom")

    monkeypatch.setattr(agentcli.ui.run, "open_run_session", broken)
    monkeypatch.setattr(sys, "stdin", None)
    code = run_app(["run", "t", "--output-format", "json", "-C", str(workspace)])
    out, err = capsys.readouterr()
    result = assert_failed(code, out, err, "json", "internal_error", "KeyError: 'boom'")
    log = Path(os.environ["AGENTCLI_HOME"]) / "errors.log"
    assert "KeyError: 'boom'" in log.read_text() and str(log) in err
    assert result["error"] == "KeyError: 'boom'"


def test_ctrl_c_during_start_up_is_an_aborted_result(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import agentcli.ui.run

    def interrupted(*_args: Any, **_kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(agentcli.ui.run, "open_run_session", interrupted)
    monkeypatch.setattr(sys, "stdin", None)
    code = run_app(["run", "t", "--output-format", "stream-json", "-C", str(workspace)])
    out, err = capsys.readouterr()
    assert code == 130 and err == "\nagentcli: aborted\n"
    result = one_result(out, "stream-json")
    assert (result["terminal_reason"], result["task_state"]) == ("aborted", "aborted")


def test_a_failure_after_the_session_exists_names_it(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bug while the task runs: the result object still comes, with the session's id."""
    import agentcli.ui.run
    from agentcli.conversation import ConversationManager
    from agentcli.session.live import LiveSession
    from agentcli.testing import ScriptedModel

    real = agentcli.ui.run.open_run_session

    def scripted(options: Any, events: Any, **kwargs: Any) -> LiveSession:
        return real(options, events, model_factory=lambda _name: ScriptedModel([]))

    async def broken(self: ConversationManager, prompt: str, **_kwargs: Any) -> Any:
        raise RuntimeError("lost the plot")

    monkeypatch.setattr(agentcli.ui.run, "open_run_session", scripted)
    monkeypatch.setattr(ConversationManager, "run_task", broken)
    monkeypatch.setattr(sys, "stdin", None)
    code = run_app(["run", "t", "--output-format", "json", "-C", str(workspace)])
    out, err = capsys.readouterr()
    result = assert_failed(code, out, err, "json", "internal_error", "RuntimeError: lost the plot")
    assert result["session_id"] != ""
