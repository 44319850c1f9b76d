"""PreToolUse, PostToolUse and PostToolUseFailure hooks in `agentcli run` (in-process, against
the fake Messages API), with real hook scripts: what they see on stdin, and what each exit code
and JSON decision does to the call and to what the model is told."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text, tool_use
from tests.hooks.conftest import (
    hook_table,
    logging_hook,
    python_hook,
    records,
    run_json,
    script,
    user_hooks,
)


def tool_result(server: FakeMessagesServer, request: int, call_id: str) -> dict[str, object]:
    """The tool_result block for `call_id` in the `request`-th request's last message."""
    content = server.requests[request].body["messages"][-1]["content"]
    return next(b for b in content if b.get("tool_use_id") == call_id)


def texts_of(server: FakeMessagesServer, request: int) -> list[str]:
    """The text blocks of the `request`-th request's last message (what goes with results)."""
    content = server.requests[request].body["messages"][-1]["content"]
    return [b["text"] for b in content if b.get("type") == "text"]


def test_pre_tool_use_sees_claude_codes_fields_and_exit_2_blocks_the_call(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "pre.jsonl"
    hook = logging_hook(
        tmp_path / "pre.py",
        log,
        "print('no writes to a.txt today', file=sys.stderr)\nsys.exit(2)\n",
    )
    user_hooks(hook_table("PreToolUse", str(hook), matcher="Write|Edit"))
    server.push(
        stream_message([tool_use("write_file", {"path": "a.txt", "content": "x"}, id="w1")]),
        stream_message([text("I could not write it.")]),
    )
    proc, result = run_json(workspace, server, "write a.txt", "--permission-mode", "accept-edits")
    assert proc.returncode == 0, proc.stderr
    assert not (workspace / "a.txt").exists()  # the call never ran
    [seen] = records(log)
    assert seen["hook_event_name"] == "PreToolUse"
    assert seen["tool_name"] == "write_file" and seen["tool_use_id"] == "w1"
    assert seen["tool_input"] == {"path": "a.txt", "content": "x"}
    assert seen["cwd"] == str(workspace.resolve()) and seen["session_id"] == result["session_id"]
    assert seen["permission_mode"] == "acceptEdits"  # Claude Code's name for the mode
    assert seen["env"] == {
        "AGENTCLI_PROJECT_DIR": str(workspace.resolve()),
        "CLAUDE_PROJECT_DIR": str(workspace.resolve()),
        "AGENTCLI_SESSION_ID": result["session_id"],
    }
    blocked = tool_result(server, 1, "w1")
    assert blocked["is_error"] is True
    assert "no writes to a.txt today" in str(blocked["content"])
    assert result["tool_calls"][0]["status"] == "denied"
    assert result["hook_blocks"] == [
        {
            "event": "PreToolUse",
            "hook": str(hook),
            "source": "user",
            "reason": "no writes to a.txt today",
            "tool": "write_file",
            "call_id": "w1",
        }
    ]
    assert result["permission_denials"] == []  # a hook's block is not a permission denial


def test_a_matcher_that_does_not_match_runs_nothing(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "pre.jsonl"
    hook = logging_hook(tmp_path / "pre.py", log, "sys.exit(2)\n")
    user_hooks(hook_table("PreToolUse", str(hook), matcher="Bash"))
    (workspace / "a.txt").write_text("a\n")
    server.push(
        stream_message([tool_use("read_file", {"path": "a.txt"}, id="r1")]),
        stream_message([text("read")]),
    )
    proc, result = run_json(workspace, server, "read a.txt")
    assert proc.returncode == 0 and result["tool_calls"][0]["status"] == "succeeded"
    assert records(log) == []


def test_json_deny_beats_ask_beats_allow_whatever_the_order(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path
) -> None:
    def decides(name: str, decision: str) -> str:
        body = (
            "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', "
            f"'permissionDecision': {decision!r}, "
            f"'permissionDecisionReason': 'the {name} hook says {decision}'}}}}))\n"
        )
        return hook_table("PreToolUse", str(python_hook(tmp_path / f"{name}.py", body)))

    user_hooks(decides("a", "allow"), decides("b", "deny"), decides("c", "ask"))
    server.push(
        stream_message([tool_use("shell", {"command": "echo hi"}, id="s1")]),
        stream_message([text("ok")]),
    )
    proc, result = run_json(workspace, server, "say hi")
    assert proc.returncode == 0, proc.stderr
    assert "the b hook says deny" in str(tool_result(server, 1, "s1")["content"])
    assert [b["hook"] for b in result["hook_blocks"]] == [str(tmp_path / "b.py")]


def test_a_hooks_ask_makes_an_allowed_call_ask_and_no_one_can_answer_headless(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "a.txt").write_text("a\n")
    body = (
        "print(json.dumps({'hookSpecificOutput': {'permissionDecision': 'ask', "
        "'permissionDecisionReason': 'a person should look at this read'}}))\n"
    )
    user_hooks(hook_table("PreToolUse", str(python_hook(tmp_path / "ask.py", body))))
    server.push(
        stream_message([tool_use("read_file", {"path": "a.txt"}, id="r1")]),
        stream_message([text("could not")]),
    )
    _proc, result = run_json(workspace, server, "read a.txt")
    assert result["tool_calls"][0]["status"] == "denied"
    [denial] = result["permission_denials"]
    assert "a person should look at this read" in denial["reason"]
    assert "no terminal" in denial["reason"]


def test_a_hooks_allow_skips_the_question_but_not_a_deny_rule_and_commands_stay_sandboxed(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path
) -> None:
    allow = python_hook(
        tmp_path / "allow.py",
        "print(json.dumps({'hookSpecificOutput': {'permissionDecision': 'allow'}}))\n",
    )
    user_hooks(hook_table("PreToolUse", str(allow)))
    server.push(
        stream_message(
            [
                # Default mode asks before a write; the hook's allow answers for the user.
                tool_use("write_file", {"path": "new.txt", "content": "made\n"}, id="w1"),
                # A deny rule still wins.
                tool_use("shell", {"command": "rm -f new.txt"}, id="s1"),
            ]
        ),
        # Allowed by the hook, but still in the sandbox: it cannot write outside.
        stream_message(
            [tool_use("shell", {"command": f"touch {tmp_path}/escaped; touch inside"}, id="s2")]
        ),
        stream_message([text("done")]),
    )
    _proc, result = run_json(workspace, server, "go", "--deny", "shell(rm *)")
    assert (workspace / "new.txt").read_text() == "made\n"
    statuses = {call["id"]: call["status"] for call in result["tool_calls"]}
    assert statuses["w1"] == "succeeded" and statuses["s1"] == "denied"
    assert "denied by the rule shell(rm *)" in result["permission_denials"][0]["reason"]
    from tests.hooks.conftest import sandbox_works

    if sandbox_works():
        assert not (tmp_path / "escaped").exists()
        assert (workspace / "inside").exists()


def test_updated_input_replaces_the_whole_input_and_is_validated_like_the_models(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path
) -> None:
    rewrite = python_hook(
        tmp_path / "rewrite.py",
        "inp = data['tool_input']\n"
        "if inp['path'] == 'good.txt':\n"
        "    new = {'path': 'rewritten.txt', 'content': inp['content'].upper()}\n"
        "else:\n"
        "    new = {'path': 'x.txt', 'contents': 'a typo in the field name'}\n"
        "print(json.dumps({'hookSpecificOutput': {'permissionDecision': 'allow', "
        "'updatedInput': new}}))\n",
    )
    user_hooks(hook_table("PreToolUse", str(rewrite), matcher="write_file"))
    server.push(
        stream_message(
            [
                tool_use("write_file", {"path": "good.txt", "content": "shout\n"}, id="w1"),
                tool_use("write_file", {"path": "bad.txt", "content": "x"}, id="w2"),
            ]
        ),
        stream_message([text("done")]),
    )
    _proc, result = run_json(workspace, server, "write")
    assert (workspace / "rewritten.txt").read_text() == "SHOUT\n"
    assert not (workspace / "good.txt").exists() and not (workspace / "x.txt").exists()
    calls = {call["id"]: call for call in result["tool_calls"]}
    assert calls["w1"]["input"] == {"path": "rewritten.txt", "content": "SHOUT\n"}
    assert calls["w2"]["status"] == "failed"
    refused = str(tool_result(server, 1, "w2")["content"])
    assert "invalid_arguments" in refused and "unknown field 'contents'" in refused
    assert "the input the PreToolUse hook" in refused


def test_post_tool_use_sees_the_response_and_its_context_and_block_reach_the_model(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "post.jsonl"
    post = logging_hook(
        tmp_path / "post.py",
        log,
        "print(json.dumps({'decision': 'block', 'reason': 'run the formatter next time', "
        "'hookSpecificOutput': {'hookEventName': 'PostToolUse', "
        "'additionalContext': 'the file is formatted with black'}}))\n",
    )
    user_hooks(hook_table("PostToolUse", str(post), matcher="Write"))
    server.push(
        stream_message([tool_use("write_file", {"path": "a.py", "content": "x=1\n"}, id="w1")]),
        stream_message([text("ok")]),
    )
    _proc, result = run_json(workspace, server, "write", "--permission-mode", "accept-edits")
    assert result["tool_calls"][0]["status"] == "succeeded"
    [seen] = records(log)
    assert seen["hook_event_name"] == "PostToolUse" and seen["tool_use_id"] == "w1"
    assert seen["tool_response"] == {
        "content": "created a.py (1 lines, 4 bytes)",
        "path": "a.py",
        "bytes": 4,
        "created": True,
    }
    told = "\n".join(texts_of(server, 1))
    assert "run the formatter next time" in told and "formatted with black" in told
    assert result["hook_blocks"][0]["event"] == "PostToolUse"


def test_post_tool_use_exit_2_tells_the_model_and_failure_fires_for_failed_calls(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "failed.jsonl"
    lint = script(tmp_path / "lint.sh", "#!/bin/bash\necho 'lint: 3 problems' >&2\nexit 2\n")
    failed = logging_hook(tmp_path / "failed.py", log)
    user_hooks(
        hook_table("PostToolUse", str(lint), matcher="shell"),
        hook_table("PostToolUseFailure", str(failed)),
    )
    server.push(
        stream_message(
            [
                tool_use("shell", {"command": "ls"}, id="s1"),
                tool_use("read_file", {"path": "missing.txt"}, id="r1"),
            ]
        ),
        stream_message([text("ok")]),
    )
    _proc, _result = run_json(workspace, server, "look")
    told = "\n".join(texts_of(server, 1))
    assert "lint: 3 problems" in told
    [seen] = records(log)
    assert seen["hook_event_name"] == "PostToolUseFailure" and seen["tool_use_id"] == "r1"
    assert "not_found" in seen["error"] or "not found" in seen["error"].lower()


def test_continue_false_in_pre_tool_use_ends_the_task_with_exit_1(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path
) -> None:
    stop = python_hook(
        tmp_path / "stop.py",
        "print(json.dumps({'continue': False, 'stopReason': 'the release freeze is on'}))\n",
    )
    user_hooks(hook_table("PreToolUse", str(stop)))
    server.push(
        stream_message(
            [
                tool_use("shell", {"command": "touch one"}, id="s1"),
                tool_use("shell", {"command": "touch two"}, id="s2"),
            ]
        )
    )
    proc, result = run_json(workspace, server, "go", "--permission-mode", "auto")
    assert proc.returncode == 1
    assert result["terminal_reason"] == "hook_stopped" and result["task_state"] == "failed"
    assert "the release freeze is on" in result["error"]
    assert {call["status"] for call in result["tool_calls"]} == {"not_executed"}
    assert not (workspace / "one").exists()


def test_continue_false_in_post_tool_use_ends_the_task_after_the_batch(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path
) -> None:
    stop = python_hook(
        tmp_path / "stop.py",
        "print(json.dumps({'continue': False, 'stopReason': 'enough for today'}))\n",
    )
    user_hooks(hook_table("PostToolUse", str(stop)))
    server.push(stream_message([tool_use("shell", {"command": "touch made"}, id="s1")]))
    proc, result = run_json(workspace, server, "go", "--permission-mode", "auto")
    assert proc.returncode == 1 and result["terminal_reason"] == "hook_stopped"
    assert (workspace / "made").exists()  # it ran; the task stopped after it
    assert result["error"] == f"stopped by the PostToolUse hook `{stop}`: enough for today"
    assert len(server.requests) == 1


@pytest.mark.parametrize("kind", ["exit 1", "not json", "wrong type", "timeout"])
def test_a_failing_hook_is_a_notice_and_blocks_nothing(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path, kind: str
) -> None:
    bodies = {
        "exit 1": "#!/bin/bash\necho 'policy server unreachable' >&2\nexit 1\n",
        "not json": "#!/bin/bash\necho '{not json'\n",
        "wrong type": '#!/bin/bash\necho \'{"continue": "no"}\'\n',
        "timeout": "#!/bin/bash\nsleep 30\n",
    }
    hook = script(tmp_path / "hook.sh", bodies[kind])
    user_hooks(hook_table("PreToolUse", str(hook), timeout=1))
    server.push(
        stream_message([tool_use("shell", {"command": "echo ran"}, id="s1")]),
        stream_message([text("ok")]),
    )
    proc, result = run_json(workspace, server, "go")
    assert proc.returncode == 0, proc.stderr
    assert result["tool_calls"][0]["status"] == "succeeded"
    assert result["hook_blocks"] == []
    assert f"PreToolUse hook `{hook}` (user) failed" in proc.stderr
    assert "nothing was blocked" in proc.stderr
    expected = {
        "exit 1": "exited 1: policy server unreachable",
        "not json": "not valid hook JSON",
        "wrong type": "`continue`",
        "timeout": "longer than its timeout",
    }
    assert expected[kind] in proc.stderr


def test_an_identical_handler_at_two_levels_runs_once(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path
) -> None:
    from agentcli.trust import set_trusted
    from tests.hooks.conftest import project_hooks

    log = tmp_path / "once.jsonl"
    hook = logging_hook(tmp_path / "once.py", log)
    table = hook_table("PreToolUse", str(hook))
    user_hooks(table, hook_table("PreToolUse", str(hook), matcher="shell"))
    project_hooks(workspace, table, local=True)
    set_trusted(workspace, True)
    server.push(
        stream_message([tool_use("shell", {"command": "echo hi"}, id="s1")]),
        stream_message([text("ok")]),
    )
    run_json(workspace, server, "go")
    assert len(records(log)) == 1


def test_hook_output_reaches_the_terminal_escaped(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path
) -> None:
    from tests.hooks.conftest import cli

    evil = script(
        tmp_path / "evil.sh",
        "#!/bin/bash\nprintf '\\033]0;pwned\\007\\033[2J\\xe2\\x80\\xae reason' >&2\nexit 2\n",
    )
    user_hooks(hook_table("PreToolUse", str(evil)))
    server.push(
        stream_message([tool_use("shell", {"command": "echo hi"}, id="s1")]),
        stream_message([text("ok")]),
    )
    proc = cli("run", "go", server=server, cwd=workspace)
    assert "\x1b" not in proc.stderr and "\u202e" not in proc.stderr
    assert "\\x1b]0;pwned" in proc.stderr and "\\u202e" in proc.stderr
    # The model gets the exact text (the API takes it as data).
    assert "\x1b]0;pwned\x07\x1b[2J\u202e reason" in str(tool_result(server, 1, "s1")["content"])
