"""Class 7a (issue 26, its class 1): instruction files never follow a link out of the workspace.

A repository that ships `AGENTS.md -> /proc/self/environ` (or `CLAUDE.md -> ~/.ssh/id_rsa`,
`AGENTS.md -> ../other/secret`), or a model in auto mode that plants one for the next session,
must not put what the link leads to into the system prompt, in any mode, read-only included;
the user is told which file was skipped and why (stderr, and a `notice` event in stream-json).
A file that is no regular file (a pipe, a device) or is huge is skipped too, and the directory's
`CLAUDE.md` speaks for it. What must keep working: a plain `AGENTS.md`, one linked to a file
inside the workspace, `CLAUDE.md -> AGENTS.md`.
"""

from __future__ import annotations

import asyncio
import functools
import io
import json
import subprocess
from pathlib import Path

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from agentcli.session.options import SessionOptions
from agentcli.testing import ScriptedModel, respond
from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text
from agentcli.ui.repl.app import Repl
from agentcli.ui.repl.backend import open_repl_session
from tests.adversarial.own_files import memory_cap, plant
from tests.adversarial.own_runs import cli, sent, server, system_of, ws

__all__ = ["server", "ws"]  # fixtures

MODES = ["default", "read-only", "accept-edits", "auto", "yolo"]
# Reading instruction files does not depend on the mode: every mode for the report's own case,
# the two that read least for the others.
CASES = [
    *(("AGENTS.md", "proc-environ", mode) for mode in MODES),
    *(
        (name, "outside-link", mode)
        for name in ("CLAUDE.md", "AGENTS.md")  # as `-> ~/.ssh/id_rsa`, `-> ../other/secret`
        for mode in ("default", "read-only")
    ),
]


@pytest.mark.timeout(30, method="signal")
@pytest.mark.parametrize(("name", "kind", "mode"), CASES, ids=["-".join(c) for c in CASES])
def test_an_instruction_file_linked_out_of_the_workspace_never_reaches_the_model(
    server: FakeMessagesServer, ws: Path, tmp_path: Path, mode: str, name: str, kind: str
) -> None:
    planted = plant(ws / name, kind, outside=tmp_path / "home" / ".ssh")
    server.push(stream_message([text("ok")]))
    proc = cli("run", "hi", "--permission-mode", mode, server=server, cwd=ws)
    assert proc.returncode == 0, proc.stderr
    leaked = planted.secret is None or planted.secret in sent(server)
    assert not leaked, f"the content of {name} ({kind}) reached the model"
    assert f"{name} skipped" in proc.stderr and "outside the workspace" in proc.stderr, proc.stderr


@pytest.mark.timeout(30, method="signal")
@pytest.mark.parametrize("kind", ["fifo", "char-device", "sparse-2g"])
def test_an_instruction_file_that_is_no_regular_file_is_skipped_and_named(
    server: FakeMessagesServer, ws: Path, tmp_path: Path, kind: str
) -> None:
    plant(ws / "AGENTS.md", kind, outside=tmp_path / "outside")
    (ws / "CLAUDE.md").write_text("the fallback rules\n")
    # Out of the artifact versions' file-tree hash (which would hash 2 GiB of zeros, in chunks).
    (ws / ".gitignore").write_text("AGENTS.md\n")
    server.push(stream_message([text("ok")]))
    with memory_cap():
        proc = cli("run", "hi", server=server, cwd=ws)
    assert proc.returncode == 0, proc.stderr
    assert "AGENTS.md skipped" in proc.stderr, proc.stderr
    assert "\\u0000" not in system_of(server)  # nothing of /dev/zero or the sparse file
    # The directory has no usable AGENTS.md: its CLAUDE.md speaks for it, as when it has none.
    assert "the fallback rules" in system_of(server)


@pytest.mark.timeout(30, method="signal")
def test_an_instruction_file_above_the_workspace_linked_out_is_skipped(
    server: FakeMessagesServer, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    workspace = repo / "pkg" / "sub"
    workspace.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    planted = plant(repo / "AGENTS.md", "outside-link", outside=tmp_path / "other")
    mid = plant(repo / "pkg" / "CLAUDE.md", "proc-environ", outside=tmp_path / "other")
    (workspace / "AGENTS.md").write_text("the workspace's own rules\n")
    server.push(stream_message([text("ok")]))
    proc = cli("run", "hi", server=server, cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    leaked = [p.path.name for p in (planted, mid) if p.secret is None or p.secret in sent(server)]
    assert leaked == [], f"the content of {leaked} reached the model"
    assert "AGENTS.md skipped" in proc.stderr and "pkg/CLAUDE.md skipped" in proc.stderr
    assert "the workspace's own rules" in system_of(server)


@pytest.mark.parametrize("kind", ["regular", "inside-link"])
def test_a_plain_or_inside_linked_agents_md_is_still_given_to_the_model(
    server: FakeMessagesServer, ws: Path, tmp_path: Path, kind: str
) -> None:
    planted = plant(ws / "AGENTS.md", kind, outside=tmp_path / "outside", inside=ws / "docs")
    (ws / "CLAUDE.md").symlink_to("AGENTS.md")  # the usual way to serve both conventions
    server.push(stream_message([text("ok")]))
    proc = cli("run", "hi", server=server, cwd=ws)
    assert proc.returncode == 0, proc.stderr
    assert planted.content is not None and planted.content in system_of(server)
    assert "skipped" not in proc.stderr and "instructions from AGENTS.md" in proc.stderr


def test_the_skipped_file_is_a_notice_event_in_stream_json(
    server: FakeMessagesServer, ws: Path, tmp_path: Path
) -> None:
    plant(ws / "AGENTS.md", "proc-environ", outside=tmp_path / "outside")
    server.push(stream_message([text("ok")]))
    proc = cli("run", "hi", "--output-format", "stream-json", server=server, cwd=ws)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    notices = [e["message"] for e in events if e["type"] == "notice"]
    assert any("AGENTS.md skipped" in n and "/proc/self/environ" in n for n in notices), notices
    assert "AGENTS.md skipped" in proc.stderr


async def test_the_repl_says_which_file_it_skipped(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    planted = plant(ws / "AGENTS.md", "proc-environ", outside=tmp_path / "outside")
    model = ScriptedModel([respond(text("ok"))])
    out = io.StringIO()
    with create_pipe_input() as pipe:
        repl = Repl(
            SessionOptions(cwd=ws),
            console=Console(file=out, width=200, markup=False, highlight=False),
            input=pipe,
            output=DummyOutput(),
            build=functools.partial(open_repl_session, model_factory=lambda _name: model),
        )
        pipe.send_text("hi\r/exit\r")
        assert await asyncio.wait_for(repl.run(), 30) == 0
    shown = out.getvalue()
    assert "AGENTS.md skipped: a link to /proc/self/environ, outside the workspace" in shown
    (request,) = model.requests
    leaked = planted.secret is None or planted.secret in request.system
    assert not leaked, "the content of AGENTS.md reached the model"
