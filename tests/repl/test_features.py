"""Slash commands on the real session machinery (SQLite journal, checkpoints, acceptance,
policy), with the REPL's real session builder and a scripted model in place of the API."""

from __future__ import annotations

import asyncio
import functools
import io
import os
import tempfile
from pathlib import Path

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from agentcli.config import data_home
from agentcli.errors import SessionBusyError
from agentcli.model import ModelRequest, ModelResponse
from agentcli.session.options import SessionOptions
from agentcli.store import queries
from agentcli.store.db import connect
from agentcli.store.lock import SessionLock
from agentcli.testing import FunctionModel, ScriptedModel, respond, text, tool_use
from agentcli.ui.repl.app import Repl
from agentcli.ui.repl.backend import open_repl_session


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")


async def session(
    workspace: Path, model: ScriptedModel | FunctionModel, keys: str
) -> tuple[str, Repl]:
    out = io.StringIO()
    with create_pipe_input() as pipe:
        repl = Repl(
            SessionOptions(cwd=workspace),
            console=Console(file=out, width=80, markup=False, highlight=False),
            input=pipe,
            output=DummyOutput(),
            build=functools.partial(open_repl_session, model_factory=lambda _name: model),
        )
        pipe.send_text(keys)
        assert await asyncio.wait_for(repl.run(), 30) == 0
    return out.getvalue(), repl


