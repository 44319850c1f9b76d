"""`agentcli run` with skills and commands, against the fake Messages API: the first request
lists the skills and offers the `skill` tool, `/name args` expands (every substitution) and is
journaled with the command it came from, shell lines run through the permission policy and the
sandbox (allowed, denied headless, never past a deny rule; arguments stay one word), and the
model's `skill` tool returns a skill and grants its `allowed-tools` for that task only."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text, tool_use
from tests.skills.layout import command, everyday, simple_skill, skill, write
from tests.test_cli_run import cli, result_of


@pytest.fixture
def server() -> Iterator[FakeMessagesServer]:
    with FakeMessagesServer() as fake:
        yield fake
        assert fake.pairing_problems() == []


def sent(server: FakeMessagesServer, request: int = 0) -> str:
    """The first user message's text of a request."""
    return str(server.requests[request].body["messages"][0]["content"][0]["text"])


def exported(workspace: Path, session_id: str) -> dict[str, Any]:
    proc = cli("sessions", "export", session_id, server=None, cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def run_json(server: FakeMessagesServer, workspace: Path, *args: str) -> dict[str, Any]:
    proc = cli("run", *args, "--output-format", "json", server=server, cwd=workspace)
    data = result_of(proc)
    data["_stderr"] = proc.stderr
    data["_code"] = proc.returncode
    return data


def test_the_first_request_lists_the_skills_and_offers_the_tool(
    server: FakeMessagesServer, workspace: Path, home: Path
) -> None:
    everyday(workspace, home)
    server.push(stream_message([text("ok")]))
    assert run_json(server, workspace, "hello")["_code"] == 0
    body = server.requests[0].body
    system = json.dumps(body["system"])
    for line in (
        "- code-review: Review code for bugs, security and style.",
        "- pdf: Extract text and tables from PDF files",
        "- git:commit: Commit the staged changes",
        "- commit-push-pr: Commit, push, and open a PR",
        "- fix-issue: Fix a GitHub issue",
    ):
        assert line in system
    assert "draftpr" not in system  # a Codex prompt is the user's
    assert "skill" in [tool["name"] for tool in body["tools"]]


def test_no_skills_no_tool_and_no_section(server: FakeMessagesServer, workspace: Path) -> None:
    server.push(stream_message([text("ok")]))
    assert run_json(server, workspace, "hello")["_code"] == 0
    body = server.requests[0].body
    assert "skill" not in [tool["name"] for tool in body["tools"]]
    assert "Skills:" not in json.dumps(body["system"])


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        ("/git:commit fix the login", "Commit the staged changes with the message: fix the login"),
        ("/fix-issue 123 high", "Fix issue #123 with priority high. Follow the coding standards."),
        (
            '/draftpr feature/x "Add login"',
            'Create a branch named `feature/x`, then open a draft PR titled "Add login" '
            "($5 budget).",
        ),
        (
            "/prompts:draftpr a b",
            'Create a branch named `a`, then open a draft PR titled "b" ($5 budget).',
        ),
        (
            "/code-review src/app.py",
            "Review the change carefully. List real bugs first.\n\nARGUMENTS: src/app.py",
        ),
    ],
)
def test_a_command_is_expanded_and_journaled_with_its_origin(
    server: FakeMessagesServer, workspace: Path, home: Path, task: str, expected: str
) -> None:
    everyday(workspace, home)
    server.push(stream_message([text("done")]))
    data = run_json(server, workspace, task)
    assert data["_code"] == 0, data["_stderr"]
    prompt = sent(server)
    assert expected in prompt
    recorded = exported(workspace, data["session_id"])["tasks"][0]
    assert recorded["prompt"] == prompt  # the expanded prompt is the task's prompt
    name, _, arguments = task.partition(" ")
    assert recorded["command"]["name"] == ("/draftpr" if "prompts:" in name else name)
    assert recorded["command"]["arguments"] == arguments
    assert Path(recorded["command"]["path"]).is_file()


