"""Long sessions end to end, in-process against the fake servers that speak the real wire
protocols: a task reads file after file far past the model's window, on Anthropic's Messages
API (the strict fake: thinking blocks bound to their transcript, tool blocks only with tools)
and on an OpenAI-compatible server with a 32k window. Every request after a compaction holds
the summary and the pinned items and nothing from before the compaction point; a resumed
session goes on from the compacted view; `sessions show`/`export` keep every message."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentcli.compaction_record import SUMMARY_HEADER
from agentcli.context.handoff import HANDOFF_SYSTEM
from agentcli.session.records import export
from agentcli.store.db import connect
from agentcli.store.queries import load_compactions, load_messages
from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text, thinking, tool_use
from agentcli.testing.fake_openai import FakeChatServer, call, chat_stream
from agentcli.testing.fake_responses import RecordedRequest
from tests.inprocess import decoded, run_in_process

TASK = "read f0.txt, f1.txt, ... in turn, one a turn, then say done"
SUMMARY = "SUMMARY: reading the files in order; the last one read is named in the recent turns."
FILE_CHARS = 6_000


def files(workspace: Path, count: int) -> None:
    for n in range(count):
        (workspace / f"f{n}.txt").write_text(f"line {n}\n" * (FILE_CHARS // 8))


def size_of(body: dict[str, Any]) -> int:
    """What the fake servers report as a request's prompt: 4 characters a token."""
    return len(json.dumps(body)) // 4


class Script:
    """Reads f0.txt … f{turns-1}.txt, one per turn, then answers `done`; answers summary
    requests with SUMMARY. Builds the response in the server's own protocol."""

    def __init__(self, turns: int, answer: Callable[[str, list[dict[str, Any]], int], Any]):
        self.turns = turns
        self.answer = answer
        self.done = 0
        self.work: list[RecordedRequest] = []
        self.summaries: list[RecordedRequest] = []
        self.order: list[tuple[str, RecordedRequest]] = []
        """Every request, in the order it came, with its kind (`work` or `summary`)."""

    def __call__(self, request: RecordedRequest) -> Any:
        body = request.body
        if _is_summary(body):
            self.summaries.append(request)
            self.order.append(("summary", request))
            return self.answer(SUMMARY, [], size_of(body))
        self.work.append(request)
        self.order.append(("work", request))
        if self.done >= self.turns:
            return self.answer("done", [], size_of(body))
        path = f"f{self.done}.txt"
        self.done += 1
        return self.answer(f"reading {path}", [{"path": path}], size_of(body))


def _is_summary(body: dict[str, Any]) -> bool:
    system = body.get("system")
    if isinstance(system, list):  # Messages API
        return system[0]["text"] == HANDOFF_SYSTEM
    return body["messages"][0] == {"role": "system", "content": HANDOFF_SYSTEM}


def anthropic_answer(said: str, reads: list[dict[str, Any]], prompt: int) -> Any:
    usage = {"input_tokens": prompt, "output_tokens": 30}
    blocks = [thinking(f"thinking before: {said}"), text(said)]
    blocks += [tool_use("read_file", given) for given in reads]
    return stream_message(blocks, usage=usage, model="claude-opus-5-5")


def openai_answer(said: str, reads: list[dict[str, Any]], prompt: int) -> Any:
    usage = {"prompt_tokens": prompt, "completion_tokens": 30, "total_tokens": prompt + 30}
    return chat_stream(said, [call("read_file", given) for given in reads], usage=usage)


def run(workspace: Path, env: dict[str, str], *args: str) -> Any:
    return decoded(run_in_process("run", "-C", str(workspace), *args, cwd=workspace, env=env))