async def test_accept_check_diff_undo(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("keep me\n")
    model = ScriptedModel(
        [
            respond(tool_use("write_file", {"path": "done.txt", "content": "finished\n"})),
            respond(text("Wrote done.txt.")),
        ]
    )
    keys = (
        "/accept\r"
        "/accept test -f done.txt\r"
        "write done.txt\r"
        "y"
        "/check\r"
        "/diff\r"
        "/undo\r"
        "/check\r"
        "/accept off\r"
        "/exit\r"
    )
    out, _ = await session(workspace, model, keys)
    assert "no acceptance checks: /accept CMD adds one" in out
    assert "acceptance checks: test -f done.txt" in out
    assert "write_file wants to" in out
    assert "✓ task succeeded" in out and "verified 1/1 checks passed" in out
    assert "✓ verified: 1/1 checks passed on" in out
    assert "+++ b/done.txt" in out and "+finished" in out
    assert "removed done.txt" in out
    assert not (workspace / "done.txt").exists()
    assert (workspace / "notes.txt").read_text() == "keep me\n"
    assert "✗ not verified: `test -f done.txt` exited 1" in out
    assert "acceptance checks removed" in out
    assert "Traceback" not in out


async def test_after_undo_the_status_no_longer_says_verified(workspace: Path) -> None:
    model = ScriptedModel(
        [
            respond(tool_use("write_file", {"path": "done.txt", "content": "finished\n"})),
            respond(text("Wrote done.txt.")),
        ]
    )
    keys = "/accept test -f done.txt\rwrite done.txt\ry/undo\r/exit\r"
    out, repl = await session(workspace, model, keys)
    assert "✓ task succeeded" in out and "removed done.txt" in out
    assert repl.status.state == "undone"


@pytest.mark.parametrize("in_git", [False, True])
async def test_diff_shows_changes_made_by_commands(workspace: Path, in_git: bool) -> None:
    import subprocess

    (workspace / "app.cfg").write_text("mode = slow\n")
    if in_git:
        for args in (["init", "-q"], ["add", "."]):
            subprocess.run(["git", *args], cwd=workspace, check=True)
        subprocess.run(
            ["git", "-c", "user.email=t@e", "-c", "user.name=t", "commit", "-qm", "i"],
            cwd=workspace,
            check=True,
        )
    model = ScriptedModel(
        [
            respond(tool_use("shell", {"command": "sed -i s/slow/fast/ app.cfg"})),
            respond(text("Switched to fast.")),
        ]
    )
    out, _ = await session(workspace, model, "make it fast\ry/diff\r/exit\r")
    assert (workspace / "app.cfg").read_text() == "mode = fast\n"
    assert "+++ b/app.cfg" in out and "-mode = slow" in out and "+mode = fast" in out
    assert "no copy from before" not in out


async def test_sessions_and_resume(workspace: Path) -> None:
    first = ScriptedModel([respond(text("The answer is 42."))])
    keys = "what is the answer?\r/model claude-haiku-4-5\r/mode accept-edits\r/exit\r"
    _, earlier = await session(workspace, first, keys)
    old_id = earlier.session_id
    assert old_id is not None
    recorded = queries.find_session(connect(), old_id)
    assert recorded is not None and recorded.model == "claude-haiku-4-5"
    assert recorded.settings["permission_mode"] == "accept-edits"
    second = ScriptedModel([respond(text("Still 42."))])
    keys = f"/sessions\r/resume {old_id[:20]}\rand again?\r/resume NOPE\r/exit\r"
    out, repl = await session(workspace, second, keys)
    assert old_id in out and "what is the answer?" in out
    assert f"resumed session {old_id} (2 messages)" in out
    assert "you: what is the answer?" in out and "agent: The answer is 42." in out
    sent = [m.text for m in second.requests[0].messages]
    assert sent == ["what is the answer?", "The answer is 42.", "and again?"]
    assert "no session 'NOPE'" in out
    assert repl.session_id == old_id  # a failed /resume keeps the current session


async def test_resume_without_id_picks_among_the_workspace_sessions(workspace: Path) -> None:
    out, _ = await session(workspace, ScriptedModel([]), "/resume\r/exit\r")
    assert "no earlier session in this workspace to resume" in out
    _, older = await session(workspace, ScriptedModel([respond(text("ok"))]), "remember 7\r/exit\r")
    _, noted = await session(workspace, ScriptedModel([respond(text("ok"))]), "remember 8\r/exit\r")
    out, repl = await session(workspace, ScriptedModel([]), "/resume\r\r/exit\r")
    assert "   1 " in out and "   2 " in out and "remember 7" in out  # the list to pick from
    assert "resumed session" in out and "you: remember 8" in out  # Enter: the newest
    assert repl.session_id == noted.session_id
    out, repl = await session(workspace, ScriptedModel([]), "/resume\r2\r/exit\r")
    assert "you: remember 7" in out
    assert repl.session_id == older.session_id
    out, repl = await session(workspace, ScriptedModel([]), "/resume\rx\r/exit\r")
    assert "no session resumed" in out and repl.session_id != older.session_id


def is_free(session_id: str) -> bool:
    try:
        SessionLock.acquire(session_id).release()
    except SessionBusyError:
        return False
    return True


async def test_resume_of_a_session_another_process_uses_is_refused(workspace: Path) -> None:
    _, earlier = await session(workspace, ScriptedModel([respond(text("hi"))]), "hello\r/exit\r")
    busy = earlier.session_id
    assert busy is not None and is_free(busy)  # exit let go of it
    model = ScriptedModel([respond(text("ok")), respond(text("still here"))])
    with SessionLock.acquire(busy):  # stands for another live agentcli process
        out, repl = await session(workspace, model, f"mine\r/resume {busy}\ragain\r/exit\r")
    said = " ".join(out.split())  # the console wraps long lines
    assert f"session {busy} is in use by another agentcli process (pid {os.getpid()})" in said
    assert "resumed session" not in out
    assert repl.session_id not in (None, busy)
    assert [m.text for m in model.requests[1].messages] == ["mine", "ok", "again"]
    assert len(queries.load_messages(connect(), busy)) == 2  # not touched


async def test_clear_and_exit_let_go_of_the_session(workspace: Path) -> None:
    seen: list[dict[str, bool]] = []

    def probe(request: ModelRequest) -> ModelResponse:
        rows = queries.list_sessions(connect(), str(workspace))
        seen.append({row.title or "": is_free(row.id) for row in rows})
        return respond(text("ok"))

    await session(workspace, FunctionModel(probe), "first\r/clear\rsecond\r/exit\r")
    assert seen == [{"first": False}, {"second": False, "first": True}]
    assert all(is_free(row.id) for row in queries.list_sessions(connect(), str(workspace)))


async def test_permissions_listing_and_session_rule(workspace: Path) -> None:
    model = ScriptedModel([])
    keys = "/permissions\r/permissions allow shell(make *)\r/permissions\r/permissions x\r/exit\r"
    out, _ = await session(workspace, model, keys)
    assert "mode     default" in out
    assert "allow shell(make *) (for this session)" in out
    assert "shell(make *) [session]" in out
    assert "usage: /permissions [allow|ask|deny RULE]" in out


async def test_tools_lists_the_builtin_tools(workspace: Path) -> None:
    out, _ = await session(workspace, ScriptedModel([]), "/tools\r/exit\r")
    for name in ("read_file", "write_file", "edit_file", "shell", "grep", "glob"):
        assert f"  {name}" in out
    assert max(len(line) for line in out.splitlines()) <= 80


async def test_a_failing_command_is_reported_and_the_repl_goes_on(workspace: Path) -> None:
    conn = connect()
    conn.execute(
        "INSERT INTO sessions (id, workspace, model, settings, created_at, updated_at) "
        "VALUES ('01BROKEN', ?, 'm', 'not json', 0, 0)",
        (str(workspace),),
    )
    conn.execute(
        "INSERT INTO messages (session_id, seq, role, content, created_at) "
        "VALUES ('01BROKEN', 0, 'user', '[]', 0)"
    )
    out, _ = await session(workspace, ScriptedModel([]), "/sessions\r" + "/help\r" + "/exit\r")
    assert "internal error: JSONDecodeError" in out
    assert "Show commands and keys." in out  # /help still ran after the failure
    assert "Traceback" not in out


async def test_resume_forgets_what_the_previous_session_read(workspace: Path) -> None:
    """The stale-read guard is per session: a file read before `/resume` was not read by the
    resumed conversation, so overwriting it there is a conflict, not a blind write."""
    (workspace / "notes.txt").write_text("keep me\n")
    _, earlier = await session(workspace, ScriptedModel([respond(text("hi"))]), "hello\r/exit\r")
    model = ScriptedModel(
        [
            respond(tool_use("read_file", {"path": "notes.txt"})),
            respond(text("read it")),
            respond(tool_use("write_file", {"path": "notes.txt", "content": "gone\n"})),
            respond(text("done")),
        ]
    )
    keys = f"read notes\r/mode accept-edits\r/resume {earlier.session_id}\roverwrite notes\r/exit\r"
    await session(workspace, model, keys)
    assert (workspace / "notes.txt").read_text() == "keep me\n"
    result = model.requests[3].messages[-1].tool_results[0]
    assert result.is_error and "has not been read in this session" in result.content


async def test_check_keeps_long_output_in_the_session_data_dir(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/check spills a long check output where the task's checks do (the session's data
    directory), not into a fresh temporary directory nobody removes."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    keys = "/accept python3 -c 'print(\"x\" * 200_000)'\r/check\r/exit\r"
    out, repl = await session(workspace, ScriptedModel([]), keys)
    assert "✓ verified: 1/1 checks passed" in out
    assert [p.name for p in temp.iterdir() if p.name.startswith("agentcli-acceptance")] == []
    assert repl.session_id is not None
    assert list((data_home() / "sessions" / repl.session_id / "spill").glob("check-*.txt"))


def test_a_rule_is_labelled_by_where_it_is_stored(tmp_path: Path) -> None:
    from agentcli.ui.repl.features import _stored

    workspace = tmp_path / "ws"
    assert _stored("session", workspace) == "session"
    assert _stored("--allow", workspace) == "--allow"
    local = workspace / ".agentcli" / "config.local.toml"
    assert _stored(str(local), workspace) == ".agentcli/config.local.toml"
    kept = Path.home() / ".local/share/agentcli/workspace-rules/x.toml"
    assert _stored(str(kept), workspace) == "~/.local/share/agentcli/workspace-rules/x.toml"