def test_a_skill_is_sent_with_its_directory_and_files(
    server: FakeMessagesServer, workspace: Path, home: Path
) -> None:
    everyday(workspace, home)
    server.push(stream_message([text("done")]))
    assert run_json(server, workspace, "/pdf report.pdf")["_code"] == 0
    prompt = sent(server)
    directory = workspace / ".claude" / "skills" / "pdf"
    assert prompt.startswith(f'<skill name="pdf" directory="{directory}">\n# PDF Processing Guide')
    assert f"{directory}/scripts/extract.py report.pdf" in prompt
    assert "REFERENCE.md, references/FORMS.md, scripts/extract.py" in prompt
    assert prompt.endswith("</skill>")


def test_piped_context_follows_the_expanded_command(
    server: FakeMessagesServer, workspace: Path, home: Path
) -> None:
    everyday(workspace, home)
    server.push(stream_message([text("done")]))
    proc = cli("run", "/git:commit wip", server=server, cwd=workspace, stdin="diff --git a b")
    assert proc.returncode == 0, proc.stderr
    assert sent(server) == (
        "Commit the staged changes with the message: wip\n\n<stdin>\ndiff --git a b\n</stdin>"
    )


PRINTF_COMMAND = """\
---
description: Show the arguments
allowed-tools: Bash(printf:*)
---
Seen: !`printf '%s|' $ARGUMENTS`
"""


def test_a_shell_line_allowed_by_allowed_tools_runs_before_the_prompt(
    server: FakeMessagesServer, workspace: Path, home: Path
) -> None:
    command(workspace / ".claude" / "commands", "show", PRINTF_COMMAND)
    canary = write(home / "canary.txt", "still here\n")
    server.push(stream_message([text("done")]))
    data = run_json(server, workspace, "/show x; rm -rf ~", "--trust-project")
    assert data["_code"] == 0, data["_stderr"]
    assert sent(server) == "Seen: x; rm -rf ~|"  # one word, as typed
    assert data["tool_calls"] == [
        {
            "id": data["tool_calls"][0]["id"],
            "name": "shell",
            "input": {"command": "printf '%s|' 'x; rm -rf ~'"},
            "status": "succeeded",
            "is_error": False,
        }
    ]
    assert canary.read_text() == "still here\n"


def test_a_shell_line_that_would_ask_is_denied_headless_and_nothing_is_sent(
    server: FakeMessagesServer, workspace: Path, home: Path
) -> None:
    # Untrusted workspace: the project file's allowed-tools grant nothing, so printf asks.
    command(workspace / ".claude" / "commands", "show", PRINTF_COMMAND)
    data = run_json(server, workspace, "/show hello")
    assert data["_code"] == 4 and data["terminal_reason"] == "permission_denied"
    assert server.requests == []  # the prompt was never sent
    assert data["error"].startswith("/show was not run: its shell line `printf '%s|' hello`")
    assert "shell(printf *)" in data["error"]  # the rule that would allow it
    assert data["tool_calls"][0]["status"] == "denied"
    assert data["permission_denials"][0]["tool"] == "shell"
    assert "grant nothing: this workspace is not trusted" in data["_stderr"]


def test_a_deny_rule_beats_allowed_tools(
    server: FakeMessagesServer, workspace: Path, home: Path
) -> None:
    command(home / ".claude" / "commands", "show", PRINTF_COMMAND)
    data = run_json(server, workspace, "/show hi", "--deny", "shell(printf *)")
    assert data["_code"] == 4 and server.requests == []
    assert "denied by the rule shell(printf *)" in data["error"]


def test_the_users_own_file_grants_without_trusting_the_workspace(
    server: FakeMessagesServer, workspace: Path, home: Path
) -> None:
    command(home / ".claude" / "commands", "show", PRINTF_COMMAND)
    server.push(stream_message([text("done")]))
    assert run_json(server, workspace, "/show a b")["_code"] == 0
    assert sent(server) == "Seen: a b|"