def ids_of(messages: list[Any], kind: str) -> set[str]:
    found = set()
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_use" and kind == "use":
                found.add(block["id"])
            if block.get("type") == "tool_result" and kind == "result":
                found.add(block["tool_use_id"])
        for entry in message.get("tool_calls") or [] if isinstance(message, dict) else []:
            found.add(entry["id"])
        if isinstance(message, dict) and message.get("role") == "tool":
            found.add(message["tool_call_id"])
    return found


def check_every_request_after_a_compaction(
    session_id: str, script: Script, first_sent: Callable[[dict[str, Any]], str]
) -> int:
    """Each work request after the k-th summary request opens with the k-th compaction's
    summary and pinned task, and sends no tool call or result from before its point. Returns
    how many requests were checked."""
    conn = connect()
    history = [m.to_wire() for m in load_messages(conn, session_id)]
    compactions = load_compactions(conn, session_id)
    assert len(compactions) == len(script.summaries) >= 2
    k, checked = -1, 0
    for kind, request in script.order:
        if kind == "summary":
            k += 1
            # No tool blocks, no tools: the conversation goes as a transcript.
            assert "tools" not in request.body
            continue
        if k < 0:
            continue
        record = compactions[k]
        opening = first_sent(request.body)
        assert opening.startswith(SUMMARY_HEADER)
        assert f"<summary>\n{SUMMARY}\n</summary>" in opening
        assert (
            f'<pinned kind="task" title="The current task, as the user gave it">\n{TASK}' in opening
        )
        older = ids_of(history[: record.point], "use")
        sent = request.body["messages"]
        assert not older & (ids_of(sent, "use") | ids_of(sent, "result"))
        checked += 1
    return checked


def test_anthropic_a_long_session_survives_far_past_the_window(workspace: Path) -> None:
    window, turns = 30_000, 60
    files(workspace, turns)
    (workspace / ".agentcli").mkdir()
    (workspace / ".agentcli" / "config.toml").write_text(
        f"[context]\nwindow_tokens = {window}\nelide_at = 0.95\nkeep_recent = 2\n"
    )
    script = Script(turns, anthropic_answer)
    with FakeMessagesServer() as server:
        server.responder = script
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test"}
        done = run(workspace, env, TASK, "--permission-mode", "yolo", "--output-format", "json")
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert server.pairing_problems() == []
    assert result["final_text"] == "done"
    assert result["compactions"] == len(script.summaries) >= 2
    session = result["session_id"]
    history = load_messages(connect(), session)
    # Sent whole, the history would be several windows long; no request came near the window.
    assert size_of({"messages": [m.to_wire() for m in history]}) > 3 * window
    assert max(size_of(r.body) for r in script.work) < window
    checked = check_every_request_after_a_compaction(
        session,
        script,
        lambda body: "\n\n".join(b["text"] for b in body["messages"][0]["content"]),
    )
    assert checked >= 20
    # The journal keeps everything; show and export mark the compactions.
    exported = export(session)
    assert len(exported["messages"]) == len(history)
    assert [c["point"] for c in exported["compactions"]] == [
        c.point for c in load_compactions(connect(), session)
    ]
    shown = decoded(run_in_process("sessions", "show", session, cwd=workspace))
    assert shown.stdout.count("-- compacted (auto") == result["compactions"]
    assert shown.stdout.count("-> read_file") == turns


