"""Hooks in the REPL (in-process: real prompt-toolkit input on a pipe, the session the REPL
really opens, a scripted model): SessionStart/SessionEnd around `/clear` and the exit, a blocking
hook's line, Notification while a permission question waits, `/hooks` and `/hooks approve`."""

from __future__ import annotations

import asyncio
import functools
import io
from pathlib import Path

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from agentcli.hooks.approval import approved_digest
from agentcli.model import ModelRequest, ModelResponse
from agentcli.session.options import SessionOptions
from agentcli.testing import FunctionModel, ScriptedModel, respond, text, tool_use
from agentcli.trust import set_trusted
from agentcli.ui.repl.app import Repl
from agentcli.ui.repl.backend import open_repl_session
from tests.hooks.conftest import (
    hook_table,
    logging_hook,
    project_hooks,
    python_hook,
    records,
    requires_sandbox,
    script,
    user_hooks,
)


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")


async def repl(workspace: Path, model: ScriptedModel, keys: str) -> str:
    """Run the REPL on `keys`; what it showed."""
    out = io.StringIO()
    with create_pipe_input() as pipe:
        app = Repl(
            SessionOptions(cwd=workspace),
            console=Console(file=out, width=400, markup=False, highlight=False),
            input=pipe,
            output=DummyOutput(),
            build=functools.partial(open_repl_session, model_factory=lambda _name: model),
        )
        pipe.send_text(keys)
        assert await asyncio.wait_for(app.run(), 60) == 0
    return out.getvalue()


async def test_session_hooks_around_a_task_clear_and_exit(workspace: Path, tmp_path: Path) -> None:
    log = tmp_path / "session.jsonl"
    hook = logging_hook(tmp_path / "session.py", log)
    user_hooks(
        hook_table("SessionStart", str(hook)),
        hook_table("SessionEnd", str(hook)),
        hook_table("UserPromptSubmit", str(hook)),
    )
    model = ScriptedModel([respond(text("first")), respond(text("second"))])
    shown = await repl(workspace, model, "one\r/clear\rtwo\r/exit\r")
    assert "Traceback" not in shown
    seen = [
        (s["hook_event_name"], s.get("source") or s.get("reason") or s.get("prompt"))
        for s in records(log)
    ]
    assert seen == [
        ("SessionStart", "startup"),
        ("UserPromptSubmit", "one"),
        ("SessionEnd", "clear"),
        ("SessionStart", "clear"),
        ("UserPromptSubmit", "two"),
        ("SessionEnd", "prompt_input_exit"),
    ]
    sessions = [s["session_id"] for s in records(log)]
    assert sessions[0] == sessions[1] == sessions[2] != sessions[3] == sessions[5]


async def test_a_blocking_hook_gets_its_line_and_the_prompt_is_not_sent(
    workspace: Path, tmp_path: Path
) -> None:
    deny = script(tmp_path / "deny.sh", "#!/bin/bash\necho 'no shell in the REPL' >&2\nexit 2\n")
    block = script(tmp_path / "block.sh", "#!/bin/bash\necho 'say please' >&2\nexit 2\n")
    user_hooks(
        hook_table("PreToolUse", str(deny), matcher="Bash"),
        hook_table("UserPromptSubmit", f"grep -q rude && exec {block} || true"),
    )
    model = ScriptedModel(
        [respond(tool_use("shell", {"command": "ls"})), respond(text("could not list"))]
    )
    shown = await repl(workspace, model, "list files\rbe rude\r/exit\r")
    lines = [line for line in shown.splitlines() if "⊘ blocked by hook" in line]
    assert len(lines) == 2
    assert lines[0].startswith("  ⊘ blocked by hook PreToolUse `/")
    assert lines[0].endswith("` (user): no shell in the REPL")
    assert lines[1].endswith("` (user): say please")
    assert "✗ task failed (hook_stopped)" in shown
    assert "could not list" in shown
    assert len(model.requests) == 2  # "be rude" never reached the model