def test_a_failing_shell_line_shows_its_exit_code_and_the_task_goes_on(
    server: FakeMessagesServer, workspace: Path, home: Path
) -> None:
    command(
        home / ".claude" / "commands",
        "check",
        "---\nallowed-tools: Bash(ls:*)\n---\nListing:\n```!\nls no-such-file\n```\nFix it.\n",
    )
    server.push(stream_message([text("done")]))
    assert run_json(server, workspace, "/check")["_code"] == 0
    prompt = sent(server)
    assert prompt.startswith("Listing:\nexit code 2; ")
    assert "No such file or directory" in prompt and prompt.endswith("Fix it.")


def test_a_typo_of_a_command_is_a_usage_error_and_other_slashes_are_tasks(
    server: FakeMessagesServer, workspace: Path, home: Path
) -> None:
    everyday(workspace, home)
    proc = cli("run", "/git:comit fix", server=server, cwd=workspace)
    assert proc.returncode == 2 and "did you mean /git:commit?" in proc.stderr
    assert server.requests == []
    server.push(stream_message([text("ok")]), stream_message([text("ok")]))
    assert cli("run", "/tmp is full", server=server, cwd=workspace).returncode == 0
    assert sent(server) == "/tmp is full"
    assert cli("run", " /git:comit", server=server, cwd=workspace).returncode == 0
    assert sent(server, 1) == " /git:comit"


def test_a_commands_model_and_effort_apply_to_its_task_only(
    server: FakeMessagesServer, workspace: Path, home: Path
) -> None:
    command(
        workspace / ".claude" / "commands",
        "quick",
        "---\nmodel: haiku\neffort: low\n---\nBe quick.\n",
    )
    server.push(stream_message([text("fast")]), stream_message([text("slow")]))
    data = run_json(server, workspace, "/quick")
    assert data["_code"] == 0 and data["model"] == "claude-haiku-5-5"
    assert server.requests[0].body["model"] == "claude-haiku-5-5"
    again = run_json(server, workspace, "--continue", "and now?")
    assert again["model"] == "claude-opus-5-5"
    assert server.requests[1].body["model"] == "claude-opus-5-5"


def test_broken_files_never_block_the_start(
    server: FakeMessagesServer, workspace: Path, home: Path
) -> None:
    everyday(workspace, home)
    (workspace / ".claude" / "commands" / "latin1.md").write_bytes(b"caf\xe9\n")
    write(workspace / ".claude" / "commands" / "broken.md", "---\nnever: closed\n")
    server.push(stream_message([text("ok")]))
    data = run_json(server, workspace, "/git:commit x")
    assert data["_code"] == 0
    assert "skipped .claude/commands/latin1.md: it is not UTF-8 text" in data["_stderr"]
    assert "skipped .claude/commands/broken.md: its frontmatter" in data["_stderr"]


