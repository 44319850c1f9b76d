"""`agentcli --resume [ID]` and `--continue`: the REPL opens on a recorded session (real SQLite
journals), after the user picks it from /resume's picker when no id is given. Driven through
prompt-toolkit's pipe input; what the user sees is read from the console."""

from __future__ import annotations

import asyncio
import functools
import io
from pathlib import Path

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from agentcli.errors import UsageError
from agentcli.session.options import SessionOptions
from agentcli.testing import ScriptedModel, respond, text
from agentcli.ui.repl.app import Repl
from agentcli.ui.repl.backend import open_repl_session
from agentcli.ui.repl.main import main
from agentcli.ui.repl.opening import check_resumable
from agentcli.ui.resume_arg import PICK


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")


async def start(settings: SessionOptions, model: ScriptedModel, keys: str) -> tuple[int, str, Repl]:
    """Run the REPL as `main` would (the start-up check, then the REPL) on `keys`; its exit
    code, what it printed and the REPL."""
    out = io.StringIO()
    check_resumable(settings)
    with create_pipe_input() as pipe:
        repl = Repl(
            settings,
            console=Console(file=out, width=100, markup=False, highlight=False),
            input=pipe,
            output=DummyOutput(),
            build=functools.partial(open_repl_session, model_factory=lambda _name: model),
        )
        pipe.send_text(keys)
        code = await asyncio.wait_for(repl.run(), 30)
    return code, out.getvalue(), repl


async def recorded(workspace: Path, prompt: str, answer: str) -> str:
    """A session recorded in `workspace`: one task, `prompt` answered with `answer`."""
    model = ScriptedModel([respond(text(answer))])
    code, _, repl = await start(SessionOptions(cwd=workspace), model, f"{prompt}\r/exit\r")
    assert code == 0 and repl.session_id is not None
    return repl.session_id


async def test_a_bare_resume_lists_the_sessions_and_opens_the_one_picked(workspace: Path) -> None:
    older = await recorded(workspace, "the codeword is PELICAN", "Noted.")
    await recorded(workspace, "what is 2+2?", "4")
    model = ScriptedModel([respond(text("PELICAN."))])
    settings = SessionOptions(cwd=workspace, resume=PICK)
    code, out, repl = await start(settings, model, "2\rwhat was the codeword?\r/exit\r")
    assert code == 0
    listing = out[: out.index("Type a task")]  # the welcome comes after the pick
    # The header wraps at the console's width, wherever the (long) temporary path ends.
    assert f"sessions in {workspace}, newest first:" in " ".join(listing.split())
    assert listing.index("what is 2+2?") < listing.index("the codeword is PELICAN")
    assert f"resumed session {older} (2 messages)" in out
    assert "you: the codeword is PELICAN" in out and "agent: Noted." in out
    assert repl.session_id == older
    sent = [m.text for m in model.requests[0].messages]
    assert sent == ["the codeword is PELICAN", "Noted.", "what was the codeword?"]


async def test_enter_at_the_start_up_picker_takes_the_newest(workspace: Path) -> None:
    await recorded(workspace, "first", "one")
    newest = await recorded(workspace, "second", "two")
    settings = SessionOptions(cwd=workspace, resume=PICK)
    code, out, repl = await start(settings, ScriptedModel([]), "\r/exit\r")
    assert code == 0 and repl.session_id == newest and "you: second" in out


@pytest.mark.parametrize(
    "keys", ["\x1b", "\x03", "x\r", "3\r"], ids=["esc", "ctrl-c", "not-a-number", "not-listed"]
)
async def test_picking_none_at_start_up_exits_130_and_starts_nothing(
    workspace: Path, keys: str
) -> None:
    await recorded(workspace, "first", "one")
    await recorded(workspace, "second", "two")
    model = ScriptedModel([])
    settings = SessionOptions(cwd=workspace, resume=PICK)
    code, out, repl = await start(settings, model, keys)
    assert code == 130
    assert "no session resumed" in out
    assert "Type a task" not in out  # the REPL never started
    assert repl.session_id is None and model.requests == []


async def test_a_bare_resume_with_no_session_here_is_a_usage_error(
    workspace: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    await recorded(other, "elsewhere", "ok")  # another workspace's sessions are not offered
    with pytest.raises(UsageError, match="no earlier session in this workspace") as caught:
        check_resumable(SessionOptions(cwd=workspace, resume=PICK))
    assert caught.value.hint is not None and "agentcli sessions list --all" in caught.value.hint


def test_main_says_why_in_one_line_and_exits_2_before_the_terminal(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(SessionOptions(cwd=workspace, resume=PICK)) == 2
    err = capsys.readouterr().err
    assert err.startswith("agentcli: error: no earlier session in this workspace to resume\n")
    assert "Traceback" not in err


async def test_resume_id_opens_that_session_and_clear_starts_a_new_one(workspace: Path) -> None:
    earlier = await recorded(workspace, "remember 7", "ok")
    model = ScriptedModel([respond(text("7")), respond(text("fresh"))])
    settings = SessionOptions(cwd=workspace, resume=earlier[:12].lower())
    keys = "which number?\r/clear\rnew start\r/exit\r"
    code, out, repl = await start(settings, model, keys)
    assert code == 0
    assert out.index("Type a task") < out.index(f"resumed session {earlier} (2 messages)")
    assert [m.text for m in model.requests[0].messages] == ["remember 7", "ok", "which number?"]
    assert [m.text for m in model.requests[1].messages] == ["new start"]
    assert repl.session_id != earlier


async def test_continue_opens_the_latest_session_of_the_workspace(workspace: Path) -> None:
    await recorded(workspace, "older", "a")
    latest = await recorded(workspace, "newer", "b")
    code, out, repl = await start(
        SessionOptions(cwd=workspace, continue_=True), ScriptedModel([]), "/exit\r"
    )
    assert code == 0 and repl.session_id == latest and "you: newer" in out


async def test_a_session_of_another_workspace_is_resumed_in_its_own(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = await recorded(workspace, "here", "ok")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    settings = SessionOptions(resume=session_id)
    check_resumable(settings)
    assert settings.cwd == workspace
    given = SessionOptions(cwd=elsewhere, resume=session_id)  # -C says where
    check_resumable(given)
    assert given.cwd == elsewhere


@pytest.mark.parametrize(
    ("settings", "message", "hint"),
    [
        (SessionOptions(resume="NOPE"), "no session 'NOPE'", "`agentcli --resume` without an id"),
        (SessionOptions(continue_=True), "no session to continue in", "sessions list --all"),
        (SessionOptions(resume=PICK, continue_=True), "cannot be used together", None),
        (SessionOptions(resume="01X", continue_=True), "cannot be used together", None),
    ],
    ids=["unknown-id", "nothing-to-continue", "pick-and-continue", "id-and-continue"],
)
def test_what_cannot_be_opened_is_refused_before_the_terminal(
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    settings: SessionOptions,
    message: str,
    hint: str | None,
) -> None:
    monkeypatch.chdir(workspace)
    with pytest.raises(UsageError, match=message) as caught:
        check_resumable(settings)
    if hint is not None:
        assert caught.value.hint is not None and hint in caught.value.hint
