"""Class 7c (issue 26, its class 5): nothing agentcli reads at start is read without bound.

`.agentcli/config.toml -> /dev/zero` (or `config.local.toml`; or a pipe, a 2 GiB file, a link
out) is refused at once, naming the file (exit 2, `config_error`), before the model is asked
anything, never read until memory runs out; `.gitmodules` outside git is never read so either.
A normal project config still applies.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text, tool_use
from tests.adversarial.own_files import memory_cap, plant
from tests.adversarial.own_runs import cli, one_result, server, ws

__all__ = ["server", "ws"]  # fixtures


CONFIG_KINDS = ["char-device", "fifo", "sparse-2g", "proc-environ", "outside-link"]


@pytest.mark.timeout(30, method="signal")
@pytest.mark.parametrize("name", ["config.toml", "config.local.toml"])
@pytest.mark.parametrize("kind", CONFIG_KINDS)
def test_a_hostile_project_config_is_refused_at_once_naming_it(
    server: FakeMessagesServer, ws: Path, tmp_path: Path, name: str, kind: str
) -> None:
    plant(ws / ".agentcli" / name, kind, outside=tmp_path / "outside")
    with memory_cap():
        proc = cli("run", "hi", "--output-format", "json", server=server, cwd=ws)
    assert proc.returncode == 2, proc.stderr
    assert f".agentcli/{name}" in proc.stderr, proc.stderr
    assert one_result(proc.stdout)["terminal_reason"] == "config_error"
    assert server.requests == []  # nothing was asked of the model


@pytest.mark.timeout(30, method="signal")
@pytest.mark.parametrize("kind", ["char-device", "fifo", "sparse-2g"])
def test_a_hostile_gitmodules_outside_git_does_not_stop_the_task(
    server: FakeMessagesServer, ws: Path, tmp_path: Path, kind: str
) -> None:
    plant(ws / ".gitmodules", kind, outside=tmp_path / "outside")
    # Out of the artifact versions' file-tree hash (which would hash 2 GiB of zeros, in chunks).
    (ws / ".gitignore").write_text(".gitmodules\n")
    server.push(
        stream_message([tool_use("shell", {"command": "echo hi"}, id="t1")]),
        stream_message([text("done")]),
    )
    with memory_cap():
        proc = cli(
            *("run", "go", "--permission-mode", "auto", "--output-format", "json"),
            server=server,
            cwd=ws,
        )
    assert proc.returncode == 0, proc.stderr
    assert one_result(proc.stdout)["terminal_reason"] == "completed"


def test_a_normal_project_config_still_applies(server: FakeMessagesServer, ws: Path) -> None:
    (ws / ".agentcli").mkdir()
    (ws / ".agentcli" / "config.toml").write_text('deny = ["read(secret.txt)"]\n')
    (ws / "secret.txt").write_text("nope\n")
    server.push(
        stream_message([tool_use("read_file", {"path": "secret.txt"}, id="t1")]),
        stream_message([text("done")]),
    )
    proc = cli("run", "x", "--output-format", "json", server=server, cwd=ws)
    result = one_result(proc.stdout)
    assert [d["tool"] for d in result["permission_denials"]] == ["read_file"], proc.stderr