def test_the_skill_tool_returns_the_skill_and_grants_its_tools_for_that_task(
    server: FakeMessagesServer, workspace: Path, home: Path
) -> None:
    directory = home / ".claude" / "skills" / "stamp"
    skill(
        home / ".claude" / "skills",
        "stamp",
        simple_skill(
            "stamp",
            "Stamp files.",
            "Run !`printf stamped` then read references/HOW.md.",
            **{"allowed-tools": "Bash(printf:*)"},
        ),
        {"references/HOW.md": "Stamp with care.\n"},
    )
    server.push(
        stream_message([tool_use("skill", {"name": "stamp", "arguments": "a.txt"}, id="s1")]),
        stream_message(
            [tool_use("read_file", {"path": f"{directory}/references/HOW.md"}, id="r1")]
        ),
        stream_message([tool_use("shell", {"command": "printf stamped"}, id="c1")]),
        stream_message([text("stamped")]),
        stream_message([tool_use("shell", {"command": "printf stamped"}, id="c2")]),
        stream_message([text("denied this time")]),
    )
    first = run_json(server, workspace, "stamp a.txt")
    assert first["_code"] == 0, first["_stderr"]
    assert [(c["name"], c["status"]) for c in first["tool_calls"]] == [
        ("skill", "succeeded"),
        ("read_file", "succeeded"),  # a user skill's directory is readable
        ("shell", "succeeded"),  # granted by the skill for this task
    ]
    results = [
        block
        for message in server.requests[3].body["messages"]
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    loaded = results[0]["content"]
    loaded = loaded if isinstance(loaded, str) else loaded[0]["text"]
    assert loaded.startswith(f'<skill name="stamp" directory="{directory}">')
    assert "(the output of `printf stamped`: run it with the shell tool)" in loaded
    assert "references/HOW.md" in loaded and "Bash(printf *)" in loaded
    assert "Stamp with care." in json.dumps(results[1])
    second = run_json(server, workspace, "--continue", "stamp again")
    assert [c["status"] for c in second["tool_calls"]] == ["denied"]  # the grant ended


def test_the_skill_tool_refuses_what_the_model_may_not_load(
    server: FakeMessagesServer, workspace: Path, home: Path
) -> None:
    skills = workspace / ".claude" / "skills"
    skill(skills, "open", simple_skill("open", "Open."))
    skill(skills, "mine", simple_skill("mine", "Mine.", **{"disable-model-invocation": "true"}))
    server.push(
        stream_message([tool_use("skill", {"name": "mine"}, id="s1")]),
        stream_message([text("ok")]),
    )
    data = run_json(server, workspace, "go")
    assert data["tool_calls"][0]["is_error"]
    result = server.requests[1].body["messages"][-1]["content"][0]
    assert "there is no skill 'mine'; skills: open" in json.dumps(result)


def test_a_git_workspace_runs_the_claude_code_command_as_written(
    server: FakeMessagesServer, workspace: Path, home: Path
) -> None:
    everyday(workspace, home)
    subprocess.run(["git", "init", "-q", "-b", "main", str(workspace)], check=True)
    write(workspace / "a.py", "print(1)\n")
    server.push(stream_message([text("done")]))
    # `git status` is one of the read-only commands that never ask; `git branch` is not, and
    # the file's allowed-tools do not name it: a rule of the user's allows it.
    allow = ("--allow", "shell(git branch --show-current)")
    data = run_json(server, workspace, "/commit-push-pr", "--trust-project", *allow)
    assert data["_code"] == 0, data["_stderr"]
    prompt = sent(server)
    assert "- Current git status: ?? .agents/\n?? .claude/\n?? a.py\n" in prompt
    assert "- Current branch: main\n" in prompt
    assert [c["input"]["command"] for c in data["tool_calls"]] == [
        "git status --short",
        "git branch --show-current",
    ]


def test_a_user_skills_files_are_readable_and_its_scripts_run_in_the_sandbox(
    server: FakeMessagesServer, workspace: Path, home: Path
) -> None:
    """A skill installed once in ~/.agents/skills and linked into the project's .claude/."""
    original = home / ".agents" / "skills" / "greet"
    skill(
        home / ".agents" / "skills",
        "greet",
        simple_skill("greet", "Greet.", "Run scripts/hello.sh; see references/TONE.md."),
        {"scripts/hello.sh": "printf 'hello from the skill'\n", "references/TONE.md": "Warm.\n"},
    )
    (workspace / ".claude" / "skills").mkdir(parents=True)
    (workspace / ".claude" / "skills" / "greet").symlink_to(original)
    linked = workspace / ".claude" / "skills" / "greet"
    server.push(
        stream_message([tool_use("read_file", {"path": f"{linked}/references/TONE.md"})]),
        stream_message([tool_use("shell", {"command": f"bash {original}/scripts/hello.sh"})]),
        stream_message([text("greeted")]),
    )
    data = run_json(server, workspace, "/greet", "--allow", "shell(bash *)")
    assert data["_code"] == 0, data["_stderr"]
    assert [c["status"] for c in data["tool_calls"]] == ["succeeded", "succeeded"]
    outputs = json.dumps(server.requests[2].body["messages"])
    assert "Warm." in outputs and "hello from the skill" in outputs
