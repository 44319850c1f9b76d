"""SessionStart, UserPromptSubmit, Stop and SessionEnd hooks in `agentcli run` (in-process,
against the fake Messages API): context the model sees, prompts that are never sent, a model
sent back to work (at most 8 times in a row), the order of Stop hooks and acceptance checks, and
what is recorded (journal, stream-json, text mode, the transcript)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from agentcli.paths import data_home
from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text, tool_use
from tests.hooks.conftest import (
    cli,
    hook_table,
    logging_hook,
    python_hook,
    records,
    run_json,
    script,
    user_hooks,
)


def sent_prompt(server: FakeMessagesServer, request: int = 0) -> list[str]:
    """The text blocks of the first user message of a request."""
    first = server.requests[request].body["messages"][-1]
    return [b["text"] for b in first["content"] if b.get("type") == "text"]


def test_session_start_and_prompt_context_go_to_the_model_with_the_prompt(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "events.jsonl"
    start = logging_hook(tmp_path / "start.py", log, "print('branch main is frozen')\n")
    prompt = logging_hook(
        tmp_path / "prompt.py",
        log,
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'UserPromptSubmit', "
        "'additionalContext': 'ticket ABC-1 is about ' + data['prompt']}}))\n",
    )
    end = logging_hook(tmp_path / "end.py", log)
    user_hooks(
        hook_table("SessionStart", str(start), matcher="startup"),
        hook_table("SessionStart", str(start) + " --never", matcher="resume"),
        hook_table("UserPromptSubmit", str(prompt)),
        hook_table("SessionEnd", str(end)),
    )
    server.push(stream_message([text("noted")]))
    proc, _result = run_json(workspace, server, "the login bug")
    assert proc.returncode == 0, proc.stderr
    blocks = sent_prompt(server)
    assert blocks[0] == "the login bug"  # the prompt itself is untouched
    assert (
        "branch main is frozen" in blocks[1] and "ticket ABC-1 is about the login bug" in blocks[1]
    )
    seen = records(log)
    assert [s["hook_event_name"] for s in seen] == [
        "SessionStart",
        "UserPromptSubmit",
        "SessionEnd",
    ]
    assert seen[0]["source"] == "startup" and seen[0]["model"] == "claude-opus-5-5"
    assert seen[1]["prompt"] == "the login bug"
    assert seen[2]["reason"] == "other"


def test_a_resumed_session_starts_with_source_resume(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "start.jsonl"
    start = logging_hook(tmp_path / "start.py", log)
    user_hooks(hook_table("SessionStart", str(start)))
    server.push(stream_message([text("one")]), stream_message([text("two")]))
    run_json(workspace, server, "first")
    run_json(workspace, server, "--continue", "second")
    assert [s["source"] for s in records(log)] == ["startup", "resume"]


def test_a_blocked_prompt_is_never_sent_and_the_task_fails(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path
) -> None:
    guard = script(
        tmp_path / "secrets.sh",
        "#!/bin/bash\nif grep -q 'sk-live' ; then echo 'the prompt holds a key' >&2; exit 2; fi\n",
    )
    user_hooks(hook_table("UserPromptSubmit", str(guard)))
    proc, result = run_json(workspace, server, "deploy with sk-live-123")
    assert proc.returncode == 1
    assert result["terminal_reason"] == "hook_stopped" and result["task_state"] == "failed"
    assert result["subtype"] == "error_hook_stopped"
    assert "the prompt holds a key" in result["error"]
    assert result["hook_blocks"][0]["event"] == "UserPromptSubmit"
    assert server.requests == []  # nothing reached the model
    conn = sqlite3.connect(data_home() / "journal.sqlite3")
    assert conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 0
    assert conn.execute("SELECT state, reason FROM tasks").fetchall() == [
        ("failed", "hook_stopped")
    ]


def test_json_block_and_continue_false_on_a_prompt(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path
) -> None:
    block = python_hook(
        tmp_path / "block.py", "print(json.dumps({'decision': 'block', 'reason': 'not today'}))\n"
    )
    user_hooks(hook_table("UserPromptSubmit", str(block)))
    proc, result = run_json(workspace, server, "work")
    assert proc.returncode == 1 and "not today" in result["error"]
    stop = python_hook(
        tmp_path / "stop.py",
        "print(json.dumps({'continue': False, 'stopReason': 'out of office'}))\n",
    )
    user_hooks(hook_table("UserPromptSubmit", str(stop)))
    proc, result = run_json(workspace, server, "work")
    assert proc.returncode == 1 and "out of office" in result["error"]
    assert server.requests == []


def test_stop_sends_the_model_back_before_the_checks_run(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "stop.jsonl"
    # Not done until done.txt exists; the check then passes.
    stop = logging_hook(
        tmp_path / "stop.py",
        log,
        "if not os.path.exists('done.txt'):\n"
        "    print('done.txt is still missing', file=sys.stderr)\n"
        "    sys.exit(2)\n",
    )
    user_hooks(hook_table("Stop", str(stop)))
    server.push(
        stream_message([text("All done!")]),
        stream_message([tool_use("shell", {"command": "touch done.txt"}, id="s1")]),
        stream_message([text("Now really done.")]),
    )
    proc, result = run_json(
        workspace,
        server,
        "make done.txt",
        "--permission-mode",
        "auto",
        "--accept",
        "test -f done.txt",
    )
    assert proc.returncode == 0, proc.stderr
    assert result["task_state"] == "succeeded"
    [check] = result["acceptance"]
    assert check["passed"] and check["round"] == 0  # the check ran once, after the Stop hook
    assert result["repair_rounds"] == 0
    told = server.requests[1].body["messages"][-1]["content"][0]["text"]
    assert "done.txt is still missing" in told
    assert [(s["stop_hook_active"], s["last_assistant_message"]) for s in records(log)] == [
        (False, "All done!"),
        (True, "Now really done."),
    ]


def test_stop_continues_at_most_8_times_in_a_row(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "stop.jsonl"
    never = logging_hook(
        tmp_path / "never.py",
        log,
        "print(json.dumps({'decision': 'block', 'reason': 'keep going'}))\n",
    )
    user_hooks(hook_table("Stop", str(never)))
    server.push(*(stream_message([text(f"answer {n}")]) for n in range(9)))
    proc, result = run_json(workspace, server, "go")
    assert proc.returncode == 0, proc.stderr
    assert result["task_state"] == "unverified" and result["final_text"] == "answer 8"
    assert len(server.requests) == 9  # the first answer and 8 continuations
    assert len(records(log)) == 9
    assert "sent the model back 8 times in a row" in proc.stderr


def test_stop_continue_false_fails_the_task(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path
) -> None:
    stop = python_hook(
        tmp_path / "stop.py",
        "print(json.dumps({'continue': False, 'stopReason': 'the build is red'}))\n",
    )
    user_hooks(hook_table("Stop", str(stop)))
    server.push(stream_message([text("done")]))
    proc, result = run_json(workspace, server, "go", "--accept", "true")
    assert proc.returncode == 1
    assert result["terminal_reason"] == "hook_stopped" and "the build is red" in result["error"]
    assert result["acceptance"] == []  # no check ran


def test_every_run_is_journaled_and_streamed(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path
) -> None:
    allow = python_hook(
        tmp_path / "allow.py",
        "print(json.dumps({'hookSpecificOutput': {'permissionDecision': 'allow'}}))\n",
    )
    deny = script(tmp_path / "deny.sh", "#!/bin/bash\necho 'denied by policy' >&2\nexit 2\n")
    user_hooks(
        hook_table("PreToolUse", str(allow), matcher="read_file"),
        hook_table("PreToolUse", str(deny), matcher="shell"),
    )
    (workspace / "a.txt").write_text("a\n")
    server.push(
        stream_message(
            [
                tool_use("read_file", {"path": "a.txt"}, id="r1"),
                tool_use("shell", {"command": "echo hi"}, id="s1"),
            ]
        ),
        stream_message([text("ok")]),
    )
    proc = cli("run", "go", "--output-format", "stream-json", server=server, cwd=workspace)
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    started = [e for e in events if e["type"] == "hook_started"]
    finished = [e for e in events if e["type"] == "hook_finished"]
    assert [(e["command"], e["tool_use_id"]) for e in started] == [
        (str(allow), "r1"),
        (str(deny), "s1"),
    ]
    assert [(e["decision"], e["blocked"], e["exit_code"]) for e in finished] == [
        ("allow", False, 0),
        ("deny", True, 2),
    ]
    assert finished[1]["reason"] == "denied by policy" and finished[1]["source"] == "user"
    assert events[-1]["hook_blocks"][0]["hook"] == str(deny)
    conn = sqlite3.connect(data_home() / "journal.sqlite3")
    rows = conn.execute(
        "SELECT event, source, command, exit_code, decision, tool_use_id, task_id IS NOT NULL "
        "FROM hook_runs ORDER BY id"
    ).fetchall()
    assert rows == [
        ("PreToolUse", "user", str(allow), 0, "allow", "r1", 1),
        ("PreToolUse", "user", str(deny), 2, "deny", "s1", 1),
    ]


def test_text_mode_prints_one_line_per_blocking_hook(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path
) -> None:
    deny = script(tmp_path / "deny.sh", "#!/bin/bash\necho 'no shell today' >&2\nexit 2\n")
    quiet = script(tmp_path / "quiet.sh", "#!/bin/bash\nexit 0\n")
    user_hooks(hook_table("PreToolUse", str(deny)), hook_table("PostToolUse", str(quiet)))
    server.push(
        stream_message(
            [
                tool_use("shell", {"command": "echo 1"}, id="s1"),
                tool_use("shell", {"command": "echo 2"}, id="s2"),
            ]
        ),
        stream_message([text("ok")]),
    )
    proc = cli("run", "go", server=server, cwd=workspace)
    lines = [line for line in proc.stderr.splitlines() if "by hook" in line]
    assert lines == [f"blocked by hook PreToolUse `{deny}` (user): no shell today"] * 2


def test_the_transcript_is_the_session_so_far_as_jsonl(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "stop.jsonl"
    copy = tmp_path / "transcript-copy.jsonl"
    stop = logging_hook(
        tmp_path / "stop.py",
        log,
        f"import shutil\nshutil.copy(data['transcript_path'], {str(copy)!r})\n",
    )
    user_hooks(hook_table("Stop", str(stop)))
    (workspace / "a.txt").write_text("a\n")
    server.push(
        stream_message([tool_use("read_file", {"path": "a.txt"}, id="r1")]),
        stream_message([text("it holds a")]),
    )
    _proc, result = run_json(workspace, server, "what is in a.txt")
    [seen] = records(log)
    path = Path(seen["transcript_path"])
    assert path.parent == data_home() / "sessions" / result["session_id"]
    lines = [json.loads(line) for line in copy.read_text().splitlines()]
    assert [line["type"] for line in lines] == ["user", "assistant", "user", "assistant"]
    assert lines[0]["message"]["content"][0]["text"] == "what is in a.txt"
    assert lines[-1]["message"]["content"][0]["text"] == "it holds a"
    assert {line["session_id"] for line in lines} == {result["session_id"]}
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_a_hook_printing_a_megabyte_is_capped_for_the_model(
    server: FakeMessagesServer, workspace: Path, tmp_path: Path
) -> None:
    big = python_hook(tmp_path / "big.py", "print('x' * 1_000_000)\n")
    user_hooks(hook_table("UserPromptSubmit", str(big)))
    server.push(stream_message([text("ok")]))
    proc, _result = run_json(workspace, server, "go")
    assert proc.returncode == 0, proc.stderr
    context = sent_prompt(server)[1]
    assert len(context) < 11_000
    assert "output truncated" in context and "of 1000000 characters" in context
    spilled = Path(context.split("Full output saved to ")[1].split(";")[0])
    assert spilled.read_text() == "x" * 1_000_000
