"""`agentcli run --accept` decides success from evidence, never from the claim (in-process, and
the exit code of a permission stop from the real binary)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text, tool_use
from tests.test_cli_run import agentcli, cli, result_of

CHECK = "python3 -c 'import calc; assert calc.add(2, 3) == 5, calc.add(2, 3)'"
BROKEN = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"


@pytest.fixture
def server() -> Iterator[FakeMessagesServer]:
    with FakeMessagesServer() as fake:
        yield fake
        assert fake.pairing_problems() == []


@pytest.fixture
def repo(workspace: Path) -> Path:
    for args in (["init", "-q"], ["config", "user.email", "t@e"], ["config", "user.name", "t"]):
        subprocess.run(["git", *args], cwd=workspace, check=True)
    (workspace / "calc.py").write_text(BROKEN)
    subprocess.run(["git", "add", "."], cwd=workspace, check=True)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=workspace, check=True)
    return workspace


def all_request_text(server: FakeMessagesServer) -> list[str]:
    texts = []
    for request in server.requests:
        last = request.body["messages"][-1]
        texts.append(" ".join(str(b.get("text", b.get("content", ""))) for b in last["content"]))
    return texts


def test_false_fixed_claim_ends_failed_with_evidence_shown(
    server: FakeMessagesServer, repo: Path
) -> None:
    server.push(*[stream_message([text("Fixed it, all tests pass.")]) for _ in range(3)])
    proc = cli(
        "run",
        "fix add",
        "--accept",
        CHECK,
        "--accept-retries",
        "2",
        "--output-format",
        "json",
        server=server,
        cwd=repo,
    )
    assert proc.returncode == 1, proc.stderr
    data = result_of(proc)
    assert data["task_state"] == "failed" and data["terminal_reason"] == "completed"
    assert "exited 1" in data["error"]
    last = data["acceptance"][-1]
    assert last["passed"] is False and last["exit_code"] == 1
    assert "AssertionError: -1" in last["output_tail"]
    assert last["artifact_version"] == data["artifact_version"]
    shown = all_request_text(server)[1:]
    assert len(shown) == 2 and all("AssertionError: -1" in t for t in shown)
    # One run, then its evidence reused: the model changed nothing in between.
    assert [(c["round"], c["reused"]) for c in data["acceptance"]] == [(0, 0), (1, 1), (2, 1)]
    assert data["repair_rounds"] == 2 and data["subtype"] == "error_acceptance_failed"
    assert "repair round 1 of 2" in proc.stderr and "repair round 2 of 2" in proc.stderr
    assert "nothing changed since" in proc.stderr


def test_quiet_text_mode_still_says_the_task_failed(server: FakeMessagesServer, repo: Path) -> None:
    server.push(*[stream_message([text("All tests pass.")]) for _ in range(2)])
    proc = cli(
        "run",
        "fix add",
        "--accept",
        CHECK,
        "--accept-retries",
        "1",
        "-q",
        server=server,
        cwd=repo,
    )
    assert proc.returncode == 1
    assert proc.stdout == "All tests pass.\n"  # the model's claim, and only that, on stdout
    assert proc.stderr.startswith("agentcli: task failed: acceptance failed after 1 repair")
    assert len(proc.stderr.strip().splitlines()) == 1


def test_fix_after_failed_check_succeeds_on_the_final_version(
    server: FakeMessagesServer, repo: Path
) -> None:
    server.push(
        stream_message([text("Done.")]),
        stream_message([tool_use("read_file", {"path": "calc.py"})]),
        stream_message([tool_use("write_file", {"path": "calc.py", "content": FIXED})]),
        stream_message([text("Fixed for real.")]),
    )
    proc = cli(
        "run",
        "fix add",
        "--accept",
        CHECK,
        "--permission-mode",
        "accept-edits",
        "--output-format",
        "json",
        server=server,
        cwd=repo,
    )
    assert proc.returncode == 0, proc.stderr
    data = result_of(proc)
    assert data["task_state"] == "succeeded"
    failed, check = data["acceptance"]
    assert (failed["round"], failed["passed"], check["round"], check["reused"]) == (0, 0, 1, 0)
    assert check["passed"] and check["artifact_version"] == data["artifact_version"]
    assert data["repair_rounds"] == 1
    assert data["changed_files"] == ["calc.py"]
    assert (repo / "calc.py").read_text() == FIXED


def test_repeated_identical_failing_call_ends_no_progress_after_one_nudge(
    server: FakeMessagesServer, workspace: Path
) -> None:
    server.push(
        *[stream_message([tool_use("read_file", {"path": "missing.py"})]) for _ in range(4)]
    )
    proc = cli("run", "read it", "--output-format", "json", server=server, cwd=workspace)
    assert proc.returncode == 1, proc.stderr
    data = result_of(proc)
    assert data["terminal_reason"] == "no_progress"
    nudges = [t for t in all_request_text(server) if "convergence guard" in t]
    assert len(nudges) == 1 and "missing.py" in nudges[0]


def test_hanging_acceptance_check_is_killed_by_its_timeout(
    server: FakeMessagesServer, workspace: Path
) -> None:
    (workspace / ".agentcli").mkdir()
    # Half a second: the check never ends by itself, so its timeout is all this test waits.
    (workspace / ".agentcli" / "config.toml").write_text("[acceptance]\ntimeout_s = 0.5\n")
    server.push(stream_message([text("done")]))
    proc = cli(
        "run",
        "x",
        "--accept",
        "sleep 30",
        "--accept-retries",
        "0",
        "--output-format",
        "json",
        server=server,
        cwd=workspace,
    )
    assert proc.returncode == 1, proc.stderr
    (check,) = result_of(proc)["acceptance"]
    assert check["exit_code"] is None and check["passed"] is False


def test_denied_writes_stop_with_exit_4_and_name_the_rule(
    server: FakeMessagesServer, workspace: Path
) -> None:
    server.push(
        *[
            stream_message([tool_use("write_file", {"path": f"src/f{n}.py", "content": "x"})])
            for n in range(3)
        ]
    )
    proc = agentcli("run", "write", "--output-format", "json", server=server, cwd=workspace)
    assert proc.returncode == 4, proc.stderr
    data = result_of(proc)
    assert data["terminal_reason"] == "permission_denied"
    assert len(data["permission_denials"]) == 3
    assert not (workspace / "src").exists()
    first_result = server.requests[1].body["messages"][-1]["content"][0]["content"]
    assert "--allow 'write(src/**)'" in first_result


def test_denied_writes_then_done_is_not_a_success(
    server: FakeMessagesServer, workspace: Path
) -> None:
    """The model's writes are denied (no terminal to ask), then it says it is done: the
    workspace is unchanged, so the task did not do what it set out to do."""
    server.push(
        stream_message([tool_use("write_file", {"path": "notes.md", "content": "x"})]),
        stream_message([text("Done: wrote notes.md.")]),
    )
    proc = cli("run", "write notes", "--output-format", "json", server=server, cwd=workspace)
    assert proc.returncode == 4, proc.stderr
    data = result_of(proc)
    assert (data["task_state"], data["terminal_reason"]) == ("failed", "permission_denied")
    assert data["subtype"] == "error_permission_denied" and data["is_error"] is True
    assert data["final_text"] == "Done: wrote notes.md."  # the claim is kept, and not believed
    assert [d["tool"] for d in data["permission_denials"]] == ["write_file"]
    assert data["error"].startswith("the task changed nothing and 1 call was denied")


def test_a_denial_that_did_not_stop_the_work_is_not_a_failure(
    server: FakeMessagesServer, workspace: Path
) -> None:
    """One denied call, but the task changed the workspace by another route: still done."""
    server.push(
        stream_message([tool_use("shell", {"command": "curl -s https://example.com"})]),
        stream_message([tool_use("write_file", {"path": "notes.md", "content": "x"})]),
        stream_message([text("Wrote notes.md without the download.")]),
    )
    proc = cli(
        "run",
        "write notes",
        "--permission-mode",
        "accept-edits",
        "--output-format",
        "json",
        server=server,
        cwd=workspace,
    )
    data = result_of(proc)
    assert proc.returncode == 0, data
    assert data["task_state"] == "unverified" and data["changed_files"] == ["notes.md"]
    assert len(data["permission_denials"]) == 1