def test_anthropic_resume_goes_on_from_the_compacted_view(workspace: Path) -> None:
    window, turns = 30_000, 30
    files(workspace, turns)
    (workspace / ".agentcli").mkdir()
    (workspace / ".agentcli" / "config.toml").write_text(
        f"[context]\nwindow_tokens = {window}\nelide_at = 0.95\nkeep_recent = 2\n"
    )
    script = Script(turns, anthropic_answer)
    with FakeMessagesServer() as server:
        server.responder = script
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test"}
        done = run(workspace, env, TASK, "--permission-mode", "yolo", "--output-format", "json")
        assert done.returncode == 0, done.stderr
        session = json.loads(done.stdout)["session_id"]
        last = script.work[-1].body["messages"]
        server.responder = None
        server.push(stream_message([text("I read them all")], model="claude-opus-5-5"))
        again = run(workspace, env, "--resume", session, "what did you do?")
        assert again.returncode == 0, again.stderr
        assert again.stdout == "I read them all\n"
        resumed = server.requests[-1].body["messages"]
    # The same summary message, then the same recent turns (the final answer and the new
    # prompt after them); nothing from before the point.
    assert resumed[0] == last[0]
    assert resumed[0]["content"][0]["text"].startswith(SUMMARY_HEADER)
    assert [m["role"] for m in resumed[-2:]] == ["assistant", "user"]
    assert resumed[-1]["content"][-1]["text"] == "what did you do?"
    assert ids_of(resumed, "use") <= ids_of(last, "use")
    point = load_compactions(connect(), session)[-1].point
    older = ids_of([m.to_wire() for m in load_messages(connect(), session)[:point]], "use")
    assert not older & ids_of(resumed, "use")


@pytest.fixture
def local_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A local model with a 32k window, described in the user's own config."""
    config = Path(__import__("os").environ["AGENTCLI_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text(
        '[models."local-coder"]\ncontext_window = 32000\ninput = 0\noutput = 0\n'
        "[context]\nelide_at = 0.95\nkeep_recent = 2\n"
    )
    return config


def test_openai_a_32k_local_model_survives_far_past_its_window(
    workspace: Path, local_model: Path
) -> None:
    window, turns = 32_000, 60
    files(workspace, turns)
    script = Script(turns, openai_answer)
    with FakeChatServer() as server:
        server.responder = script
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test"}
        done = run(
            workspace,
            env,
            TASK,
            *("--provider", "openai", "-m", "local-coder", "--permission-mode", "yolo"),
            "--output-format",
            "json",
        )
        assert done.returncode == 0, done.stderr
        assert server.pairing_problems() == []
    result = json.loads(done.stdout)
    assert result["final_text"] == "done"
    assert result["compactions"] >= 2
    assert result["cost_usd"] == 0.0
    history = load_messages(connect(), result["session_id"])
    assert size_of({"messages": [m.to_wire() for m in history]}) > 3 * window
    assert max(size_of(r.body) for r in script.work) < window
    # Chat Completions: the system prompt first, then the summary as the first user message.
    checked = check_every_request_after_a_compaction(
        result["session_id"], script, lambda body: body["messages"][1]["content"]
    )
    assert checked >= 20
    for request in script.summaries:
        assert "tools" not in request.body
        assert [m["role"] for m in request.body["messages"]] == ["system", "user"]


def test_a_compaction_rereads_the_instruction_files(workspace: Path) -> None:
    window, turns = 30_000, 25
    files(workspace, turns)
    (workspace / "AGENTS.md").write_text("Indent with tabs.\n")
    (workspace / ".agentcli").mkdir()
    (workspace / ".agentcli" / "config.toml").write_text(
        f"[context]\nwindow_tokens = {window}\nelide_at = 0.95\nkeep_recent = 2\n"
    )
    script = Script(turns, anthropic_answer)

    def edit_after_the_third(request: RecordedRequest) -> Any:
        if len(script.work) == 3:
            (workspace / "AGENTS.md").write_text("Indent with spaces.\n")
        return script(request)

    with FakeMessagesServer() as server:
        server.responder = edit_after_the_third
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test"}
        done = run(workspace, env, TASK, "--permission-mode", "yolo", "--output-format", "json")
        assert done.returncode == 0, done.stderr
    systems = [r.body["system"][0]["text"] for kind, r in script.order if kind == "work"]
    first = next(n for n, (kind, _r) in enumerate(script.order) if kind == "summary")
    before = systems[:first]
    after = systems[first:]
    assert before and after
    assert all("Indent with tabs." in s for s in before)
    assert all("Indent with spaces." in s and "tabs" not in s for s in after)