async def test_notification_hooks_run_while_a_question_waits(
    workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "notify.jsonl"
    notify = logging_hook(tmp_path / "notify.py", log)
    user_hooks(hook_table("Notification", str(notify), matcher="permission_prompt"))
    model = ScriptedModel(
        [
            respond(tool_use("write_file", {"path": "new.txt", "content": "x\n"})),
            respond(text("written")),
        ]
    )
    shown = await repl(workspace, model, "write it\ry/exit\r")
    assert (workspace / "new.txt").exists(), shown
    [seen] = records(log)
    assert seen["hook_event_name"] == "Notification"
    assert seen["notification_type"] == "permission_prompt"
    assert "write_file" in seen["message"]


async def test_hooks_lists_them_and_approve_approves_the_repositorys(
    workspace: Path, tmp_path: Path
) -> None:
    python_hook(workspace / ".agentcli" / "hooks" / "stop.py", "print('x')\n")
    project_hooks(workspace, hook_table("Stop", ".agentcli/hooks/stop.py"))
    user_hooks(hook_table("PreToolUse", "true", matcher="Edit"))
    set_trusted(workspace, True)
    shown = await repl(workspace, ScriptedModel([]), "/hooks\r/hooks approve\r/hooks\r/exit\r")
    assert "this repository's 1 hook does not run: you have not approved them" in shown
    assert "PreToolUse [Edit] `true`  user (" in shown and "unconfined: runs" in shown
    assert "Stop `.agentcli/hooks/stop.py`  project (" in shown
    assert "not run: not approved" in shown
    assert "approved 1 hook(s)" in shown
    assert approved_digest(workspace) is not None
    assert shown.count("sandboxed: runs") == 1  # after approving


@requires_sandbox
async def test_an_approved_repository_hook_runs_in_the_repl(workspace: Path) -> None:
    python_hook(
        workspace / ".agentcli" / "hooks" / "context.py",
        "print(json.dumps({'hookSpecificOutput': {'additionalContext': 'from the repo'}}))\n",
    )
    project_hooks(workspace, hook_table("UserPromptSubmit", ".agentcli/hooks/context.py"))
    set_trusted(workspace, True)
    model = ScriptedModel([respond(text("ok"))])
    await repl(workspace, model, "/hooks approve\rhello\r/exit\r")
    [request] = model.requests
    assert "from the repo" in request.messages[-1].text


def summarizing_model(requests: list[ModelRequest]) -> FunctionModel:
    """Answers a task with a word, and a summary request (no tools offered) with a summary."""

    def answer(request: ModelRequest) -> ModelResponse:
        requests.append(request)
        return respond(text("the summary" if not request.tools else "done"))

    return FunctionModel(answer)


async def test_precompact_hooks_hear_compact_and_session_start_compact_follows(
    workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "compact.jsonl"
    hook = logging_hook(tmp_path / "compact.py", log)
    user_hooks(
        "[context]\nkeep_recent = 1\n",
        hook_table("PreCompact", str(hook), matcher="manual"),
        hook_table("SessionStart", str(hook), matcher="compact"),
    )
    requests: list[ModelRequest] = []
    keys = "one\rtwo\r/compact keep the names\r/exit\r"
    shown = await repl(workspace, summarizing_model(requests), keys)
    assert "Traceback" not in shown
    seen = [(s["hook_event_name"], s.get("trigger") or s.get("source")) for s in records(log)]
    assert seen == [("PreCompact", "manual"), ("SessionStart", "compact")]
    assert records(log)[0]["custom_instructions"] == "keep the names"
    assert any(not r.tools for r in requests)  # the summary was asked for


async def test_a_precompact_hook_that_blocks_keeps_the_conversation_whole(
    workspace: Path, tmp_path: Path
) -> None:
    hook = script(tmp_path / "no.sh", "echo 'not before the release' >&2\nexit 2\n")
    user_hooks("[context]\nkeep_recent = 1\n", hook_table("PreCompact", str(hook)))
    requests: list[ModelRequest] = []
    shown = await repl(workspace, summarizing_model(requests), "one\rtwo\r/compact\r/exit\r")
    assert "not before the release" in shown
    assert all(r.tools for r in requests)  # no summary was asked for
