"""Skills and commands in the REPL, in-process on the real session core (a scripted model in
place of the API): `/name args` runs one, `/help` and Tab list them with their argument hints,
`/skills` shows every one with its state, a shell line that asks is asked (yes runs it, no
stops the command before anything is sent), and the REPL's own commands win their names."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from agentcli.events import EventSink
from agentcli.model import ModelRequest
from agentcli.paths import user_config_path
from agentcli.permissions import Prompter
from agentcli.session.live import LiveSession
from agentcli.session.options import SessionOptions
from agentcli.testing import FunctionModel, ScriptedModel, respond, text
from agentcli.ui.repl.app import Repl
from agentcli.ui.repl.backend import open_repl_session
from tests.skills.layout import command, everyday, simple_skill, skill

PRINTF = "---\ndescription: Echo it\nargument-hint: <words>\n---\nGot: !`printf '%s' $1`\n"


class Harness:
    def __init__(self, workspace: Path, model: ScriptedModel) -> None:
        self.out = io.StringIO()
        self.model = model
        self.workspace = workspace

    def build(self, options: SessionOptions, events: EventSink, prompter: Prompter) -> LiveSession:
        return open_repl_session(options, events, prompter, model_factory=lambda _name: self.model)

    async def run(self, keys: str, between: Callable[[], None] | None = None) -> str:
        """Type `keys` (with `between`, run once the session is open: after the first line)."""
        with create_pipe_input() as pipe:
            repl = Repl(
                SessionOptions(cwd=self.workspace),
                console=Console(file=self.out, width=100, markup=False, highlight=False),
                input=pipe,
                output=DummyOutput(),
                build=self.build,
            )
            self.repl = repl
            first, _, rest = keys.partition("\r")
            pipe.send_text(first + "\r")
            running = asyncio.create_task(repl.run())
            if between is not None:
                while repl.session_id is None and not running.done():
                    await asyncio.sleep(0.01)
                between()
            pipe.send_text(rest)
            assert await asyncio.wait_for(running, 30) == 0
        return self.out.getvalue()

    def sent(self, request: int = 0) -> str:
        asked: ModelRequest = self.model.requests[request]
        return asked.messages[-1].text


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")


async def test_slash_name_runs_a_command_and_help_lists_them(workspace: Path, home: Path) -> None:
    everyday(workspace, home)
    harness = Harness(workspace, ScriptedModel([respond(text("committed"))]))
    out = await harness.run("/help\r" + "/git:commit fix the login\r" + "/exit\r")
    assert "Custom commands and skills" in out
    assert "/git:commit [message]" in out and "Commit the staged changes" in out
    assert "/fix-issue [issue-number] [priority]\n" + " " * 27 + "Fix a GitHub issue" in out
    assert "/draftpr BRANCH=<name> TITLE=<title>" in out
    assert harness.sent() == "Commit the staged changes with the message: fix the login"
    assert "committed" in out
    first_system = harness.model.requests[0].system
    assert "- pdf: Extract text and tables from PDF files" in first_system


async def test_skills_lists_every_definition_with_its_state(workspace: Path, home: Path) -> None:
    everyday(workspace, home)
    command(home / ".claude" / "commands", "git:commit", "The user's own, hidden.\n")
    command(workspace / ".claude" / "commands", "help", "Never run: /help is the REPL's.\n")
    (workspace / ".claude" / "commands" / "bad.md").write_bytes(b"\xff\xfe")
    helper = simple_skill("helper", "For the model.", **{"user-invocable": "false"})
    skill(workspace / ".agentcli" / "skills", "helper", helper)
    harness = Harness(workspace, ScriptedModel([]))
    out = await harness.run("/skills\r" + "/help\r" + "/helper\r" + "/exit\r")
    assert "/helper  skill  .agentcli/skills/helper/SKILL.md\n    active (the model's only)" in out
    assert "unknown command /helper" in out  # the user cannot run it
    assert "/help (.claude/commands/help.md) is not run: the REPL's own /help wins" in out
    assert "/git:commit  command  .claude/commands/git/commit.md\n    active" in out
    assert "/git:commit  command  ~/.claude/commands/git/commit.md\n" in out
    assert "hidden by .claude/commands/git/commit.md" in out
    assert "hidden by the REPL's own /help" in out
    assert "/pdf  skill  .claude/skills/pdf/SKILL.md\n    active · Extract text" in out
    assert "skipped .claude/commands/bad.md: it is not UTF-8 text" in out
    assert "Show commands and keys." in out  # the built-in /help ran


async def test_a_shell_line_that_asks_runs_once_approved(workspace: Path, home: Path) -> None:
    command(workspace / ".claude" / "commands", "echo-it", PRINTF)
    harness = Harness(workspace, ScriptedModel([respond(text("seen"))]))
    out = await harness.run("/echo-it 'x; rm -rf ~'\r" + "y" + "/exit\r")
    assert "shell wants to run printf '%s' 'x; rm -rf ~'" in out
    assert harness.sent() == "Got: x; rm -rf ~"


async def test_a_shell_line_refused_stops_the_command(workspace: Path, home: Path) -> None:
    command(workspace / ".claude" / "commands", "echo-it", PRINTF)
    harness = Harness(workspace, ScriptedModel([]))
    out = await harness.run("/echo-it hello\r" + "n" + "\r" + "/exit\r")
    assert harness.model.requests == []  # nothing was sent
    assert "/echo-it was not run: its shell line `printf '%s' hello` was denied" in out
    assert "shell(printf *)" in out


async def test_tab_completes_custom_commands_with_their_hints(workspace: Path, home: Path) -> None:
    everyday(workspace, home)
    harness = Harness(workspace, ScriptedModel([]))
    await harness.run("/exit\r")
    completer = harness.repl.session.completer
    assert completer is not None
    found = list(completer.get_completions(Document("/gi"), CompleteEvent()))
    assert [c.text for c in found] == ["/git:commit"]
    assert found[0].display_text == "/git:commit [message]"
    assert found[0].display_meta_text == "Commit the staged changes"
    assert "/skills" in [
        c.text for c in completer.get_completions(Document("/sk"), CompleteEvent())
    ]


async def test_an_unknown_name_says_the_closest_command(workspace: Path, home: Path) -> None:
    everyday(workspace, home)
    harness = Harness(workspace, ScriptedModel([]))
    out = await harness.run("/git:comit x\r" + "/exit\r")
    assert "unknown command /git:comit (did you mean /git:commit?)" in out


async def test_a_command_file_gone_since_the_start_is_said_plainly(
    workspace: Path, home: Path
) -> None:
    gone = command(workspace / ".claude" / "commands", "gone", "Soon gone.\n")
    harness = Harness(workspace, ScriptedModel([]))

    def remove_then_run() -> None:
        gone.unlink()

    out = await harness.run("/skills\r" + "/gone\r" + "/exit\r", between=remove_then_run)
    assert "error: /gone: cannot read" in out and "internal error" not in out
    assert harness.model.requests == []


async def test_a_skill_used_is_sent_again_after_a_compaction(workspace: Path, home: Path) -> None:
    """Older turns are summarized away, but the skill's instructions the model was following
    come back verbatim after the summary (as Claude Code re-attaches invoked skills)."""
    body = "Always run the linter first.\nThen write the changelog entry."
    skill(
        workspace / ".agents" / "skills", "release", simple_skill("release", "Cut a release", body)
    )
    user_config_path().parent.mkdir(parents=True, exist_ok=True)
    user_config_path().write_text("[context]\nkeep_recent = 1\n")

    def answer(request: ModelRequest) -> Any:
        return respond(text("a summary" if not request.tools else "ok"))

    model = FunctionModel(answer)
    harness = Harness(workspace, model)  # type: ignore[arg-type]
    keys = "/release now\rsecond\rthird\r/compact\rafter\r/exit\r"
    out = await harness.run(keys)
    assert "compacted (manual)" in out, out
    after = model.requests[-1].messages[0].text
    assert "a summary" in after and "The skill release, as last loaded" in after
    assert "Always run the linter first." in after
