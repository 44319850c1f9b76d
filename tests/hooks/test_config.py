"""Hook configuration and the pieces of the protocol on their own: `[[hooks.EVENT]]` at every
level (they add up; mistakes are errors naming the file), matchers (Claude Code's rule on
agentcli's tool names and Claude Code's), what a hook's exit code and output mean, and the
digest an approval binds."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentcli.config import load_settings
from agentcli.errors import ConfigError
from agentcli.hook_entry import Handler, MatcherGroup, named_files
from agentcli.hooks.catalog import HookDef, Source, set_digest
from agentcli.hooks.matcher import matches
from agentcli.hooks.protocol import Ran, read_reply
from agentcli.trust import set_trusted
from agentcli.vocabulary import Decision
from tests.hooks.conftest import hook_table, project_hooks, user_hooks

# -- configuration -----------------------------------------------------------------------------


def test_hooks_add_up_across_the_levels(workspace: Path) -> None:
    user_hooks(hook_table("PreToolUse", "user-check", matcher="shell"))
    project_hooks(workspace, hook_table("PreToolUse", "team-check", matcher="Write|Edit"))
    project_hooks(workspace, hook_table("Stop", "mine", timeout=5), local=True)
    set_trusted(workspace, True)
    settings = load_settings(workspace)
    assert [g.hooks[0].command for g in settings.hooks.PreToolUse] == ["user-check", "team-check"]
    assert settings.hooks.Stop[0].hooks[0].timeout == 5.0
    levels = [(origin.path, event) for origin, event, _groups in settings.hook_levels()]
    assert [event for _path, event in levels] == ["PreToolUse", "PreToolUse", "Stop"]


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        (
            "[[hooks.PreToolUs]]\nhooks = []\n",
            "unknown key `hooks.PreToolUs` (did you mean `hooks.PreToolUse`?)",
        ),
        (
            '[[hooks.Stop]]\nhooks = [{ type = "command", comand = "x" }]\n',
            "did you mean `hooks.Stop.hooks.command`?",
        ),
        ('[[hooks.Stop]]\nhooks = [{ type = "http", command = "x" }]\n', "hooks.Stop"),
        ('[[hooks.Stop]]\nhooks = [{ type = "command", command = "" }]\n', "hooks.Stop"),
        ('[[hooks.Stop]]\nhooks = [{ type = "command", command = "x", timeout = 0 }]\n', "timeout"),
        (
            '[[hooks.PreToolUse]]\nmatcher = "(unclosed"\n'
            'hooks = [{ type = "command", command = "x" }]\n',
            "not a regular expression",
        ),
        ("[[hooks.Stop]]\nhooks = []\n", "hooks.Stop"),
    ],
)
def test_a_mistake_is_an_error_naming_the_file(workspace: Path, toml: str, message: str) -> None:
    path = user_hooks(toml)
    with pytest.raises(ConfigError) as caught:
        load_settings(workspace)
    assert str(path) in caught.value.message and message in caught.value.message


def test_named_files_are_the_workspace_files_a_command_runs(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "scripts").mkdir()
    (workspace / "scripts" / "check.sh").write_text("")
    (workspace / "hook.py").write_text("")
    (tmp_path / "outside.sh").write_text("")
    resolved = workspace.resolve()
    assert named_files("scripts/check.sh --strict", workspace) == [resolved / "scripts/check.sh"]
    assert named_files("python3 $CLAUDE_PROJECT_DIR/hook.py", workspace) == [resolved / "hook.py"]
    assert named_files('python3 "${AGENTCLI_PROJECT_DIR}/hook.py"', workspace) == [
        resolved / "hook.py"
    ]
    assert named_files(f"bash {tmp_path}/outside.sh", workspace) == []
    assert named_files("echo 'unclosed", workspace) == []


# -- matchers ----------------------------------------------------------------------------------

MATCHER_TABLE = [
    ("", "shell", True),
    ("*", "mcp__github__create_issue", True),
    ("shell", "shell", True),
    ("Bash", "shell", True),  # Claude Code's name for the same tool
    ("Write|Edit", "edit_file", True),
    ("Write, Edit", "write_file", True),
    ("Write|Edit", "read_file", False),
    ("Read", "read_file", True),
    ("Glob", "glob", True),
    ("Grep", "grep", True),
    ("bash", "shell", False),  # exact names are case-sensitive
    ("Edit.*", "edit_file", True),  # a regex: matches Claude Code's `Edit`
    ("mcp__memory__.*", "mcp__memory__save", True),
    ("mcp__memory", "mcp__memory__save", False),  # an exact name, as in Claude Code
    ("mcp__.*__create.*", "mcp__github__create_issue", True),
    ("^read", "read_file", True),
    ("file$", "shell", False),
    ("startup", "startup", True),
    ("startup|resume", "clear", False),
]


@pytest.mark.parametrize(("matcher", "subject", "expected"), MATCHER_TABLE)
def test_matcher_table(matcher: str, subject: str, expected: bool) -> None:
    assert matches(matcher, subject) is expected


NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_-", min_size=1, max_size=12)


@given(
    names=st.lists(NAMES, min_size=1, max_size=5),
    subject=NAMES,
    sep=st.sampled_from(["|", ",", " | ", ", "]),
)
def test_a_list_of_names_matches_exactly_its_members(
    names: list[str], subject: str, sep: str
) -> None:
    # Oracle: membership, spelled with none of the matcher's code (none of these lowercase
    # names is one of agentcli's tools with a Claude Code alias unless listed).
    aliases = {
        "shell": "Bash",
        "read_file": "Read",
        "write_file": "Write",
        "edit_file": "Edit",
        "glob": "Glob",
        "grep": "Grep",
    }
    listed = set(names)
    expected = subject in listed or aliases.get(subject) in listed
    assert matches(sep.join(names), subject) is expected


# -- the protocol --------------------------------------------------------------------------------


def ran(
    exit_code: int | None = 0, stdout: str = "", stderr: str = "", *, timed_out: bool = False
) -> Ran:
    return Ran(
        exit_code=exit_code, timed_out=timed_out, stdout=stdout, stderr=stderr, duration_s=0.1
    )


def test_exit_codes(tmp_path: Path) -> None:
    plain = read_reply("UserPromptSubmit", ran(0, "note this\n"), tmp_path)
    assert plain.context == "note this" and plain.problem is None and not plain.blocks
    assert read_reply("PreToolUse", ran(0, "note this\n"), tmp_path).context == ""
    blocked = read_reply("PreToolUse", ran(2, "", "no\n"), tmp_path)
    assert blocked.blocks and blocked.permission is Decision.DENY and blocked.reason == "no"
    assert read_reply("Stop", ran(2, "", "more\n"), tmp_path).permission is None
    one = read_reply("PreToolUse", ran(1, "", "oops\n"), tmp_path)
    assert one.problem == "it exited 1: oops" and not one.blocks
    late = read_reply("PreToolUse", ran(None, timed_out=True), tmp_path)
    assert late.problem is not None and "timeout" in late.problem


def test_json_output(tmp_path: Path) -> None:
    reply = read_reply(
        "PreToolUse",
        ran(
            0,
            '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",'
            ' "permissionDecisionReason": "check", "updatedInput": {"command": "ls -a"},'
            ' "additionalContext": "ctx"}, "systemMessage": "hi", "unknownField": 1}',
        ),
        tmp_path,
    )
    assert reply.permission is Decision.ASK and reply.reason == "check"
    assert reply.updated_input == {"command": "ls -a"} and reply.context == "ctx"
    assert reply.system_message == "hi" and reply.decision == "ask" and reply.problem is None
    legacy = read_reply("PreToolUse", ran(0, '{"decision": "approve"}'), tmp_path)
    assert legacy.permission is Decision.ALLOW
    stop = read_reply("Stop", ran(0, '{"continue": false, "stopReason": "why"}'), tmp_path)
    assert stop.stop == "why" and stop.decision == "stop"
    # Exit 2 takes its reason from the JSON if it has one.
    two = read_reply("PreToolUse", ran(2, '{"reason": "from json"}', "from stderr"), tmp_path)
    assert two.reason == "from json"
    assert read_reply("Stop", ran(0, '{"decision": "maybe"}'), tmp_path).problem is not None
    assert read_reply("Stop", ran(0, "{oops"), tmp_path).problem is not None


def test_every_text_is_capped_with_the_rest_spilled(tmp_path: Path) -> None:
    reply = read_reply("SessionStart", ran(0, "y" * 50_000), tmp_path)
    assert len(reply.context) < 10_700 and "of 50000 characters" in reply.context
    message = read_reply("Stop", ran(0, '{"systemMessage": "' + "z" * 20_000 + '"}'), tmp_path)
    assert len(message.system_message) < 10_700


# -- the digest ----------------------------------------------------------------------------------


def hook(command: str, event: str = "Stop", **handler: object) -> HookDef:
    return HookDef(
        event=event,
        matcher="",
        handler=Handler.model_validate({"type": "command", "command": command, **handler}),
        source=Source.PROJECT,
        origin=".agentcli/config.toml",
    )


def test_the_digest_binds_every_definition_and_not_their_order() -> None:
    a, b = hook("a"), hook("b")
    assert set_digest([a, b]) == set_digest([b, a])
    assert set_digest([a, b]) != set_digest([a, hook("b", timeout=5)])
    assert set_digest([a]) != set_digest([hook("a", event="PreToolUse")])
    assert set_digest([a]) != set_digest([hook("a", sandbox=True)])
    script = replace(a, files=(("a.sh", "0" * 64),))
    assert set_digest([script]) != set_digest([replace(a, files=(("a.sh", "1" * 64),))])


def test_a_group_model_round_trips() -> None:
    group = MatcherGroup.model_validate(
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]}
    )
    assert group.hooks[0].timeout_s == 60.0
